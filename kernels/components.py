"""Connected components and the pair expansion of component closures.

:func:`connected_components` labels every vertex with the smallest vertex of its
undirected component: with SciPy on the CPU, or by hook-and-shortcut label propagation
in plain array operations (the GPU path).  :func:`pairs` then materialises, for elements
sorted by ``(group, part)``, every pair of elements in one group (optionally only pairs
from different parts), as :func:`kernels.join.expand` does for join runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .backend import INDEX, Backend
from .join import expand

METHODS = ("auto", "scipy", "array")


def connected_components(be: Backend, src: Any, dst: Any, n: int, method: str = "auto") -> Any:
    """Label of every vertex ``0..n-1``: the smallest vertex of its undirected component.

    Edges are ``(src[k], dst[k])``; self-loops and duplicates are allowed.  ``method`` is
    ``scipy`` (SciPy's csgraph on the host), ``array`` (:func:`hook_and_shortcut`) or
    ``auto`` (``scipy`` on the CPU, ``array`` on the GPU).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: expected one of {METHODS}")
    if method == "auto":
        method = "array" if be.is_gpu else "scipy"
    if method == "array":
        return hook_and_shortcut(be, src, dst, n)[0]
    return be.asarray(_scipy_components(be.to_host(src), be.to_host(dst), n))


def _scipy_components(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """SciPy's component labels, renamed to the smallest vertex of each component."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components as csgraph_components

    if n == 0:
        return np.zeros(0, dtype=INDEX)
    ones = np.ones(len(src), dtype=np.int8)
    graph = coo_matrix((ones, (src, dst)), shape=(n, n)).tocsr()
    _, comp = csgraph_components(graph, directed=False)
    order = np.argsort(comp, kind="stable")  # vertices by label, ascending within one
    sc = comp[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(sc[1:], sc[:-1], out=starts[1:])
    first = order[starts]  # the smallest vertex of each label (np.unique is hash-based)
    return first.astype(INDEX)[comp]


def hook_and_shortcut(be: Backend, src: Any, dst: Any, n: int) -> tuple[Any, int]:
    """Minimum-label components by hooking and pointer jumping; returns (labels, rounds).

    Each round hooks, for every edge between two different trees, the larger root under
    the smaller (a scatter-min, so ``parent[v] <= v`` and no cycle can form), then jumps
    pointers until every vertex points at its root.  Edges are replaced by their root
    pairs and dropped once inside one tree.  Every tree that is not a local minimum among
    its neighbours hooks, so the number of trees shrinks geometrically in practice.
    """
    xp = be.xp
    parent = xp.arange(n, dtype=INDEX)
    a, b = src.astype(INDEX, copy=False), dst.astype(INDEX, copy=False)
    rounds = 0
    while len(a):
        ra, rb = parent[a], parent[b]  # roots: every vertex points at its root here
        keep = ra != rb
        a, b = xp.minimum(ra, rb)[keep], xp.maximum(ra, rb)[keep]
        if len(a) == 0:
            break
        rounds += 1
        _scatter_min(be, parent, b, a)
        parent = pointer_jump(be, parent)
    return parent, rounds


def _scatter_min(be: Backend, target: Any, index: Any, values: Any) -> None:
    """``target[index[k]] = min(target[index[k]], values[k])`` for all k, in place."""
    if be.is_gpu:
        # CuPy's atomic min has no int64 kernel; labels are non-negative, so uint64
        # orders them identically (the view shares target's memory).
        u64 = be.xp.uint64
        be.xp.minimum.at(target.view(u64), index, values.view(u64))
    else:
        np.minimum.at(target, index, values)


def pointer_jump(be: Backend, parent: Any) -> Any:
    """Replace ``parent`` by ``parent[parent]`` until every vertex points at a root."""
    xp = be.xp
    while True:
        grand = parent[parent]
        if bool(xp.all(grand == parent)):
            return parent
        parent = grand


def _run_bounds(be: Backend, *cols: Any) -> tuple[Any, Any]:
    """For each position of lexicographically sorted ``cols``: start and end of its run."""
    xp = be.xp
    n = len(cols[0])
    first = xp.zeros(n, dtype=bool)
    if n:
        first[0] = True
    for c in cols:
        first[1:] |= c[1:] != c[:-1]
    heads = xp.flatnonzero(first).astype(INDEX)
    run = xp.cumsum(first) - 1
    tails = xp.concatenate([heads[1:], xp.asarray([n], dtype=INDEX)])
    return heads[run], tails[run]


def _partner_ranges(be: Backend, group: Any, part: Any | None) -> tuple[Any, Any]:
    """Partner ranges as (lo, count) with two ranges per element (the second may be empty):
    ``[group_start, part_start)`` and ``[part_end, group_end)``; without ``part`` the whole
    group and an empty range."""
    xp = be.xp
    gs, ge = _run_bounds(be, group)
    if part is None:
        ps = pe = ge
    else:
        ps, pe = _run_bounds(be, group, part)
    lo = xp.stack([gs, pe], axis=1).ravel()
    cnt = xp.stack([ps - gs, ge - pe], axis=1).ravel()
    return lo, cnt


def pair_counts(be: Backend, group: Any, part: Any | None = None) -> Any:
    """Number of partners of each element: same group (itself included) when ``part`` is
    None, else same group and a different part.  Input sorted by ``(group, part)``."""
    _, cnt = _partner_ranges(be, group, part)
    return cnt.reshape(-1, 2).sum(axis=1).astype(INDEX)


def _expand_pairs(be: Backend, lo: Any, cnt: Any, start: int, stop: int) -> tuple[Any, Any]:
    """Pairs of elements ``[start, stop)`` from the two-ranges-per-element layout."""
    seg, j = expand(be, lo, cnt, 2 * start, 2 * stop)
    return seg // 2, j


def pairs(be: Backend, group: Any, part: Any | None = None, start: int = 0,
          stop: int | None = None) -> tuple[Any, Any]:
    """All (i, j) with i in ``[start, stop)`` and j a partner of i (see :func:`pair_counts`),
    i ascending and j ascending per i."""
    n = len(group)
    stop = n if stop is None else min(stop, n)
    start = max(0, min(start, stop))
    lo, cnt = _partner_ranges(be, group, part)
    return _expand_pairs(be, lo, cnt, start, stop)


def iter_pairs(be: Backend, group: Any, part: Any | None = None, budget_rows: int = 1 << 25
               ) -> Iterator[tuple[Any, Any]]:
    """:func:`pairs` of all elements in chunks of consecutive elements, each of at most
    ``budget_rows`` rows (an element with more partners than that is a chunk of its own).
    Chunks without rows are skipped."""
    n = len(group)
    if n == 0:
        return
    budget_rows = max(1, int(budget_rows))
    lo, cnt = _partner_ranges(be, group, part)
    ends = be.to_host(be.xp.cumsum(cnt.reshape(-1, 2).sum(axis=1)))
    total = int(ends[-1])
    start, done = 0, 0
    while start < n and done < total:
        stop = int(np.searchsorted(ends, done + budget_rows, side="right"))
        stop = max(stop, start + 1)
        if int(ends[stop - 1]) > done:
            yield _expand_pairs(be, lo, cnt, start, stop)
        start, done = stop, int(ends[stop - 1])
