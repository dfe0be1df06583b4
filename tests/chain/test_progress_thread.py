"""The run's progress bars repaint from rich's own thread on a terminal only. Elsewhere (a
log, a bench's child, CI) nothing shows the repaints, and that thread, waking ten times a
second, was one more that could hold an allocator's lock at the instant a worker was forked:
the traced bench's child hung in the forked worker."""

from __future__ import annotations

import threading

from curation.chain import runner


def test_no_repainting_thread_when_the_output_is_not_a_terminal():
    before = set(threading.enumerate())
    with runner._progress() as bars:
        started = set(threading.enumerate()) - before
        bars.add_task("index", total=1)
    assert not started
