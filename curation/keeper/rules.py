"""Which film of a same-picture group is kept: the evidence rules, strongest first.

Every rule reads one fact of each film (``FilmFacts``, gathered by
``curation.keeper.evidence``) and gives a value, lower = more original; the film with
the
lowest values, compared rule by rule in ``KEEPER_ORDER``, is kept, and the first rule on
which a dropped film loses to the kept one is the evidence recorded for it. The order, and
why:

1. ``augmentation copy``: the film equals a film of the archive's augmentation folder made
   from another film of its group (byte for byte, or the same picture upright as its
   mirrored or turned copy). The archive itself says which is the copy.
2. ``script encoder``: its encoder signature is the one that wrote the augmentation folder
   while the other film's never occurs there (``curation.index.provenance``): learned from the
   archive's own copies, it names the writer of the file.
3. ``portrait``, ``turned``: a half or quarter turn is never kept. Portrait in a group with
   a landscape film; or turned: its hash grid correlates better with the archive's mean
   grid turned than as it is (the films' own hashes, no decode).
4. ``padded``: a border added after the exposure, read from the pair
   (``curation.keeper.frame``): the film is larger than another film of its
   group, its constant black or white border is wider than that film's on some side by
   ``PAD_MIN_SHARE``, and the picture inside it is no more than that film shows. A border of
   the film's own (many exported films carry one about 1 % wide) is shared by its re-encoded
   and re-toned copies and cut by its crops, so it names nothing.
5. ``upscaled``: more pixels but no detail: the larger film of a whole-frame pair of two
   sizes is the smaller one upscaled, moved only by its own JPEG quantisation, and the
   smaller one is not rather the larger one downscaled (``curation.keeper.frame.upscale_of``).
6. ``fewer pixels``: a crop or a downscale loses pixels (after padding and upscaling, which
   add some).
7. ``re-saved in colour``: a grey picture stored in three equal channels, in an archive whose
   films are stored grey: an imaging system writes a grey film in one channel, whatever
   quality the re-save chose.
8. ``lower quality``: the JPEG quality estimated from the quantisation tables in its header;
   a re-encode at a lower quality lost detail the other film still has.
9. ``unusual encoder``: its encoder signature is not the one most of the archive's films
   carry.
10. ``filled corners``: black in all four corners inside the film's own border, the fill a
    rotation by a few degrees leaves (the archive's level films have none there; read in
    the least black corner, since a radiograph may have dark corners of its own below the
    jaw, which a brightened copy lifts). Last of the file's facts: a crop would lose them.
11. ``local contrast``: its local contrast lies above the archive's typical film by
   ``CONTRAST_MARGIN`` spreads more than the other film lies from it (either side): CLAHE
   and equalisation raise it, an export does not (``curation.keeper.tone``).
12. ``tone curve``: its grey histogram departs from the archive's typical roughness by
    ``ROUGHNESS_MARGIN`` spreads more than the other film's: a tone curve (gamma,
    brightness/contrast, equalisation) applied to 8-bit levels combs the histogram.
13. ``re-encoded``: among films tied so far, one whose pixels are exactly what encoding the
    other film's picture (turned as the pair is) with its own JPEG tables gives, while the
    other's are not that of it (``curation.keeper.reencode``): a copy written
    at its source's size, quality and encoder, a same-quality mirror say. Measured only for
    tied films (a full decode and an encode each way: ``pairs_to_reencode``).
14. ``grainier``: among films tied so far, of one frame, that repeat each other's boxes
    exactly (as a script copies them): the grainier one was noised (grain costs a full-size
    decode, so it is measured only for those: ``films_needing_grain``). Grain alone never
    names a copy: on test films noise of sigma 4 raised the grain by 1.5x-1.6x while
    re-encoding and re-exposure moved it by up to 1.1x, too close for a threshold with
    margin; a same-frame pair that nothing names a copy is a re-filing.
15. ``number``: nothing in the files separates them, and the evidence says so
    ("undecided"), shown on the review page: the lower number is kept, compared as a
    number (``090131`` is 90131, above ``36531``); the text breaks an exact tie.

Why this order: what the archive itself says (1, 2) outranks anything measured; a turn (3)
is never kept whatever its frame or quality, since a turned copy may be written at any size
and quality; padding and upscaling (4, 5) before the pixel count, since both add pixels; a
lost frame (6) is certain where the quality (8) is not, since a script may re-encode at a
higher quality than the imaging system did (adding no detail back): a grey film re-saved in
colour (7) is such a re-save, so it comes before the quality; the usual encoder (9) and the
corners (10) are the weakest of the file's facts, since an imaging system may export a few
films otherwise and a film may have dark corners. The tone rules (11, 12) come after every
fact of the file: they read the picture against the archive's typical film, which a film
may depart from by itself (one of the 120 real films has a combed histogram of its own), so
they speak only where the file is silent: a copy written at the original's own size,
quality and encoder. Local contrast (11) before the histogram (12): a CLAHE copy smooths a
combed original's histogram, so the histogram would name that original, while contrast
names its copy; and brightness/contrast, which can bring a dull original's contrast
towards typical, is not read by (11) as a departure (only a film above typical is). Both
outrank grain (14), measured with a margin where grain has none. A re-encoding (13) is
exact where it speaks, but it is read only where everything before ties, and before grain,
since a re-saved copy repeats its source's boxes and may be the less grainy of the two.

Measured on 120 real films (``python -m bench.keeper.altered``, at 512 x 512 and 24 of them
upscaled to the archive's sizes; copies at the original's own quality 95 and encoder): on
the pairs that reach each rule, the original's largest lead is 0.784 spreads (local
contrast; 0.342 upscaled) and 0.671 (histogram; 0.180 upscaled); the copy's smallest lead
over CLAHE clip 2/4 and equalisation is 1.066 (upscaled CLAHE clip 2; 2.691 at 512), over
gamma 0.8/1.25 and brightness/contrast 1.320 (gamma 0.8 at 512): the margins are the
midpoints, 0.93 and 1.0. Mirrors written at the original's own quality and encoder leave
nothing here: panoramic films are close to left-right symmetric, and no statistic tried
told a film from its mirror (correlation of the film and of its mirror with the mean of the
other films, at 16, 64 and 256 px square: 24-26 of 120 films fit their mirror better,
``mirror_fits`` in ``bench/keeper/keeper.json``): those are named by the re-encoding (13). Outside
``bench.keeper.altered``'s 29 alterations the tone rules can err: a blurred,
noised or sharpened copy at the original's quality moves a rough or high-contrast original's
statistics towards typical, and
5-13 of 120 such originals were named (``BEYOND`` in ``bench.keeper.copies``). Originals
with a border of their own, upscales, colour re-saves and small turns: docs/design.md, "Same
picture, on real sizes and exposures" (``python -m bench.keeper.bordered``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from curation.core.records import Lesion
from curation.hashes.hashing import View
from curation.index.provenance import scripted
from curation.keeper.frame import Borders, Frame, near_pad, pad_share
from curation.keeper.tone import CONTRAST_MARGIN, ROUGHNESS_MARGIN

Evidence = tuple[float, str]  # value (lower = more original) and the sentence when it decides


@dataclass(frozen=True)
class FilmFacts:
    """What the keeper rules read about a film (``curation.keeper.evidence`` gathers
    them)."""

    width: int
    height: int
    lesions: tuple[Lesion, ...]
    script_share: float  # share of the augmentation folder written with its signature
    augmented_twin: str = ""  # how it equals an augmentation-folder copy; "" when it does not
    turned: View = View.identity  # the turn whose grid fits the archive's mean grid best
    borders: Borders = (0.0, 0.0, 0.0, 0.0)  # constant border per side, as shares of it
    upscaled_from: str = ""  # the smaller film of its group it is an upscale of; "" if none
    grey_in_colour: bool = False  # a grey picture in three channels, in an archive stored grey
    quality: int = 0  # JPEG quality estimated from its quantisation tables; 0 when unknown
    unusual_encoder: bool = False  # not the signature most of the archive's films carry
    filled_corners: float = 0.0  # share of its corner blocks that is black
    contrast_departure: float = 0.0  # local contrast minus the archive's typical, in spreads
    roughness_departure: float = 0.0  # histogram roughness off the archive's typical
    content: str = ""  # the file's sha256: two films of one content measure alike everywhere


def _augmented_twin(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    twin = facts[film].augmented_twin
    return float(bool(twin)), f"it is {twin}: the archive's own augmented copy"


def _script_encoder(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    by_script = scripted(facts[film].script_share, (facts[f].script_share for f in group))
    return float(by_script), "its encoder signature is that of the archive's augmented copies"


def _portrait(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    fact = facts[film]
    has_landscape = any(facts[f].width >= facts[f].height for f in group)
    portrait = fact.height > fact.width and has_landscape
    return float(portrait), "it is portrait: a quarter-turned copy of a landscape film"


_TURN_WORDS = {
    View.rot90: "a quarter turn",
    View.rot180: "a half turn, upside down",
    View.rot270: "a quarter turn",
}


def _turned(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    turn = facts[film].turned
    return (
        float(turn is not View.identity),
        f"it is turned ({_TURN_WORDS.get(turn, turn)}): its hash grid fits the archive's "
        "mean film better turned back",
    )


def _frame(fact: FilmFacts) -> Frame:
    return Frame(fact.width, fact.height, fact.borders)


def _padded(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    share = max(
        (pad_share(_frame(facts[film]), _frame(facts[f])) for f in group - {film}), default=0.0
    )
    return share, (
        f"it is padded: a constant border {share:.1%} of the frame wider than the other "
        "film's, around no more picture than it shows"
    )


def borders_to_reread(group: set[str], facts: Mapping[str, FilmFacts]) -> set[str]:
    """The films of ``group`` whose borders decide a pad only when read at full size: both
    films of every pair the draft decode reads near a pad (``curation.keeper.frame.near_pad``)."""
    return {
        film
        for one in group
        for other in group - {one}
        if near_pad(_frame(facts[one]), _frame(facts[other]))
        for film in (one, other)
    }


def _upscaled(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    source = facts[film].upscaled_from
    return float(bool(source)), (
        f"it is {source} upscaled: more pixels but no detail that film lacks"
    )


def _colour_resave(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    return float(facts[film].grey_in_colour), (
        "it is a grey picture stored in three equal channels, where the archive's films are "
        "stored grey: a re-save"
    )


def _filled_corners(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    share = facts[film].filled_corners
    return share, f"its corners are filled black ({share:.0%}): a copy turned a few degrees"


def _local_contrast(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    own = facts[film].contrast_departure
    others = max(abs(facts[f].contrast_departure) for f in group - {film})
    return (
        float(own - others >= CONTRAST_MARGIN),
        f"its local contrast is raised: {own:.1f} spreads above the archive's films, the "
        f"other film {others:.1f} from them (a CLAHE or equalised copy)",
    )


def _tone_curve(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    departures = {f: facts[f].roughness_departure for f in group}
    lead = departures[film] - min(departures.values())  # over the group's most typical film
    return (
        float(lead >= ROUGHNESS_MARGIN),
        f"its grey histogram is combed: {departures[film]:.1f} spreads from the archive's "
        f"films, the other film {min(departures.values()):.1f} (a tone curve was applied)",
    )


def _fewer_pixels(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    fact = facts[film]
    return (
        -float(fact.width * fact.height),
        f"it has fewer pixels ({fact.width}x{fact.height}): a cropped or downscaled copy",
    )


def _lower_quality(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    quality = facts[film].quality
    return -float(quality), f"its JPEG quality is lower (about {quality}, from its tables)"


def _unusual_encoder(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    return (
        float(facts[film].unusual_encoder),
        "its encoder signature is not the one most of the archive's films carry",
    )


def _number(film: str, group: set[str], facts: Mapping[str, FilmFacts]) -> Evidence:
    number = float(int(film)) if film.isdecimal() else float("inf")
    return (
        number,
        "undecided: nothing in the files tells which film is the original; the lower "
        "number is kept (ids compared as numbers)",
    )


Rule = Callable[[str, set[str], Mapping[str, FilmFacts]], Evidence]
STRONG_RULES: tuple[tuple[str, Rule], ...] = (
    ("augmentation copy", _augmented_twin),
    ("script encoder", _script_encoder),
    ("portrait", _portrait),
    ("turned", _turned),
    ("padded", _padded),
    ("upscaled", _upscaled),
    ("fewer pixels", _fewer_pixels),
    ("re-saved in colour", _colour_resave),
    ("lower quality", _lower_quality),
    ("unusual encoder", _unusual_encoder),
    ("filled corners", _filled_corners),
    ("local contrast", _local_contrast),
    ("tone curve", _tone_curve),
)
FIRST_TONE_RULE = "local contrast"  # the tone rules read a full-size decode: measured last
KEEPER_ORDER = (*(name for name, _ in STRONG_RULES), "re-encoded", "grainier", "number")
COPY_RULES = {"augmentation copy", "script encoder"}  # a same-frame film they name is a copy


def strong_evidence(
    film: str, group: set[str], facts: Mapping[str, FilmFacts]
) -> tuple[Evidence, ...]:
    """The evidence of the rules before grain that ``film`` is a copy, in ``KEEPER_ORDER``."""
    return tuple(rule(film, group, facts) for _, rule in STRONG_RULES)


def _boxes(fact: FilmFacts) -> tuple[int, int, tuple[Lesion, ...]]:
    return fact.width, fact.height, fact.lesions


def tied(group: set[str], facts: Mapping[str, FilmFacts], before: str = "re-encoded") -> set[str]:
    """The films no rule before ``before`` separates from the group's best: the only ones
    whose full-size measurements (tone, re-encoding, grain) can decide anything."""
    rules = KEEPER_ORDER.index(before)
    strong = {f: [k for k, _ in strong_evidence(f, group, facts)[:rules]] for f in group}
    best = min(strong.values())
    return {f for f in group if strong[f] == best}


def one_content(films: Iterable[str], facts: Mapping[str, FilmFacts]) -> bool:
    """Whether the ``films`` are one file content (the same bytes, filed more than once):
    then no measurement of the files can tell them apart, and none is worth reading."""
    contents = {facts[f].content for f in films}
    return len(contents) == 1 and "" not in contents


def grain_contest(group: set[str], facts: Mapping[str, FilmFacts]) -> set[str]:
    """The films whose grain decides which is kept: tied on the stronger evidence, of one
    size, and repeating each other's boxes exactly (as a script copies them). A re-filing,
    annotated anew, never enters one."""
    tied_films = tied(group, facts)
    copies = Counter(_boxes(facts[f]) for f in tied_films)
    return {f for f in tied_films if facts[f].lesions and copies[_boxes(facts[f])] > 1}


def keeper_key(
    film: str,
    group: set[str],
    facts: Mapping[str, FilmFacts],
    contest: set[str],
    grains: Mapping[str, float],
    reencoded: Mapping[str, str],
) -> tuple[Evidence, ...]:
    """All the evidence that ``film`` is a copy, in ``KEEPER_ORDER``; grain only in a contest,
    ``reencoded`` (copy -> the film it was written from) only among tied films."""
    rivals = [grains[f] for f in contest if _boxes(facts[f]) == _boxes(facts[film])]
    grainier = film in contest and grains[film] > min(rivals)
    source = reencoded.get(film, "")
    return (
        *strong_evidence(film, group, facts),
        (
            float(bool(source)),
            f"it is {source} re-encoded: encoding that film's picture with its own JPEG "
            "tables gives its pixels exactly, and not the other way",
        ),
        (
            float(grainier),
            f"it repeats the other film's boxes and is grainier ({grains.get(film, 0):.2f})",
        ),
        _number(film, group, facts),
    )


def keeper(group: set[str], keys: Mapping[str, tuple[Evidence, ...]]) -> str:
    """The film with the least evidence of being a copy, rule by rule; the id's text last."""
    return min(group, key=lambda f: ([value for value, _ in keys[f]], f))


def deciding(dropped: tuple[Evidence, ...], kept: tuple[Evidence, ...]) -> tuple[str, str]:
    """The rule (name, sentence) on which a dropped film first loses to the kept one."""
    for name, (mine, why), (theirs, _) in zip(KEEPER_ORDER, dropped, kept, strict=True):
        if mine > theirs:
            return name, why
    return KEEPER_ORDER[-1], "undecided: nothing in the files separates them, the id's text decides"
