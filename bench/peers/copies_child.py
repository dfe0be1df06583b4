"""``python -m bench.peers.copies_child BUILD``: pericurate up to its same-picture groups, the
part of a build that does what the peers do (find copies), for ``bench.peers.real``'s
like-for-like row. ``BUILD`` is a folder ``pericurate download`` filled; the chain runs
through the keeper step there, with the default settings, and the last line printed is each
dropped film -> the film kept in its place, as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from curation.chain.runner import curate
from curation.chain.settings import Settings
from curation.keeper.step import KeptGroups
from curation.source.source import Source


def main(argv: list[str]) -> None:
    build = Path(argv[0])
    source = Source.load(build / "work" / "source.json")
    outcome = curate(source, build, Settings(), stop_after="keeper")
    kept = outcome.products["kept_groups"]
    assert isinstance(kept, KeptGroups)
    print(json.dumps(kept.kept_as, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
