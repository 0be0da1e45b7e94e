"""Group-and-count: distinct keys with their multiplicities (or summed weights).

Derivation counting is exactly this: the multiplicity of each output row of a join,
before deduplication.
"""

from __future__ import annotations

from typing import Any

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
