"""Equality by rewriting: columnar expansion, queries and explanations over rewritten
relations (issue 13's remaining gaps)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_engine.kernels.backend import get_backend

from gpu_engine.equality_expand import (
    class_index,
    expand_chunks,
    expand_pairwise,
    expand_sorted,
)
from gpu_engine.rowset import RowSet

BE = get_backend("cpu")


def _rows(rng: np.random.Generator, rho: np.ndarray, n: int, k: int, extra: int,
          wide: bool) -> tuple[np.ndarray, ...]:
    reps = np.unique(rho)
    cols = [rng.choice(reps, n) for _ in range(k)]
    hi = (1 << 40) if wide else 50
    cols += [rng.integers(-hi, hi, n) for _ in range(extra)]
    return RowSet.from_columns(BE, tuple(cols), len(cols)).cols


@pytest.mark.parametrize("k,extra,wide", [(1, 1, False), (2, 1, False), (3, 0, False),
                                          (2, 2, True), (1, 0, False), (3, 2, True)])
def test_expansion_matches_pairwise(k: int, extra: int, wide: bool) -> None:
    rng = np.random.default_rng(k * 10 + extra)
    n_ids = 400
    labels = rng.integers(0, 60, n_ids)
    first = np.full(60, n_ids)
    np.minimum.at(first, labels, np.arange(n_ids))
    rho = first[labels].astype(np.int64)  # smallest id of each class
    cols = _rows(rng, rho, 300, k, extra, wide)
    pos = tuple(range(k))
    m, o, s = class_index(BE, rho)
    want = expand_pairwise(BE, cols, pos, m, o, s)
    got = expand_sorted(BE, cols, pos, m, o, s)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    parts = list(expand_chunks(BE, cols, pos, m, o, s, chunk_rows=97))
    assert len(parts) > 1
    joined = tuple(np.concatenate(c) for c in zip(*parts))
    again = RowSet.from_columns(BE, joined, len(joined)).cols
    assert len(joined[0]) == len(want[0])  # distinct already
    assert all(np.array_equal(a, b) for a, b in zip(want, again))


def test_expansion_positions_not_leading() -> None:
    """Domain positions in the middle of the row, non-domain columns around them."""
    rho = np.array([0, 0, 2, 2, 2, 5, 6, 5], dtype=np.int64)
    cols = (np.array([9, 9, 1]), np.array([0, 2, 5]), np.array([3, 4, 4]), np.array([6, 0, 2]))
    m, o, s = class_index(BE, rho)
    want = expand_pairwise(BE, cols, (1, 3), m, o, s)
    got = expand_sorted(BE, cols, (1, 3), m, o, s)
    assert len(got[0]) == 2 * 1 + 3 * 2 + 2 * 3
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
