"""kernels.components against plain-Python judges: union-find and brute-force pair lists."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gpu_engine.kernels.backend import get_backend
from gpu_engine.kernels.components import (
    connected_components,
    hook_and_shortcut,
    iter_pairs,
    pair_counts,
    pairs,
)
from hypothesis import given, settings
from hypothesis import strategies as st

# ---------------------------------------------------------------------------- judges


def union_find_labels(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """Smallest vertex of each vertex's component, by a textbook union-find."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)  # the root stays the smallest vertex
    return [find(x) for x in range(n)]


def brute_pairs(group: list[int], part: list[int] | None) -> list[tuple[int, int]]:
    """Every (i, j) with j in i's group (and, with parts, in a different part)."""
    n = len(group)
    return [(i, j) for i in range(n) for j in range(n)
            if group[i] == group[j] and (part is None or part[i] != part[j])]


# ------------------------------------------------------------------ graph generators


def random_graph(rng: np.random.Generator, n: int, m: int) -> list[tuple[int, int]]:
    """m random edges plus some self-loops and duplicated edges."""
    if n == 0:
        return []
    edges = [tuple(e) for e in rng.integers(0, n, size=(m, 2)).tolist()]
    loops = [(v, v) for v in rng.integers(0, n, size=max(1, m // 10)).tolist()]
    dups = edges[: m // 5]
    out = edges + loops + dups
    rng.shuffle(out)
    return out


def path_graph(n: int, perm: np.ndarray | None = None) -> list[tuple[int, int]]:
    """A path through vertices perm[0], perm[1], ... (0, 1, ... without perm)."""
    order = np.arange(n) if perm is None else perm
    return list(zip(order[:-1].tolist(), order[1:].tolist()))


def small_components(rng: np.random.Generator, n: int) -> list[tuple[int, int]]:
    """Pairs, triangles and isolated vertices under a random relabelling."""
    perm = rng.permutation(n)
    edges = []
    for k in range(0, n - 2, 5):  # blocks of 5: a pair, a triangle
        edges += [(k, k + 1), (k + 2, k + 3), (k + 3, k + 4), (k + 4, k + 2)]
    edges = [(int(perm[u]), int(perm[v])) for u, v in edges if max(u, v) < n]
    return edges


def graph_cases() -> list[tuple[str, int, list[tuple[int, int]]]]:
    rng = np.random.default_rng(20240611)
    cases: list[tuple[str, int, list[tuple[int, int]]]] = [
        ("empty", 0, []),
        ("one-vertex", 1, []),
        ("one-loop", 1, [(0, 0)]),
        ("no-edges", 17, []),
        ("only-loops", 9, [(v, v) for v in range(9)] * 2),
    ]
    for n, m in [(2, 1), (10, 4), (50, 30), (200, 120), (200, 400), (1000, 700), (3000, 6000)]:
        cases.append((f"random-{n}-{m}", n, random_graph(rng, n, m)))
    cases.append(("path-ordered", 10_000, path_graph(10_000)))
    cases.append(("path-reversed", 10_000, path_graph(10_000, np.arange(10_000)[::-1])))
    cases.append(("path-shuffled", 10_000, path_graph(10_000, rng.permutation(10_000))))
    cases.append(("star-centre-0", 500, [(0, v) for v in range(1, 500)]))
    cases.append(("star-centre-last", 500, [(v, 499) for v in range(499)]))
    c = int(rng.integers(0, 500))
    cases.append(("star-centre-random", 500, [(c, v) for v in rng.permutation(500).tolist()]))
    cases.append(("small-components", 3000, small_components(rng, 3000)))
    return cases


GRAPHS = graph_cases()
GRAPH_IDS = [name for name, _, _ in GRAPHS]


def _edge_arrays(be, edges):
    arr = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return be.asarray(arr[:, 0]), be.asarray(arr[:, 1])


# ------------------------------------------------------------- connected components


@pytest.mark.parametrize("method", ["auto", "scipy", "array"])
@pytest.mark.parametrize("case", GRAPHS, ids=GRAPH_IDS)
def test_components_match_union_find(device, method, case):
    _, n, edges = case
    be = get_backend(device)
    src, dst = _edge_arrays(be, edges)
    labels = connected_components(be, src, dst, n, method=method)
    assert labels.dtype == np.int64 and labels.shape == (n,)
    assert be.to_host(labels).tolist() == union_find_labels(n, edges)


@pytest.mark.parametrize("case", [g for g in GRAPHS if g[1] >= 500],
                         ids=[g[0] for g in GRAPHS if g[1] >= 500])
def test_hook_and_shortcut_rounds_are_logarithmic(device, case):
    _, n, edges = case
    be = get_backend(device)
    src, dst = _edge_arrays(be, edges)
    labels, rounds = hook_and_shortcut(be, src, dst, n)
    assert be.to_host(labels).tolist() == union_find_labels(n, edges)
    assert rounds <= 2 * math.ceil(math.log2(n)) + 2


def test_components_unknown_method():
    be = get_backend("cpu")
    z = be.asarray([])
    with pytest.raises(ValueError):
        connected_components(be, z, z, 3, method="bfs")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_components_random_small_graphs(device, data):
    n = data.draw(st.integers(0, 25))
    vertex = st.integers(0, max(n - 1, 0))
    edges = data.draw(st.lists(st.tuples(vertex, vertex), max_size=40)) if n else []
    be = get_backend(device)
    src, dst = _edge_arrays(be, edges)
    want = union_find_labels(n, edges)
    methods = ["array"] + ([] if be.is_gpu else ["scipy"])
    for method in methods:
        got = connected_components(be, src, dst, n, method=method)
        assert be.to_host(got).tolist() == want


# ------------------------------------------------------------------------ pairs


@st.composite
def groupings(draw) -> tuple[list[int], list[int] | None]:
    """Elements sorted by (group, part); part None half of the time."""
    rows = draw(st.lists(st.tuples(st.integers(-3, 6), st.integers(0, 3)), max_size=30))
    rows.sort()
    group = [g for g, _ in rows]
    part = [p for _, p in rows] if draw(st.booleans()) else None
    return group, part


def _arrays(be, group, part):
    return be.asarray(group), None if part is None else be.asarray(part)


def _as_pairs(be, ij) -> list[tuple[int, int]]:
    i, j = (be.to_host(a) for a in ij)
    assert i.dtype == np.int64 and j.dtype == np.int64 and len(i) == len(j)
    return list(zip(i.tolist(), j.tolist()))


@settings(max_examples=100, deadline=None)
@given(gp=groupings(), data=st.data())
def test_pairs_match_brute_force(device, gp, data):
    group, part = gp
    be = get_backend(device)
    g, p = _arrays(be, group, part)
    want = brute_pairs(group, part)
    counts = be.to_host(pair_counts(be, g, p)).tolist()
    assert counts == [sum(1 for i, _ in want if i == k) for k in range(len(group))]
    assert _as_pairs(be, pairs(be, g, p)) == want
    n = len(group)
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    assert _as_pairs(be, pairs(be, g, p, start, stop)) == [
        (i, j) for i, j in want if start <= i < stop]


@settings(max_examples=100, deadline=None)
@given(gp=groupings(), budget=st.integers(1, 12))
def test_iter_pairs_chunks(device, gp, budget):
    group, part = gp
    be = get_backend(device)
    g, p = _arrays(be, group, part)
    chunks = [_as_pairs(be, c) for c in iter_pairs(be, g, p, budget_rows=budget)]
    assert [ij for c in chunks for ij in c] == brute_pairs(group, part)
    for c in chunks:
        assert c, "empty chunks are not yielded"
        if len(c) > budget:
            assert len({i for i, _ in c}) == 1, "only a single element may exceed the budget"


@pytest.mark.parametrize("with_part", [False, True])
def test_pairs_edge_cases(device, with_part):
    be = get_backend(device)
    empty = be.asarray([])
    part = empty if with_part else None
    assert be.to_host(pair_counts(be, empty, part)).tolist() == []
    assert _as_pairs(be, pairs(be, empty, part)) == []
    assert list(iter_pairs(be, empty, part, budget_rows=1)) == []
    # singleton groups: each element its own partner without parts, none with parts
    group = [0, 3, 4, 9]
    g, p = _arrays(be, group, [1, 0, 2, 0] if with_part else None)
    want = [] if with_part else [(k, k) for k in range(4)]
    assert _as_pairs(be, pairs(be, g, p)) == want
    assert [ij for c in iter_pairs(be, g, p, budget_rows=1) for ij in _as_pairs(be, c)] == want


def test_iter_pairs_large_group_own_chunk(device):
    be = get_backend(device)
    group = [0] * 6 + [1] * 2 + [2]
    g = be.asarray(group)
    chunks = [_as_pairs(be, c) for c in iter_pairs(be, g, budget_rows=4)]
    assert [len(c) for c in chunks] == [6] * 6 + [4, 1]
    assert [ij for c in chunks for ij in c] == brute_pairs(group, None)
