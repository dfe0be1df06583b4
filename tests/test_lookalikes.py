from curation.lookalikes import lookalike_components


def test_components_are_transitive_and_keep_singletons():
    edges = [("00021", "00031", 10), ("00031", "00041", 29), ("00111", "00121", 3)]
    clusters = lookalike_components(["00011", "00021", "00031", "00041", "00111", "00121"], edges)
    assert [(c.cluster_id, c.film_ids) for c in clusters] == [
        ("00021", ("00021", "00031", "00041")),
        ("00111", ("00111", "00121")),
        ("00011", ("00011",)),
    ]
