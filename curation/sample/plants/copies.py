"""Augmented copies: in the augmentation folder as the archive files them, and filed among the
originals under fresh original stems (numbered below or above their source), where no name
gives them away: noised, rescaled, mirrored, turned, and under another frame (cropped,
padded, tilted a few degrees, re-toned by CLAHE: ``curation.drawing.reframe``). Every copy
carries the augmentation script's encoder signature."""

from __future__ import annotations

from dataclasses import replace

import curation.drawing.encoders as encoders
from curation.drawing.reframe import (
    REFRAMINGS,
    drawn_lesion_box,
    reframed_box,
    reframed_size,
)
from curation.drawing.render import Output
from curation.sample.annotations import Annotation, objects_of
from curation.sample.geometry import mirror_box, rotate_box, scale_box
from curation.sample.layout import (
    AUGMENT_DIGITS,
    AUGMENTED_DIR,
    ORIGINAL_DIR,
    ORIGINAL_FOLDER,
)
from curation.sample.planner import Film, Planner
from curation.sample.truth import AugmentedCopy

_AUGMENT_RATE = 0.3
_MIN_PER_KIND = 3
FAINT_SIGMA = (3.0, 4.0)
STRONG_SIGMA = (5.0, 8.0)
# What is planted among the originals, each once under a lower and once under a higher number.
AMONG_TRANSFORMS = (
    "noise-faint",
    "noise-strong",
    "scaling",
    "mirror",
    "rot-90",
    "rot+90",
    "rot180",
)
_ANGLES = {"rot-90": -90, "rot+90": 90, "rot180": 180}


def _param(planner: Planner, transform: str) -> float:
    rng = planner.rng
    if transform == "noise-faint":
        return round(float(rng.uniform(*FAINT_SIGMA)), 2)
    if transform == "noise-strong":
        return round(float(rng.uniform(*STRONG_SIGMA)), 2)
    if transform == "scaling":
        return round(float(rng.choice([-1, 1]) * rng.uniform(0.1, 0.2) + 1), 2)
    if transform in REFRAMINGS:
        return REFRAMINGS[transform]
    return float(_ANGLES.get(transform, 0))


def _augment(
    planner: Planner,
    film: Film,
    transform: str,
    stem: str,
    folder: str,
    param: float | None = None,
    record: list[AugmentedCopy] | None = None,
) -> None:
    """File one augmented copy of ``film`` (image and XML) and record exactly what was done:
    in ``record`` when given, else with the folder's copies. ``param`` when given is the
    transform's, else drawn."""
    width, height = film.family.size
    param = _param(planner, transform) if param is None else param
    kind = "rotation" if transform in _ANGLES else transform.split("-")[0]
    out_w, out_h = width, height
    noise_offset = (0, 0)
    if kind == "noise":
        noise_offset = planner.grain()
        boxes, detail = film.boxes, f"gaussian sigma={param}"
    elif kind == "scaling":
        out_w, out_h = round(width * param), round(height * param)
        boxes, detail = tuple(scale_box(b, param) for b in film.boxes), f"factor={param}"
    elif kind in REFRAMINGS:
        out_w, out_h = reframed_size(kind, param, width, height)
        boxes = tuple(reframed_box(b, kind, param, width, height) for b in film.boxes)
        detail = {"crop": "share", "pad": "share", "tilt": "degrees", "clahe": "clip"}[kind]
        detail = f"{detail}={param}"
    elif kind == "mirror":
        boxes, detail = tuple(mirror_box(b, width) for b in film.boxes), "horizontal"
    elif kind == "negative":
        boxes, detail = film.boxes, "grey levels inverted"
    else:
        angle = round(param)
        boxes = tuple(rotate_box(b, width, height, angle) for b in film.boxes)
        detail = f"angle={angle}"
    arcname = f"{folder}/{stem}.jpg"
    film.family.outputs.append(
        Output(
            arcname,
            film.shot,
            "RGB",
            75,
            kind,
            param,
            noise_offset,
            encoding=encoders.SCRIPT,
            exposure=film.exposure,
        )
    )
    xml_folder = folder.rsplit("/", 1)[-1]
    planner.annotations.append(Annotation(stem, xml_folder, out_w, out_h, 3, objects_of(boxes)))
    copy = AugmentedCopy(
        stem=stem,
        source=film.stem,
        kind=kind,
        detail=detail,
        transform=transform,
        param=param,
        number_lower=int(stem[:-1]) < int(film.stem[:-1]),
        encoder=encoders.SCRIPT,
    )
    if record is None:
        record = planner.augmented if folder == AUGMENTED_DIR else planner.among
    record.append(copy)


def _folder_transform(planner: Planner, kind: str) -> str:
    if kind == "noise":
        return str(planner.rng.choice(["noise-faint", "noise-strong"]))
    if kind == "rotation":
        return str(planner.rng.choice(["rot-90", "rot+90", "rot180"]))
    return kind


def plan_augmented(planner: Planner) -> None:
    """Copies in the augmentation folder: each original gets each kind with some chance,
    and every kind appears at least a few times."""
    kinds_of = {
        film.stem: [k for k in AUGMENT_DIGITS if planner.rng.random() < _AUGMENT_RATE]
        for film in planner.clean
    }
    for kind in AUGMENT_DIGITS:
        lacking = [stem for stem, kinds in kinds_of.items() if kind not in kinds]
        shortfall = _MIN_PER_KIND - (len(kinds_of) - len(lacking))
        for stem in lacking[: max(shortfall, 0)]:
            kinds_of[stem].append(kind)
    for film in planner.clean:
        for kind in AUGMENT_DIGITS:
            if kind in kinds_of[film.stem]:
                stem = film.stem[:-1] + AUGMENT_DIGITS[kind]
                _augment(planner, film, _folder_transform(planner, kind), stem, AUGMENTED_DIR)


def plan_among_originals(planner: Planner) -> None:
    """Every transform (``AMONG_TRANSFORMS``, then ``REFRAMINGS``) filed among the originals
    twice: once under a number lower than its source's and once under a higher one, from
    single-visit films."""
    sources = planner.singles
    step = max(1, len(sources) // (2 * len(AMONG_TRANSFORMS)))
    index = 0
    for transform in AMONG_TRANSFORMS:
        for lower in (True, False):
            film = sources[(index * step) % len(sources)]
            index += 1
            _augment(planner, film, transform, planner.stem_beside(film.stem, lower), ORIGINAL_DIR)
    # Then the copies under another frame, from the films between those (planned after, so
    # the copies above keep their sources and stems).
    index = 0
    for transform in REFRAMINGS:
        for lower in (True, False):
            film = sources[(index * step + step // 2) % len(sources)]
            index += 1
            _augment(planner, film, transform, planner.stem_beside(film.stem, lower), ORIGINAL_DIR)


def file_every_copy_among_originals(planner: Planner) -> None:
    """Also file each augmentation-folder copy, byte for byte, among the originals under a
    fresh original stem (alternately below and above its source's number)."""
    by_stem = {film.stem: film for film in planner.clean}
    notes = {note.stem: note for note in planner.annotations}
    for index, copy in enumerate(planner.augmented):
        film = by_stem[copy.source]
        stem = planner.stem_beside(film.stem, lower=index % 2 == 0)
        film.family.outputs.append(
            Output(
                f"{ORIGINAL_DIR}/{stem}.jpg",
                film.shot,
                copy_of=f"{AUGMENTED_DIR}/{copy.stem}.jpg",
            )
        )
        folder_note = notes[copy.stem]
        planner.annotations.append(
            Annotation(
                stem,
                ORIGINAL_FOLDER,
                folder_note.width,
                folder_note.height,
                3,
                list(folder_note.objects),
            )
        )
        planner.among.append(
            AugmentedCopy(
                stem=stem,
                source=copy.source,
                kind=copy.kind,
                detail=copy.detail,
                transform=copy.transform,
                param=copy.param,
                number_lower=int(stem[:-1]) < int(copy.source[:-1]),
                encoder=copy.encoder,
                filed_copy_of=copy.stem,
            )
        )


# What reviewers tried on held-out films, planted after every other file so that nothing
# planned before moves: a transform among the originals and its parameter. CLAHE at clip 4,
# crops to 60 % of each side and wide pads are not planted: the sample's drawn films carry
# too few features for the frame check there (30-136 inliers, 120 needed, where real films
# have 248 and more: docs/design.md, "Same picture under another frame"); tests cover them.
HELD_OUT_COPIES = (("negative", 0.0), ("scaling", 0.0))
DOWNSCALED = (256, 128)  # the "scaling" case: down to the smallest film the index takes


def plan_held_out_cases(planner: Planner) -> None:
    """The held-out cases, from single films counted from the end (``planner.held_out``): a
    negative, a 256-pixel downscale, the same film filed again with
    one more lesion drawn and annotated, and a mirrored copy found only in the augmentation
    folder (its name's original never filed). No draw from ``planner.rng``: what is drawn
    after (the annotation files' quirks) stays as it was."""
    films = iter(planner.singles[::-1])
    first_note = len(planner.annotations)
    for transform, param in HELD_OUT_COPIES:
        film = next(films)
        if transform == "scaling":
            width, height = film.family.size
            param = round(max(DOWNSCALED[0] / width, DOWNSCALED[1] / height), 6)
        stem = planner.stem_beside(film.stem, lower=False)
        _augment(planner, film, transform, stem, ORIGINAL_DIR, param, planner.held_out)
    _refile_with_a_drawn_lesion(planner, next(films))
    film = next(films)
    orphan = planner.next_stem()[:-1] + AUGMENT_DIGITS["mirror"]
    _augment(planner, film, "mirror", orphan, AUGMENTED_DIR, 0.0, planner.held_out)
    # Their annotation files take no quirks (those draw from the generator): each names its
    # own film.
    planner.held_out_notes = planner.annotations[first_note:]
    del planner.annotations[first_note:]
    for note in planner.held_out_notes:
        note.filename = f"{note.stem}.jpg"


def _refile_with_a_drawn_lesion(planner: Planner, film: Film) -> None:
    """``film`` filed again by the imaging system under a higher number, one more lesion
    drawn on it and annotated by its second reader."""
    width, height = film.family.size
    stem = planner.stem_beside(film.stem, lower=False)
    film.family.outputs.append(
        Output(f"{ORIGINAL_DIR}/{stem}.jpg", film.shot, film.mode, film.quality, "drawn lesion")
    )
    boxes = (*film.boxes, drawn_lesion_box(width, height))
    planner.annotations.append(
        Annotation(stem, ORIGINAL_FOLDER, width, height, 3, objects_of(boxes))
    )
    planner.held_out.append(
        AugmentedCopy(
            stem=stem,
            source=film.stem,
            kind="drawn lesion",
            detail="one more lesion drawn and annotated",
            transform="drawn lesion",
            number_lower=False,
            encoder=encoders.SYSTEM,
        )
    )


# A film of the imaging system's own with a constant dark border (as many exported films
# carry, about 1 % wide, which a held-out archive showed and the drawn films lack), filed
# with a copy re-encoded at a lower quality under a lower number; planted after everything
# else, on a single film nothing else copies or revisits, so nothing planned before moves.
OWN_BORDER = 0.011  # of each side
REENCODED_QUALITY = 50


def plan_bordered_original(planner: Planner) -> None:
    """Give the last single film that nothing else copies, revisits or labels a border of
    its own (``OWN_BORDER``), and file a copy of it re-encoded at ``REENCODED_QUALITY``
    under a lower number (``planner.held_out``). No draw from ``planner.rng``."""
    taken = {c.source for c in (*planner.augmented, *planner.among, *planner.held_out)}
    taken |= {stem for pair in planner.revisits for stem in pair} | set(planner.shared_label)
    film = next((f for f in planner.singles[::-1] if f.stem not in taken), None)
    if film is None:  # an archive too small to have one
        return
    outputs = film.family.outputs
    at = next(i for i, o in enumerate(outputs) if o.arcname == f"{ORIGINAL_DIR}/{film.stem}.jpg")
    outputs[at] = replace(outputs[at], transform="own border", param=OWN_BORDER)
    stem = planner.stem_beside(film.stem, lower=True)
    outputs.append(
        replace(outputs[at], arcname=f"{ORIGINAL_DIR}/{stem}.jpg", quality=REENCODED_QUALITY)
    )
    width, height = film.family.size
    note = Annotation(stem, ORIGINAL_FOLDER, width, height, 3, objects_of(film.boxes))
    note.filename = f"{stem}.jpg"
    planner.held_out_notes.append(note)
    planner.held_out.append(
        AugmentedCopy(
            stem=stem,
            source=film.stem,
            kind="re-encoded",
            detail=f"quality {REENCODED_QUALITY}, of a film with a border of its own",
            transform="re-encoded",
            number_lower=int(stem[:-1]) < int(film.stem[:-1]),
            encoder=encoders.SYSTEM,
        )
    )
