"""Which film is kept, the keeper step: reads the same-picture step's confirmed pairs
(``curation.same_picture``), gathers each film's evidence from its file, groups the pairs and
keeps one film per group by rules in a fixed order (``curation.keeper.rules``), then settles
the records and the agreement table."""
