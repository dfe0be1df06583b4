"""Finding copies (``curation.same_picture``) measured: the frame check on real films and
their alterations, the feature shortlist's cost, and where the same-picture step's CPU goes."""
