"""``python -m bench.peers.floor_child FOLDER TRUTH``: the least CPU a copy finder built on
pericurate's local features pays on ``bench.peers.real``'s folder, for that run's floor row.

In this one process, each film of ``FOLDER`` is read and its sha256 taken (the index's name for
a film's content), then decoded once at the features' working size and its local features
detected at the project's settings (``curation.features.features``). Then each copy's
features are matched to its original's (``TRUTH``: every stem -> its original's stem, as
``bench.peers.real_folder.write_folder`` writes it): the one confirmation each copy needs at
the least. Nothing else a build does is paid: no annotation or content check, hash,
shortlist, pixel check, keeper or worker process. So a design that keeps these features on
every film costs at least this. The last line printed says what was done, as JSON."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from curation.features.features import FilmFeatures, film_features, match_features, working_grey


def main(argv: list[str]) -> None:
    folder, truth_file = Path(argv[0]), Path(argv[1])
    truth: dict[str, str] = json.loads(truth_file.read_text())
    features: dict[str, FilmFeatures] = {}
    digests: set[str] = set()
    for path in sorted(folder.glob("*.jpg")):
        data = path.read_bytes()
        digests.add(hashlib.sha256(data).hexdigest())
        features[path.stem] = film_features(*working_grey(data))
    pairs = sorted((original, copy) for copy, original in truth.items() if copy != original)
    fitted = sum(match_features(features[a], features[b]).transform is not None for a, b in pairs)
    done = {"films": len(features), "contents": len(digests), "copies_matched": len(pairs)}
    print(json.dumps({**done, "copies_fitted": fitted}))


if __name__ == "__main__":
    main(sys.argv[1:])
