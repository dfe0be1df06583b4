"""Atomic writes (``curation.core.atomic``): the target is replaced whole, readable by all, with
nothing left beside it, and a link planted at the temporary name is refused."""

from __future__ import annotations

import os
import threading

import pytest

from curation.core.atomic import write_bytes


def test_an_atomic_write_replaces_the_file_readable_by_all_and_leaves_nothing(tmp_path):
    target = tmp_path / "out" / "thumb.jpg"
    old_mask = os.umask(0o077)
    try:
        write_bytes(target, b"first")
        write_bytes(target, b"second")
    finally:
        os.umask(old_mask)
    assert target.read_bytes() == b"second"
    assert target.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["thumb.jpg"]


def test_an_atomic_write_does_not_follow_a_link_planted_at_its_temporary_name(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    target = tmp_path / "thumb.jpg"
    planted = tmp_path / f".thumb.jpg.{os.getpid()}-{threading.get_ident()}.tmp"
    planted.symlink_to(victim)
    with pytest.raises(OSError):
        write_bytes(target, b"data")
    assert victim.read_bytes() == b"keep me" and not target.exists()
