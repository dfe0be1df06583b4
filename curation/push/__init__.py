"""``pericurate push``: a verified build published as one pinned Hub commit, the environment
pinned to it (``curation.push.hub``)."""
