"""The referral checks of the audit: hint terms in the text, and whether any referral field
is associated with the labels (a seeded permutation test per field and label, Bonferroni over
the tests run). A referral drawn without looking at the film passes both."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from curation.core.parallel import ordered_map

if TYPE_CHECKING:
    from curation.leaks.target import Film

ALPHA = 0.01
PERMUTATION_CELLS = 2_000_000  # permuted label values held at once


@dataclass(frozen=True)
class HintHit:
    """One hint term found in a text field of the referral of film ``film`` (an index)."""

    film: int
    field: str
    category: str
    match: str


@dataclass(frozen=True)
class Association:
    """One permutation test of a referral field against a label, with its
    Bonferroni-adjusted p-value."""

    field: str
    label: str
    statistic: str
    observed: float
    p_value: float
    p_adjusted: float
    films: int

    @property
    def flagged(self) -> bool:
        """Whether the field is associated with the label after the adjustment."""
        return self.p_adjusted < ALPHA


# --- referral hints -----------------------------------------------------------------------

_FDI_TOOTH = r"(?:[1-4][1-8]|[5-8][1-5])"
_WORDS = {
    "tooth": r"tooth|teeth|molars?|premolars?|bicuspids?|incisors?|canines?|cuspids?|wisdom",
    "side": (
        r"left|right|upper|lower|quadrants?|maxilla|maxillary|mandible|mandibular|anterior"
        r"|posterior|bilateral|unilateral|buccal|lingual|palatal|mesial|distal|Q[1-4]"
    ),
    "symptom": (
        r"pain|painful|aches?|aching|toothache|swelling|swollen|abscess(?:es)?|sinus(?:es)?"
        r"|fistulae?|fistulas|tender(?:ness)?|sensitive|sensitivity|percussion|mobility|mobile"
        r"|pus|discharge|fever|throbbing|infection|infected"
    ),
    "grade": r"PAI|grades?|graded|scores?|scored|stages?|severity|severe|mild|moderate",
    "finding": (
        r"periapical|apical|lesions?|radiolucen(?:cy|cies|t)|radiopa(?:que|city)|granulomas?"
        r"|cysts?|periodontitis|necrosis|necrotic|pulpitis|caries|carious|root canal"
        r"|endodontic|resorption|widened|widening|pathology|pathological|abnormal(?:ity)?"
    ),
}
# The one vocabulary of hints (by category): the audit searches every referral field with it,
# and the toolkit's tests search the referral generator's slips (tests/publish/test_referrals.py).
REFERRAL_HINTS: dict[str, re.Pattern[str]] = {
    category: re.compile(rf"\b(?:{words})\b", re.IGNORECASE) for category, words in _WORDS.items()
}
# Tooth numbers: "#19", "tooth 36", "FDI 36", or a bare FDI number that is not an age.
REFERRAL_HINTS["tooth number"] = re.compile(
    rf"#\s?\d{{1,2}}\b|\b(?:tooth|teeth|fdi|uns)\s*(?:no\.?|number)?\s*#?\d{{1,2}}\b"
    rf"|(?<!age: )(?<!age )(?<!aged )\b{_FDI_TOOTH}\b(?!\s*(?:years|yrs|y/?o|-year))",
    re.IGNORECASE,
)


def hints_in(text: str) -> list[tuple[str, str]]:
    """Every hint term in ``text``: (category, the words matched), category by category."""
    return [
        (category, match.group(0))
        for category, pattern in REFERRAL_HINTS.items()
        for match in pattern.finditer(text)
    ]


def find_hints(films: list[Film]) -> list[HintHit]:
    """Every hint term in every text field of every referral."""
    hits: list[HintHit] = []
    for index, film in enumerate(films):
        for name, value in sorted((film.referral or {}).items()):
            if isinstance(value, str):
                hits.extend(HintHit(index, name, *hit) for hit in hints_in(value))
    return hits


# --- association between referral fields and labels ---------------------------------------


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks with ties given their average rank (as Spearman's rho needs)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + ends - 1) / 2.0)[inverse]


def _codes_of(values: list[Any]) -> np.ndarray:
    return np.unique(np.array([str(v) for v in values]), return_inverse=True)[1]


def _is_categorical(values: list[Any]) -> bool:
    """Text and yes/no values are categories; numbers are tested as numbers."""
    return any(isinstance(v, str | bool) for v in values)


def _few_distinct(values: list[Any]) -> bool:
    return len(set(values)) <= max(2, min(30, len(values) // 5))


# A statistic of the association, for the unpermuted data and each row of permutations.
Statistic = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _stat_spearman(x: np.ndarray, y: np.ndarray, perms: np.ndarray) -> np.ndarray:
    xc = average_ranks(x) - (len(x) - 1) / 2.0
    yc = average_ranks(y) - (len(y) - 1) / 2.0
    scale = np.sqrt((xc**2).sum() * (yc**2).sum())
    rho: np.ndarray = np.abs(yc[perms] @ xc) / scale
    return rho


def _stat_eta(groups: np.ndarray, y: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """Share of the variance of ``y`` between the groups (eta squared)."""
    onehot = np.eye(groups.max() + 1)[groups]
    permuted = y[perms]
    sums = permuted @ onehot
    between = (sums**2 / onehot.sum(0)).sum(1) - y.sum() ** 2 / len(y)
    eta: np.ndarray = between / ((y - y.mean()) ** 2).sum()
    return eta


def _stat_chi2(first: np.ndarray, second: np.ndarray, perms: np.ndarray) -> np.ndarray:
    rows, cols = first.max() + 1, second.max() + 1
    cells = first[None, :] * cols + second[perms] + np.arange(len(perms))[:, None] * rows * cols
    observed = np.bincount(cells.ravel(), minlength=len(perms) * rows * cols)
    observed = observed.reshape(len(perms), rows, cols)
    expected = np.outer(np.bincount(first), np.bincount(second)) / len(first)
    chi2: np.ndarray = (observed**2 / expected).sum((1, 2)) - len(first)
    return chi2


def permutation_test(
    field_values: list[Any], label_values: list[Any], permutations: int, seed: list[int]
) -> tuple[str, float, float]:
    """Statistic name, observed value and p = (k + 1) / (permutations + 1)."""
    field_cat, label_cat = _is_categorical(field_values), _is_categorical(label_values)
    stat: Statistic
    if field_cat and label_cat:
        name, stat = "chi2", _stat_chi2
        x, y = _codes_of(field_values), _codes_of(label_values)
    elif field_cat:
        name, stat = "eta2", _stat_eta
        x, y = _codes_of(field_values), np.asarray(label_values, dtype=np.float64)
    elif label_cat:
        name, stat = "eta2", _stat_eta
        x, y = _codes_of(label_values), np.asarray(field_values, dtype=np.float64)
    else:
        name, stat = "abs_spearman", _stat_spearman
        x, y = np.asarray(field_values, np.float64), np.asarray(label_values, np.float64)
    n = len(y)
    observed = float(stat(x, y, np.arange(n)[None, :])[0])
    rng = np.random.default_rng(seed)
    block = max(1, PERMUTATION_CELLS // n)
    exceed = 0
    for start in range(0, permutations, block):
        size = min(block, permutations - start)
        perms = rng.permuted(np.tile(np.arange(n), (size, 1)), axis=1)
        exceed += int((stat(x, y, perms) >= observed - 1e-9 * max(1.0, observed)).sum())
    return name, observed, (exceed + 1) / (permutations + 1)


def referral_fields(films: list[Film]) -> dict[str, list[Any]]:
    """Testable fields: categorical and numeric values as they are, long text by its length."""
    names = sorted({k for f in films for k in (f.referral or {})})
    fields: dict[str, list[Any]] = {}
    for name in names:
        values = [(f.referral or {}).get(name) for f in films]
        if any(isinstance(v, str) for v in values) and not _few_distinct(values):
            fields[f"len({name})"] = [None if v is None else len(v) for v in values]
        else:
            fields[name] = values
    return fields


def label_vectors(films: list[Film]) -> dict[str, list[Any]]:
    """Lesion count and mean grade for list labels; the label itself for scalar ones."""
    labels: dict[str, list[Any]] = {}
    if any(f.lesions is not None for f in films):
        labels["lesion_count"] = [f.lesions for f in films]
        if any(f.grades for f in films):
            labels["mean_grade"] = [
                sum(f.grades) / len(f.grades) if f.grades else None for f in films
            ]
    elif any(f.label is not None for f in films):
        labels["label"] = [f.label for f in films]
    return labels


def _test_job(job: tuple[list[Any], list[Any], int, list[int]]) -> tuple[str, float, float]:
    return permutation_test(*job)


def associations(
    films: list[Film], permutations: int, seed: int, workers: int = 0
) -> list[Association]:
    """One permutation test per (referral field, label), each with its own seed, so they run
    on every core (``workers``, 0: one per core) with the same results; Bonferroni over the
    tests run."""
    fields, labels = referral_fields(films), label_vectors(films)
    runs, jobs = [], []
    for number, (fname, fvalues) in enumerate(sorted(fields.items())):
        for lnumber, (lname, lvalues) in enumerate(sorted(labels.items())):
            kept = [
                (f, v)
                for f, v in zip(fvalues, lvalues, strict=True)
                if f is not None and v is not None
            ]
            if len({f for f, _ in kept}) < 2 or len({v for _, v in kept}) < 2:
                continue
            xs, ys = [f for f, _ in kept], [v for _, v in kept]
            jobs.append((xs, ys, permutations, [seed, number, lnumber]))
            runs.append((fname, lname, len(kept)))
    results = ordered_map(_test_job, jobs, workers, chunksize=1)
    return [
        Association(f, lab, stat, round(obs, 6), p, min(1.0, p * len(runs)), n)
        for (f, lab, n), (stat, obs, p) in zip(runs, results, strict=True)
    ]
