import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from periapical_lesions.scoring import bootstrap_ci, iou, match, score

FIXTURES = Path(__file__).parent / "fixtures"


def lesion(box: list[float], pai: int) -> dict:
    return {"box": box, "pai": pai}


def test_published_rewards_reproduce() -> None:
    records = [json.loads(line) for line in (FIXTURES / "published_scores.jsonl").open()]
    assert len(records) == 225
    for record in records:
        result = score(record["reference"], record["report"])
        assert abs(result.reward - record["reward"]) <= 1e-12, record["film"]


def test_maximum_cardinality_beats_greedy_highest_iou_first() -> None:
    left, right = lesion([0.0, 0.0, 0.4, 0.4], 3), lesion([0.3, 0.0, 0.7, 0.4], 4)
    wide, small = lesion([0.1, 0.0, 0.5, 0.4], 4), lesion([0.0, 0.0, 0.2, 0.3], 3)
    # Greedy would take the best pair (wide, left) first and strand `small`, whose only
    # partner is `left`: one match, wrong grade, reward 0.25.
    assert iou(wide["box"], left["box"]) > iou(small["box"], left["box"]) >= 0.3
    assert iou(wide["box"], right["box"]) >= 0.3 > iou(small["box"], right["box"])
    result = score([left, right], {"lesions": [wide, small]})
    assert (result.matched, result.lesion_f1, result.pai_f1, result.reward) == (2, 1.0, 1.0, 1.0)


def test_among_maximum_matchings_grade_agreement_wins() -> None:
    first, second = [0.0, 0.0, 0.4, 0.4], [0.05, 0.0, 0.45, 0.4]
    reference = [lesion(first, 3), lesion(second, 4)]
    report = {"lesions": [lesion(first, 4), lesion(second, 3)]}
    assert iou(first, second) >= 0.3
    result = score(reference, report)
    assert (result.matched, result.pai_f1, result.reward) == (2, 1.0, 1.0)


def test_iou_threshold_is_inclusive_and_exact() -> None:
    reference = [lesion([0.0, 0.0, 1.0, 1.0], 3)]
    at_threshold, just_below = [0.0, 0.0, 0.3, 1.0], [0.0, 0.0, 0.2999, 1.0]
    assert iou(at_threshold, reference[0]["box"]) == 0.3
    assert score(reference, {"lesions": [lesion(at_threshold, 3)]}).matched == 1
    assert score(reference, {"lesions": [lesion(just_below, 3)]}).matched == 0


def test_partial_credit_follows_f1() -> None:
    reference = [lesion([0.1, 0.1, 0.2, 0.2], 3), lesion([0.6, 0.6, 0.7, 0.7], 5)]
    report = {"lesions": [lesion([0.1, 0.1, 0.2, 0.2], 4), lesion([0.8, 0.1, 0.9, 0.2], 3)]}
    result = score(reference, report)
    assert (result.n_reported, result.n_reference, result.matched) == (2, 2, 1)
    assert result.lesion_f1 == 0.5 and result.pai_f1 == 0.0 and result.reward == 0.25


def test_lesion_free_film() -> None:
    assert score([], {"lesions": []}).reward == 1.0
    assert score([], None).reward == 1.0
    found = score([], {"lesions": [lesion([0.1, 0.1, 0.2, 0.2], 3)]})
    assert (found.reward, found.lesion_f1, found.pai_f1) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    "report",
    [
        None,
        {"lesions": [lesion([0.1, 0.1, 0.2, 0.2], 2)]},
        {"lesions": [lesion([0.2, 0.1, 0.1, 0.2], 3)]},
        {"findings": []},
        ["not", "an", "object"],
    ],
)
def test_missing_or_invalid_report_counts_as_no_findings(report: object) -> None:
    reference = [lesion([0.1, 0.1, 0.2, 0.2], 3)]
    result = score(reference, report)  # type: ignore[arg-type]
    assert not result.report_valid
    assert (result.n_reported, result.matched, result.reward) == (0, 0, 0.0)
    assert score([], report).reward == 1.0  # type: ignore[arg-type]


def test_whole_float_grade_counts_as_that_grade() -> None:
    reference = [lesion([0.1, 0.1, 0.2, 0.2], 4)]
    result = score(reference, {"lesions": [lesion([0.1, 0.1, 0.2, 0.2], 4.0)]})  # type: ignore[arg-type]
    assert result.report_valid and result.reward == 1.0


def test_bootstrap_interval() -> None:
    values = [0.0, 0.25, 1.0, 1.0, 0.5, 0.0, 1.0, 0.75]
    interval = bootstrap_ci(values, seed=3, n=2000)
    assert interval == bootstrap_ci(values, seed=3, n=2000)
    assert interval.mean == pytest.approx(sum(values) / len(values))
    assert 0.0 <= interval.low < interval.mean < interval.high <= 1.0
    constant = bootstrap_ci([1.0] * 5)
    assert (constant.mean, constant.low, constant.high) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_ci([])


def best_by_enumeration(reported: list[dict], reference: list[dict]) -> tuple[int, int]:
    """(pairs, grade agreements) of the best one-to-one matching, by trying every injective
    assignment of reported boxes to reference boxes or to nothing."""
    best = (0, 0)

    def extend(i: int, used: frozenset, pairs: int, agreed: int) -> None:
        nonlocal best
        if i == len(reported):
            best = max(best, (pairs, agreed))
            return
        extend(i + 1, used, pairs, agreed)
        for j, truth in enumerate(reference):
            if j not in used and iou(reported[i]["box"], truth["box"]) >= 0.3:
                same = int(reported[i]["pai"] == truth["pai"])
                extend(i + 1, used | {j}, pairs + 1, agreed + same)

    extend(0, frozenset(), 0, 0)
    return best


def test_matching_is_the_lexicographic_optimum_on_random_films() -> None:
    """Against brute force on crowded little films, where greedy and optimal often differ."""
    rng = random.Random(7)

    def box() -> list[float]:
        x, y = rng.uniform(0, 0.3), rng.uniform(0, 0.3)
        return [x, y, x + rng.uniform(0.1, 0.3), y + rng.uniform(0.1, 0.3)]

    for _ in range(300):
        reference = [lesion(box(), rng.choice((3, 4, 5))) for _ in range(rng.randint(0, 5))]
        reported = [lesion(box(), rng.choice((3, 4, 5))) for _ in range(rng.randint(0, 6))]
        pairs = match(reported, reference)
        agreed = sum(reported[i]["pai"] == reference[j]["pai"] for i, j in pairs)
        assert len({i for i, _ in pairs}) == len({j for _, j in pairs}) == len(pairs)
        assert all(iou(reported[i]["box"], reference[j]["box"]) >= 0.3 for i, j in pairs)
        assert (len(pairs), agreed) == best_by_enumeration(reported, reference)


def test_importing_the_scorer_imports_no_agent_stack() -> None:
    """The curation toolkit imports the scorer; it must not pull verifiers, scipy or the
    dataset readers with it."""
    code = (
        "import sys\n"
        "from periapical_lesions.scoring import Interval, bootstrap_ci, score\n"
        "heavy = {'verifiers', 'scipy', 'pyarrow', 'huggingface_hub', 'pydantic', 'openai'}\n"
        "print(sorted(heavy & {name.split('.')[0] for name in sys.modules}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
