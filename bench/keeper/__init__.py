"""Which film is kept (``curation.keeper``) measured on real films: their altered copies
(``altered``) and the films with their own borders at real sizes (``bordered``)."""
