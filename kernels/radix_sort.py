"""LSD radix sort of int64 keys on the CPU (Numba), in place of NumPy's comparison sort.

Sorting is the bulk of materialisation on the CPU: every round deduplicates its
derivations by a sort of packed keys, and join indexes on later columns are built by an
argsort (``sets.sort_with_order``: a value sort of ``key << b | row``).  NumPy's sort
of int64 on the 2-core machine takes 54 ms for 10^6 keys and 3.6 s for 4*10^7 (no
vectorised path is taken there).  Keys are dictionary ids or packs of them, so their
range is known and small: a least-significant-digit radix sort of ``key - min`` in
digits of at most :data:`DIGIT_BITS` bits needs ``ceil(bits / DIGIT_BITS)`` linear
passes, and a pass whose digit is the same for every key is skipped.  Measured there
(random keys): 2.7 -> 0.5 ms at 65,536 keys of 20 bits, 12.7 -> 1.6 ms at 274,699 of
19 bits, 54 -> 14 ms (one thread; 7.5 ms on two) at 10^6 of 40 bits, 3.6 -> 1.1 s
(0.73 s on two) at 4*10^7 of 50 bits.

Serial below :data:`PARALLEL_MIN` keys (one pass builds every digit's histogram), then
chunk-parallel (per pass: per-chunk histograms, then each chunk scatters its keys to its
own slots of every bucket, so the passes stay stable).  A value sort: stability of
equal keys is moot, and ``sets.sort_with_order`` breaks ties by the row number packed
into the key.

Used through :func:`use` (NumPy backend, at least :data:`MIN_ROWS` keys, the key range
under 2^63): Numba's first call in a process costs about 0.3 s (see
``cpu_numba.FIRST_USE_ROWS``), so the sort runs compiled once the process has loaded
Numba for other kernels, or for an input that large by itself.
``GPU_ENGINE_RADIX_SORT=0`` keeps NumPy's sort (benchmarks compare the two).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import cpu_numba as _numba
from . import cpu_small as _small
from .numba_cache import CACHE

try:
    from numba import njit, prange

    AVAILABLE = True
except ImportError:  # pragma: no cover - numba is a dependency
    AVAILABLE = False

MIN_ROWS = 1 << 13  # below this NumPy's sort is as fast
PARALLEL_MIN = 1 << 20  # from this many keys the passes run chunk-parallel
DIGIT_BITS = 11  # a digit's histogram (2,048 counters) stays in the first-level cache
DENSE_SPAN = 2  # keys spanning at most this many values a key: a counting sort


def use(be: Any, n: int) -> bool:
    """Whether :func:`sort` serves ``n`` keys on backend ``be`` (module docstring)."""
    if be.is_gpu or n < MIN_ROWS or not AVAILABLE:
        return False
    if os.environ.get("GPU_ENGINE_RADIX_SORT", "1") == "0":
        return False
    return _numba.use(be, n) or _numba.warm() or _small.on(be)


def sort(keys: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """``keys`` (int64) sorted; ``overwrite``: ``keys`` may be used as a buffer (its
    contents are then undefined).  Falls back to NumPy's sort when the keys' range does
    not fit 63 bits."""
    n = len(keys)
    if n < 2:
        return keys.copy() if not overwrite else keys
    lo, hi = int(keys.min()), int(keys.max())
    bits = (hi - lo).bit_length()
    if bits > 63:
        if overwrite:
            keys.sort()
            return keys
        return np.sort(keys)
    if bits == 0:
        return keys if overwrite else keys.copy()
    passes = (bits + DIGIT_BITS - 1) // DIGIT_BITS
    digit = (bits + passes - 1) // passes
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    serial = n < PARALLEL_MIN
    mask = (1 << digit) - 1
    hist = _histograms(keys, lo, passes, digit) if serial else None
    chunks = 4 * _numba.threads()
    step = (n + chunks - 1) // chunks
    src, spare = keys, (keys if overwrite else None)  # the buffers the passes write in turn
    out = np.empty(n, dtype=np.int64)
    for p in range(passes):
        shift = p * digit
        if serial:
            h = hist[p]  # type: ignore[index]
            if h.max() == n:  # one digit value for every key: nothing moves
                continue
        else:
            h = _chunk_histograms(src, lo, shift, digit, chunks, step)
            if h.sum(axis=0).max() == n:
                continue
        if src is out:
            if spare is None:
                spare = np.empty(n, dtype=np.int64)
            dst = spare
        else:
            dst = out
        if serial:
            _scatter(src, dst, _starts(h), lo, shift, mask)
        else:
            _chunk_scatter(src, dst, _chunk_starts(h), lo, shift, mask, step)
        src = dst
    return src  # some pass ran: the keys' smallest and largest differ in some digit


def dense(n: int, span: int) -> bool:
    """Whether ``n`` keys spanning ``span`` values (largest - smallest + 1) are sorted
    with their order by :func:`counting_sort_with_order`."""
    return 0 < span <= DENSE_SPAN * n


def counting_sort_with_order(keys: np.ndarray, lo: int, span: int
                             ) -> tuple[np.ndarray, np.ndarray]:
    """``keys`` (int64, all in ``[lo, lo + span)``) sorted, and the stable permutation
    that sorts them, by a counting sort: a histogram, its prefix sums, one scatter of
    the row numbers and a fill of the sorted keys, O(n + span).  For keys of a dense
    range (dictionary ids in a later column: 1.27 M values of 326 k ids, 7 ms against
    14-17 ms for the radix sort of ``key << b | row`` in an update's process)."""
    return _counting(np.ascontiguousarray(keys, dtype=np.int64), lo, span)


if AVAILABLE:

    @njit(cache=CACHE, nogil=True)
    def _counting(keys: np.ndarray, lo: int, span: int) -> tuple[np.ndarray, np.ndarray]:
        n = keys.shape[0]
        at = np.zeros(span + 1, dtype=np.int64)
        for i in range(n):
            at[keys[i] - lo + 1] += 1
        for v in range(span):  # at[v]: where the keys of value lo + v start
            at[v + 1] += at[v]
        order = np.empty(n, dtype=np.int64)
        for i in range(n):
            v = keys[i] - lo
            order[at[v]] = i
            at[v] += 1
        out = np.zeros(n, dtype=np.int64)  # the sorted keys: steps where a value starts,
        prev = 0  # then their running sum
        for v in range(span):  # at[v] now ends the keys of value lo + v
            first = at[v - 1] if v else 0
            if at[v] > first:
                out[first] += v - prev
                prev = v
        acc = lo
        for j in range(n):
            acc += out[j]
            out[j] = acc
        return out, order

    @njit(cache=CACHE, nogil=True)
    def _histograms(keys: np.ndarray, lo: int, passes: int, digit: int) -> np.ndarray:
        """Every pass's digit histogram, in one read of the keys."""
        mask = (1 << digit) - 1
        hist = np.zeros((passes, 1 << digit), dtype=np.int64)
        for i in range(keys.shape[0]):
            v = keys[i] - lo
            for p in range(passes):
                hist[p, (v >> (p * digit)) & mask] += 1
        return hist

    @njit(cache=CACHE, nogil=True)
    def _starts(hist: np.ndarray) -> np.ndarray:
        out = np.empty(hist.shape[0], dtype=np.int64)
        s = 0
        for d in range(hist.shape[0]):
            out[d] = s
            s += hist[d]
        return out

    @njit(cache=CACHE, nogil=True)
    def _scatter(src: np.ndarray, dst: np.ndarray, at: np.ndarray, lo: int, shift: int,
                 mask: int) -> None:
        for i in range(src.shape[0]):
            v = src[i]
            d = ((v - lo) >> shift) & mask
            dst[at[d]] = v
            at[d] += 1

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _chunk_histograms(keys: np.ndarray, lo: int, shift: int, digit: int, chunks: int,
                          step: int) -> np.ndarray:
        n = keys.shape[0]
        mask = (1 << digit) - 1
        hist = np.zeros((chunks, 1 << digit), dtype=np.int64)
        for c in prange(chunks):
            cs = c * step
            ce = min(n, cs + step)
            for i in range(cs, ce):
                hist[c, ((keys[i] - lo) >> shift) & mask] += 1
        return hist

    @njit(cache=CACHE, nogil=True)
    def _chunk_starts(hist: np.ndarray) -> np.ndarray:
        """Where chunk c writes its first key of digit d: after every key of a smaller
        digit, and after the keys of digit d of the chunks before c (a stable pass)."""
        chunks, radix = hist.shape
        out = np.empty((chunks, radix), dtype=np.int64)
        s = 0
        for d in range(radix):
            for c in range(chunks):
                out[c, d] = s
                s += hist[c, d]
        return out

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _chunk_scatter(src: np.ndarray, dst: np.ndarray, at: np.ndarray, lo: int,
                       shift: int, mask: int, step: int) -> None:
        n = src.shape[0]
        for c in prange(at.shape[0]):
            s0 = c * step
            e0 = min(n, s0 + step)
            for i in range(s0, e0):
                v = src[i]
                d = ((v - lo) >> shift) & mask
                dst[at[c, d]] = v
                at[c, d] += 1
