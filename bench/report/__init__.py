"""``bench/RESULTS.md`` and ``bench/results.json``: the parts' figures laid out as tables."""
