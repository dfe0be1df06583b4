"""The pair search (``curation.hashes.pairs``) against brute force, on synthetic and film
codes."""
