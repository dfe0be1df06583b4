"""Step 6, look-alikes: films within Hamming distance 30 of 512 are linked; clusters are the
connected components of that graph, so no chain of look-alikes can cross a split."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from curation.hash_films import Hashes
from curation.hashing import View
from curation.pairs import as_codes, self_pairs

LOOKALIKE_DISTANCE = 30


@dataclass(frozen=True)
class Cluster:
    """A look-alike component, named by its smallest film id."""

    cluster_id: str
    film_ids: tuple[str, ...]


def lookalike_edges(
    hashes: Hashes, max_distance: int = LOOKALIKE_DISTANCE
) -> list[tuple[str, str, int]]:
    """Every pair of films at distance <= ``max_distance`` (exact search), sorted."""
    ids = sorted(hashes)
    codes = as_codes([hashes[i][View.identity] for i in ids])
    return [(ids[i], ids[j], d) for i, j, d in self_pairs(codes, max_distance).tolist()]


def lookalike_components(film_ids: list[str], edges: list[tuple[str, str, int]]) -> list[Cluster]:
    """Connected components (singletons included), largest first, then by id."""
    graph = nx.Graph()
    graph.add_nodes_from(film_ids)
    graph.add_edges_from((a, b) for a, b, _ in edges)
    clusters = [Cluster(min(c), tuple(sorted(c))) for c in nx.connected_components(graph)]
    return sorted(clusters, key=lambda c: (-len(c.film_ids), c.cluster_id))
