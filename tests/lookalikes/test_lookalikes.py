"""Look-alike links in every orientation, inherited links of dropped copies, patient links."""

import numpy as np

from curation.core.records import Kind, SourceRecord
from curation.hashes.hash_films import Hashes
from curation.hashes.hashing import View
from curation.lookalikes.components import (
    LOOKALIKE_DISTANCE,
    MAX_FILMS_PER_PATIENT,
    Link,
    lookalike_clusters,
    lookalike_components,
    lookalike_links,
    patient_links,
)


def _link(a: str, b: str) -> Link:
    return Link(a, b, "ahash", View.identity, 10)


def test_components_are_transitive_and_keep_singletons():
    links = [_link("00021", "00031"), _link("00031", "00041"), _link("00111", "00121")]
    clusters = lookalike_components(["00011", "00021", "00031", "00041", "00111", "00121"], links)
    assert [(c.cluster_id, c.film_ids) for c in clusters] == [
        ("00021", ("00021", "00031", "00041")),
        ("00111", ("00111", "00121")),
        ("00011", ("00011",)),
    ]


def _random_code(rng: np.random.Generator) -> bytes:
    return rng.integers(0, 256, 64, dtype=np.uint8).tobytes()


def _flip(code: bytes, bits: int) -> bytes:
    array = np.unpackbits(np.frombuffer(code, np.uint8))
    array[:bits] ^= 1
    return np.packbits(array).tobytes()


def test_a_film_that_looks_alike_only_when_turned_is_linked_at_the_same_limit():
    rng = np.random.default_rng(2)
    hashes = {f: {v: _random_code(rng) for v in View} for f in ("a", "b", "c", "d")}
    shared = hashes["a"][View.identity]
    hashes["b"][View.mirror] = _flip(shared, LOOKALIKE_DISTANCE)  # b mirrored is near a
    hashes["c"][View.rot90] = _flip(shared, LOOKALIKE_DISTANCE + 1)  # just too far
    hashes["d"][View.rot180] = _flip(shared, 5)
    links = lookalike_links(hashes)
    assert [(x.first, x.second, x.view, x.distance) for x in links] == [
        ("a", "b", View.mirror, LOOKALIKE_DISTANCE),
        ("a", "d", View.rot180, 5),
    ]


def test_a_dropped_copy_passes_its_links_to_the_film_kept_in_its_place():
    # "m" (a mirrored copy of "o", dropped) looked like "x"; "o" itself did not.
    links = [_link("m", "x")]
    clusters = lookalike_components(["o", "x", "y"], links, kept_as={"m": "o"})
    assert [c.film_ids for c in clusters] == [("o", "x"), ("y",)]


def test_films_naming_one_patient_are_linked_unless_the_number_is_a_template():
    numbers = {"a": "PN1", "b": "PN1", "c": "PN2"}
    template = {f"t{i:02d}": "PN9" for i in range(MAX_FILMS_PER_PATIENT + 1)}
    links, templated = patient_links({**numbers, **template})
    assert [(x.first, x.second, x.method) for x in links] == [("a", "b", "patient")]
    assert templated == MAX_FILMS_PER_PATIENT + 1
    at_limit = {f"t{i:02d}": "PN9" for i in range(MAX_FILMS_PER_PATIENT)}
    links, templated = patient_links(at_limit)
    assert len(links) == MAX_FILMS_PER_PATIENT - 1 and templated == 0
    clusters = lookalike_components(sorted(at_limit), links)
    assert len(clusters) == 1


def test_visit_links_join_components_only_with_link_visits():
    """Verified visits (``curation.lookalikes.visits``) are counted always and joined only when the
    curator asks (``--link-visits``): without it the components are the hash rule's."""
    rng = np.random.default_rng(3)
    films = {f: SourceRecord(f"{f}.jpg", Kind.image, f) for f in ("a", "b", "c")}
    hashes = Hashes.from_views({f: {v: _random_code(rng) for v in View} for f in films})
    visit = [Link("a", "c", "visit", inliers=140)]
    apart = lookalike_clusters(films, hashes, {}, LOOKALIKE_DISTANCE, visit)
    assert [c.film_ids for c in apart.clusters] == [("a",), ("b",), ("c",)]
    assert apart.visit_links == visit and not apart.visits_linked
    joined = lookalike_clusters(films, hashes, {}, LOOKALIKE_DISTANCE, visit, link_visits=True)
    assert [c.film_ids for c in joined.clusters] == [("a", "c"), ("b",)]
    assert joined.visits_linked


def test_copies_dropped_under_another_frame_join_no_films_by_their_own_hash():
    """Four distinct films, each with a padded copy dropped in its favour: the copies' hashes
    are alike (the black border dominates), the films' are not. Components come from what
    the kept films look like; a copy of the same frame still passes its links on."""
    rng = np.random.default_rng(4)
    kept = ("a", "b", "c", "d", "x")
    border = _random_code(rng)
    hashes = {f: {v: _random_code(rng) for v in View} for f in (*kept, "pa", "pb", "pc", "pd")}
    for n, padded in enumerate(("pa", "pb", "pc", "pd")):
        hashes[padded][View.identity] = _flip(border, 3 * n)
    hashes["n"] = {v: _random_code(rng) for v in View}
    hashes["n"][View.identity] = _flip(hashes["x"][View.identity], LOOKALIKE_DISTANCE)
    films = {f: SourceRecord(f"{f}.jpg", Kind.image, f) for f in kept}
    kept_as = {"pa": "a", "pb": "b", "pc": "c", "pd": "d", "n": "x"}
    padded = frozenset({"pa", "pb", "pc", "pd"})
    every = Hashes.from_views(hashes)
    joined = lookalike_clusters(films, every, kept_as, LOOKALIKE_DISTANCE)
    assert joined.clusters[0].film_ids == ("a", "b", "c", "d")  # what the old rule did
    found = lookalike_clusters(films, every, kept_as, LOOKALIKE_DISTANCE, reframed=padded)
    assert [c.film_ids for c in found.clusters] == [("a",), ("b",), ("c",), ("d",), ("x",)]
    assert not any({link.first, link.second} & padded for link in found.links)
    # A same-frame copy's hash is the picture's: "n" links to "x", kept in its place anyway.
    assert any({link.first, link.second} == {"n", "x"} for link in found.links)


def test_a_component_holds_its_fields_and_nothing_per_film_beside_them():
    """A build holds one component per kept film no link joins, until the dataset is
    written: each holds its fields in slots, no per-instance dictionary beside them (what a
    traced count shows depends on the interpreter's free lists; the layout does not)."""
    films = [f"{10_000 + n}1" for n in range(2000)]
    clusters = lookalike_components(films, [])
    assert len(clusters) == len(films)
    for held in (clusters[0], Link("a", "b", "patient")):
        assert not hasattr(held, "__dict__"), type(held).__name__
