"""`make bench`: performance and scale measurements of the curation chain (issue 7)."""
