"""Synthetic data generators for the benchmarks (vectorised NumPy, seeded)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["dag_r", "example1", "sspe", "transitive_closure_size", "related_places",
           "RelatedPlaces", "related_places_counts"]


def dag_r(n: int = 10_000, m: int = 100_000, seed: int = 0) -> np.ndarray:
    """DAG-R: a random DAG with ``n`` nodes and ``m`` distinct edges ``(u, v)``, ``u < v``.

    Edges are drawn uniformly among all ``n (n - 1) / 2`` forward pairs, without
    replacement, from a seeded generator. Returns an ``(m, 2)`` int64 array sorted by
    ``(u, v)``. (DAG-R of Hu, Motik and Horrocks, AAAI 2019, uses 10k nodes, 100k edges.)
    """
    if n < 2:
        raise ValueError("n must be at least 2")
    total = n * (n - 1) // 2
    if not 0 <= m <= total:
        raise ValueError(f"m={m} edges do not fit a DAG with n={n} nodes (max {total})")
    rng = np.random.default_rng(seed)
    if m > total // 2:
        # Dense: draw pair indices directly, without replacement.
        keys = np.sort(rng.choice(total, size=m, replace=False))
        return _unrank_pairs(keys, n)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < m:
        need = m - keys.size
        draw = int(need * 1.2) + 16
        u = rng.integers(0, n, size=draw, dtype=np.int64)
        v = rng.integers(0, n, size=draw, dtype=np.int64)
        ok = u != v
        lo = np.minimum(u[ok], v[ok])
        hi = np.maximum(u[ok], v[ok])
        fresh = np.setdiff1d(lo * n + hi, keys, assume_unique=False)
        if fresh.size > need:
            fresh = rng.choice(fresh, size=need, replace=False)
        keys = np.union1d(keys, fresh)
    edges = np.empty((m, 2), dtype=np.int64)
    edges[:, 0] = keys // n
    edges[:, 1] = keys % n
    return edges


def _unrank_pairs(ranks: np.ndarray, n: int) -> np.ndarray:
    """Map ranks in ``[0, n(n-1)/2)`` to pairs ``(u, v)``, ``u < v``, in lexicographic order."""
    # Row u starts at rank start(u) = u*n - u*(u+1)/2; find u by searchsorted on starts.
    u_all = np.arange(n - 1, dtype=np.int64)
    starts = u_all * n - u_all * (u_all + 1) // 2
    u = np.searchsorted(starts, ranks, side="right") - 1
    v = ranks - starts[u] + u + 1
    return np.stack([u, v], axis=1).astype(np.int64)


def transitive_closure_size(edges: np.ndarray, n: int | None = None) -> int:
    """Number of pairs in the transitive closure of a DAG whose edges go from low to high ids.

    Bitset dynamic programming in reverse id order (a loop over nodes, each step a vectorised
    OR over the node's successors); meant for checking generator output, not for benchmarks.
    """
    if edges.size == 0:
        return 0
    if n is None:
        n = int(edges.max()) + 1
    if np.any(edges[:, 0] >= edges[:, 1]):
        raise ValueError("edges must go from lower to higher node ids")
    words = (n + 63) // 64
    reach = np.zeros((n, words), dtype=np.uint64)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    src = edges[order, 0]
    dst = edges[order, 1]
    bounds = np.searchsorted(src, np.arange(n + 1))
    bit = np.left_shift(np.uint64(1), (dst % 64).astype(np.uint64))
    for u in range(n - 1, -1, -1):
        lo, hi = bounds[u], bounds[u + 1]
        if lo == hi:
            continue
        succ = dst[lo:hi]
        row = np.bitwise_or.reduce(reach[succ], axis=0)
        np.bitwise_or.at(row, succ // 64, bit[lo:hi])
        reach[u] = row
    return int(np.unpackbits(reach.view(np.uint8)).sum())


def sspe(n: int = 100_000, m: int = 1_000_000, max_length: int = 10,
         seed: int = 0) -> np.ndarray:
    """SSPE edges (paper 000 §6): DAG-R ``(n, m, seed)`` with a length in ``[1, max_length]``.

    Returns an ``(m, 3)`` int64 array of ``B(u, v, length)`` rows, ``u < v``. Lengths are
    drawn uniformly from a generator seeded with ``seed + 1``. Since the graph is acyclic,
    the set of path lengths from any source is finite; from source 0 of the 100k/1M graph
    with lengths 1..10 the program derives about 4.3 M facts ``D(node, length)``.
    """
    if max_length < 1:
        raise ValueError("max_length must be at least 1")
    edges = dag_r(n, m, seed)
    rng = np.random.default_rng(seed + 1)
    lengths = rng.integers(1, max_length + 1, size=len(edges), dtype=np.int64)
    return np.column_stack([edges, lengths])


def example1(n: int) -> np.ndarray:
    """Paper 000, Example 1: ``E = {R(a_i, b), R(a_i, c_i) | 1 <= i <= n}`` as numbers.

    ``a_i = i``, ``b = 0`` and ``c_i = n + i``; rows ``R(a_i, b)`` first, then ``R(a_i, c_i)``
    (so ``rows[n:]`` are the facts the paper deletes). Returns a ``(2n, 2)`` int64 array.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    a = np.arange(1, n + 1, dtype=np.int64)
    rb = np.column_stack([a, np.zeros(n, dtype=np.int64)])
    rc = np.column_stack([a, a + n])
    return np.concatenate([rb, rc])


@dataclass(frozen=True)
class RelatedPlaces:
    """Data of the clique benchmark: ``link(x, y)`` rows, ``place(x)`` rows and, per
    vertex id, its component (``-1``: a place with no link)."""

    link: np.ndarray  # (m, 2) int64, distinct, no self-loops
    place: np.ndarray  # (p, 1) int64
    component: np.ndarray  # (n,) int64


def related_places(sizes: Sequence[int] = (300, 500, 800, 1200, 1800, 2500),
                   degree: float = 6.0, place_fraction: float = 0.3, isolated: int = 100,
                   seed: int = 0) -> RelatedPlaces:
    """Explicit facts whose symmetric-transitive closure is a few large cliques.

    Modelled on Claros' ``relatedPlaces``: for each size ``s`` a random connected sparse
    graph on ``s`` vertices, namely a random recursive tree (vertex ``i`` of a random order
    links to a uniformly drawn earlier one) plus ``s * (degree / 2 - 1)`` random extra
    edges (duplicates dropped), so the mean degree is about ``degree``. Each undirected
    edge is one ``link`` fact with a random orientation (``related`` is symmetric by its
    rules). Vertex ids are shuffled over all components; ``isolated`` more vertices have no
    link. A ``place_fraction`` of all vertices are ``place`` facts. Seeded, vectorised per
    component.
    """
    if any(s < 2 for s in sizes):
        raise ValueError("every component needs at least 2 vertices")
    rng = np.random.default_rng(seed)
    n_linked = int(sum(sizes))
    n = n_linked + int(isolated)
    ids = rng.permutation(n).astype(np.int64)
    component = np.full(n, -1, dtype=np.int64)
    parts = []
    start = 0
    for c, s in enumerate(sizes):
        verts = ids[start:start + s]  # already in random order
        component[verts] = c
        child = np.arange(1, s, dtype=np.int64)
        parent = (rng.random(s - 1) * child).astype(np.int64)  # uniform in [0, child)
        extra = max(0, int(round(s * (degree / 2.0 - 1.0))))
        a = rng.integers(0, s, size=extra, dtype=np.int64)
        b = rng.integers(0, s, size=extra, dtype=np.int64)
        keep = a != b
        u = np.concatenate([child, a[keep]])
        v = np.concatenate([parent, b[keep]])
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        key = np.unique(lo * s + hi)  # undirected duplicates dropped
        pairs = np.stack([verts[key // s], verts[key % s]], axis=1)
        flip = rng.random(len(pairs)) < 0.5
        pairs[flip] = pairs[flip][:, ::-1]
        parts.append(pairs)
        start += s
    link = np.concatenate(parts) if parts else np.empty((0, 2), dtype=np.int64)
    link = link[np.lexsort((link[:, 1], link[:, 0]))]
    n_places = int(round(n * place_fraction))
    place = np.sort(rng.choice(n, size=n_places, replace=False)).astype(np.int64)[:, None]
    return RelatedPlaces(link, place, component)


def related_places_counts(link: np.ndarray, place: np.ndarray) -> dict[str, int]:
    """Output facts of the clique program (``benchmarks.programs.RELATED_PLACES``),
    computed without the engine: connected components by SciPy, then per relation.

    ``related`` holds every ordered pair (self-pairs included) of a component of the
    graph ``link``; ``relatedToPlace(x)``: x is related to a place other than itself;
    ``standalone(x)``: a place that is not ``relatedToPlace``.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    place_ids = np.unique(np.asarray(place).reshape(-1))
    verts, inv = np.unique(np.asarray(link).reshape(-1), return_inverse=True)
    inv = inv.reshape(-1, 2)
    k = len(verts)
    if k:
        g = coo_matrix((np.ones(len(inv)), (inv[:, 0], inv[:, 1])), shape=(k, k))
        _, comp = connected_components(g, directed=False)
    else:
        comp = np.empty(0, dtype=np.int64)
    size = np.bincount(comp) if k else np.empty(0, dtype=np.int64)
    is_place = np.isin(verts, place_ids)
    places_in = np.bincount(comp, weights=is_place, minlength=len(size)).astype(np.int64)
    to_place = (places_in[comp] - is_place) >= 1 if k else np.empty(0, dtype=bool)
    related_to_place = int(to_place.sum())
    standalone = len(place_ids) - int((to_place & is_place).sum())
    counts = {"related": int((size.astype(np.int64) ** 2).sum()),
              "relatedToPlace": related_to_place, "standalone": standalone}
    counts["TOTAL"] = sum(counts.values())  # output (IDB) facts, as for the other oracles
    return counts
