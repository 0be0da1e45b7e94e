"""Numba kernels for CPU hot paths that array operations serve poorly.

Used only on the NumPy backend, for large inputs; each has an array-operation fallback
of identical semantics in the calling kernel (and the GPU path never comes here).
"""

from __future__ import annotations

import numpy as np

try:
    import numba
    from numba import njit, prange

    AVAILABLE = True
except ImportError:  # pragma: no cover - numba is a dependency, but stay importable
    AVAILABLE = False

MIN_ROWS = 1 << 17  # below this the NumPy path is as fast (and needs no compilation)

if AVAILABLE:

    @njit(parallel=True, cache=True, nogil=True)
    def _isin_sorted_merge(needles: np.ndarray, hay: np.ndarray, out: np.ndarray,
                           chunks: int) -> None:
        n = needles.shape[0]
        m = hay.shape[0]
        step = (n + chunks - 1) // chunks
        for c in prange(chunks):
            s = c * step
            e = min(n, s + step)
            if s >= e:
                continue
            j = np.searchsorted(hay, needles[s])
            for i in range(s, e):
                v = needles[i]
                while j < m and hay[j] < v:
                    j += 1
                out[i] = j < m and hay[j] == v


def isin_sorted_merge(needles: np.ndarray, hay: np.ndarray) -> np.ndarray:
    """Membership of sorted needles in a sorted haystack by a parallel linear merge."""
    out = np.empty(needles.shape[0], dtype=np.bool_)
    _isin_sorted_merge(np.ascontiguousarray(needles), np.ascontiguousarray(hay), out,
                       4 * numba.get_num_threads())
    return out


if AVAILABLE:

    @njit(parallel=True, cache=True, nogil=True)
    def _expand(lo: np.ndarray, counts: np.ndarray, starts: np.ndarray, base: int,
                probe_idx: np.ndarray, build_pos: np.ndarray) -> None:
        for i in prange(counts.shape[0]):
            s = starts[i]
            b = lo[i]
            for k in range(counts[i]):
                probe_idx[s + k] = base + i
                build_pos[s + k] = b + k


def expand(lo: np.ndarray, counts: np.ndarray, base: int, total: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Join expansion (see kernels.join.expand) as a parallel loop over probe rows."""
    starts = np.cumsum(counts) - counts
    probe_idx = np.empty(total, dtype=np.int64)
    build_pos = np.empty(total, dtype=np.int64)
    _expand(np.ascontiguousarray(lo), np.ascontiguousarray(counts), starts, base,
            probe_idx, build_pos)
    return probe_idx, build_pos
