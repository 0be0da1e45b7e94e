"""Group-and-count: distinct keys with their multiplicities (or summed weights).

Derivation counting is exactly this: the multiplicity of each output row of a join,
before deduplication.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import cpu_numba
from .backend import INDEX, Backend
from .sets import sort_with_order, unique_sorted_positions


def group_count(be: Backend, keys: Any, weights: Any | None = None) -> tuple[Any, Any, Any]:
    """Sorted distinct keys, the index of one row per key, and its count or weight sum."""
    xp = be.xp
    n = len(keys)
    if n == 0:
        z = xp.zeros(0, dtype=INDEX)
        return z, z, z
    sk, order = sort_with_order(be, keys)
    starts = unique_sorted_positions(be, sk)
    if weights is None:
        ends = xp.concatenate([starts[1:], xp.asarray([n], dtype=INDEX)])
        counts = ends - starts
    else:
        cw = xp.cumsum(weights[order].astype(INDEX))
        ends = xp.concatenate([starts[1:], xp.asarray([n], dtype=INDEX)]) - 1
        before = xp.where(starts > 0, cw[xp.maximum(starts - 1, 0)], 0)
        counts = cw[ends] - before
    return sk[starts], order[starts], counts.astype(INDEX)


SMALL_GROUPS = 64  # at most this many groups, or none longer: array passes, no compiling


def sequential_sums(be: Backend, values: Any, weights: Any, starts: Any, ends: Any,
                    ftype: Any = None, mean: bool = False) -> tuple[Any, Any]:
    """Per segment ``[starts[g], ends[g])``: the sum of its values added one at a time, in
    order, each ``weights[i]`` times, in the values' float type (float32 or float64), and
    the number of additions counted in that type too: Soufflé's float ``sum`` and
    ``mean`` (its interpreter's ``evalAggregate`` accumulates tuple by tuple in RamFloat;
    a float32 count stops at 2^24).  Pairwise or double-precision sums round otherwise.

    Few groups: one sequential cumulative sum per group; groups all short: one array
    pass per position within a group; else a compiled loop per group (Numba, on the
    host: a device's values are copied there and back).

    ``ftype``: the float type to add in, the values converted to it on the host, and the
    sums (``mean``: divided by the counts, there too) returned as float64: a NaN then
    keeps its sign and payload as x86 keeps them, where a GPU's conversions and division
    give its one positive NaN (Soufflé's outputs come from x86 builds)."""
    v = be.to_host(values)
    if ftype is not None:
        v = v.astype(ftype)
    w = be.to_host(weights).astype(np.int64)
    s, e = be.to_host(starts).astype(np.int64), be.to_host(ends).astype(np.int64)
    ft = v.dtype.type
    if len(v) and bool((w != 1).any()):  # each instance as often as it is derived
        v = np.repeat(v, w)
        cw = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(w)])
        s, e = cw[s], cw[e]
    lengths = e - s
    counts = np.zeros(len(s), dtype=v.dtype)
    sums = np.zeros(len(s), dtype=v.dtype)
    if not len(s):
        return be.asarray(sums, dtype=v.dtype), be.asarray(counts, dtype=v.dtype)
    longest = int(lengths.max())
    if len(s) <= SMALL_GROUPS:
        for g in range(len(s)):  # per group, not per tuple
            if lengths[g]:
                sums[g] = np.cumsum(v[s[g]:e[g]], dtype=v.dtype)[-1]
                counts[g] = np.cumsum(np.ones(lengths[g], dtype=v.dtype))[-1]
    elif longest <= SMALL_GROUPS or not cpu_numba.AVAILABLE:
        one = ft(1)
        for k in range(longest):  # per position within a group
            live = lengths > k
            sums[live] = sums[live] + v[s[live] + k]
            counts[live] = counts[live] + one
    else:
        cpu_numba.sequential_sums(v, s, e, sums, counts)
    if ftype is not None:
        if mean:
            with np.errstate(all="ignore"):
                sums = sums / counts
        return (be.asarray(sums.astype(np.float64), dtype=np.float64),
                be.asarray(counts, dtype=v.dtype))
    return be.asarray(sums, dtype=v.dtype), be.asarray(counts, dtype=v.dtype)
