"""What ``bench.same_picture.frames`` reports beside each check's figures: the figures of each
half of the films (limits are chosen on one half and checked on the other), and the distinct films a
dropped copy's hash would join as look-alikes."""

from __future__ import annotations

import re
from collections import defaultdict

from bench.same_picture.alterations import ALTERATIONS
from bench.same_picture.records import Film, PairFigures
from curation.lookalikes.components import lookalike_links


def _film_number(name: str) -> int:
    return int(re.findall(r"\d{3}", name)[0])


def half(rows: list[PairFigures], parity: int) -> list[PairFigures]:
    """The rows of even- (0) or odd-numbered (1) films; a distinct pair when both are."""
    return [
        row
        for row in rows
        if _film_number(row.first) % 2 == parity
        and (row.kind != "distinct" or _film_number(row.second) % 2 == parity)
    ]


def joined_through_a_copy(
    originals: list[Film], copies: list[dict], rows: list[PairFigures]
) -> dict:
    """Pairs of distinct films a look-alike link joins only through a dropped copy's hash,
    per alteration: the copies the whole-frame check drops keep their hash in the search (as
    the step does), those dropped under another frame do not; ``all copies hashed`` counts
    what the rule that hashed every dropped copy joined."""
    whole = {(row.first, row.second) for row in rows if row.whole_frame}
    source = {
        c.name: o.name for o, copied in zip(originals, copies, strict=True) for c in copied.values()
    }
    own = {
        frozenset((link.first, link.second))
        for link in lookalike_links({f.name: f.hashes for f in originals})
    }
    found: dict[str, int] = defaultdict(int)
    for key in ALTERATIONS:
        made = [copied[key] for copied in copies]
        for rule, hashed in (
            (
                "copies hashed as the step hashes them",
                [c for c in made if (source[c.name], c.name) in whole],
            ),
            ("all copies hashed", made),
        ):
            films = {f.name: f.hashes for f in originals} | {c.name: c.hashes for c in hashed}
            joined = {
                frozenset(
                    (source.get(link.first, link.first), source.get(link.second, link.second))
                )
                for link in lookalike_links(films)
            }
            found[rule] += sum(len(pair) == 2 and pair not in own for pair in joined)
    return dict(found)
