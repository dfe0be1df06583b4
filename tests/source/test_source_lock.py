"""The source lock is read as the table it must be: every entry a text sha256 and a whole-number
size, or one sentence naming the lock and the entry (a size given as text once reached the
download as the expected length)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curation.source.download import SourceError, read_lock

GOOD = {"sha256": "ab" * 32, "size": 1234}


def _lock(tmp_path: Path, entry: object) -> Path:
    path = tmp_path / "source.lock.json"
    path.write_text(json.dumps({"sources": {"archive.zip": GOOD, "other.zip": entry}}))
    return path


def test_a_complete_lock_reads_as_recorded(tmp_path: Path) -> None:
    assert read_lock(_lock(tmp_path, GOOD)) == {"archive.zip": GOOD, "other.zip": GOOD}


@pytest.mark.parametrize(
    "entry",
    [
        {"sha256": "ab" * 32, "size": "1234"},
        {"sha256": "ab" * 32, "size": True},
        {"sha256": "ab" * 32},
        {"sha256": 7, "size": 1234},
        {"size": 1234},
    ],
)
def test_an_incomplete_entry_is_refused_naming_the_lock_and_the_entry(
    tmp_path: Path, entry: dict[str, object]
) -> None:
    lock = _lock(tmp_path, entry)
    with pytest.raises(SourceError) as raised:
        read_lock(lock)
    message = str(raised.value)
    assert message.startswith(f"{lock}: not a valid source lock")
    assert "other.zip" in message and "archive.zip" not in message
