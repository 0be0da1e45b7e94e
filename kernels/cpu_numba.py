"""Numba kernels for CPU hot paths that array operations serve poorly or on one core only.

Used only on the NumPy backend, for large inputs (``MIN_ROWS``); each has an
array-operation fallback of identical semantics in the calling kernel (and the GPU path
never comes here).  The kernels split their work into a few chunks per thread
(``njit(parallel=True)``), so they use every core; merges find each chunk's start in
both inputs by a binary search (merge path).

Measured against NumPy on the 2-core machine (10^6..5*10^7 int64, shared with other
work): packing keys 2.5-4x faster, unpacking 2x, merging two sorted runs 8-10x;
pack_probe, the dense probe and re-keying replace 4-6 array passes by one.  Not kept
(NumPy's vectorised single-thread code was as fast idle and up to 2x faster with the
other core busy): a chunked parallel sort (NumPy's sort per chunk in threads, then
parallel merges), distinct values of sorted keys, min/max, gathers by sorted indexes,
boolean compression.  Gathers by random indexes were 2x faster in parallel.  Sorting is
a radix sort of its own (:mod:`kernels.radix_sort`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import cpu_memory
from .numba_args import column_tuple
from .numba_cache import CACHE

try:
    import numba
    from numba import njit, prange

    AVAILABLE = True
except ImportError:  # pragma: no cover - numba is a dependency, but stay importable
    AVAILABLE = False

MIN_ROWS = 1 << 17  # below this the NumPy path is as fast (and needs no compilation)
# Kernels whose only gain is parallelism (packing, probing: NumPy does the same work in
# one vectorised thread) start higher: on a 2-core machine shared with other work each
# parallel region can wait a scheduler slice for its second thread, which cost the
# medium-sized arrays of DAG-R 2k/10k non-linear TC 20 % at 1 << 17 rows.  Merges,
# membership and join expansion do less work than their array-operation fallbacks and
# go down to MIN_ROWS (DAG-R 10k/100k linear TC: 3.1 s with all at 1 << 21, 2.6 s).
ELEMENTWISE_MIN_ROWS = 1 << 21
# The first Numba call of a process costs ~0.3 s (setting up its CPU target, loading the
# cached kernels): only an input of this size pays it, so that workloads of medium-sized
# arrays (LUBM(10): 0.45 -> 0.15 s) never do; once paid, kernels serve from MIN_ROWS.
FIRST_USE_ROWS = 1 << 21
_warm = False


def use(be: Any, n: int, elementwise: bool = False) -> bool:
    """Whether a parallel kernel serves ``n`` rows on backend ``be`` (NumPy backend, large
    inputs; ``elementwise``: a kernel that gains by parallelism only).  From the first
    kernel call on, the process keeps freed memory for reuse (:mod:`kernels.cpu_memory`)."""
    global _warm
    if be.is_gpu or n < MIN_ROWS or not AVAILABLE:
        return False
    if n < (ELEMENTWISE_MIN_ROWS if elementwise else MIN_ROWS if _warm else FIRST_USE_ROWS):
        return False
    if not _warm:
        cpu_memory.keep_freed_memory()
        _warm = True
    return True


def warm() -> bool:
    """Whether this process has paid Numba's first call for these kernels (:func:`use`)."""
    return _warm


def threads() -> int:
    return numba.get_num_threads() if AVAILABLE else 1


def _chunks() -> int:
    return 4 * threads()


if AVAILABLE:

    @njit(parallel=True, cache=CACHE, nogil=True)
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
            prev = needles[s]
            j = np.searchsorted(hay, prev)
            for i in range(s, e):
                v = needles[i]
                if v < prev:  # out of order (e.g. a -1 "no match" key): search again
                    j = np.searchsorted(hay, v)
                elif j < m and hay[j] < v:  # forward: gallop, then bisect
                    lo = j
                    gap = 1
                    while lo + gap < m and hay[lo + gap] < v:
                        lo += gap
                        gap *= 2
                    hi = min(lo + gap, m)
                    j = lo + 1 + np.searchsorted(hay[lo + 1:hi], v)
                prev = v
                out[i] = j < m and hay[j] == v


def isin_sorted_merge(needles: np.ndarray, hay: np.ndarray) -> np.ndarray:
    """Membership of sorted needles in a sorted haystack by a parallel merge (galloping
    forward; a needle smaller than its predecessor, such as a -1 "no match" key, is
    searched for afresh, so unsorted needles only cost time)."""
    out = np.empty(needles.shape[0], dtype=np.bool_)
    _isin_sorted_merge(np.ascontiguousarray(needles), np.ascontiguousarray(hay), out,
                       _chunks())
    return out


if AVAILABLE:

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _expand(lo: np.ndarray, counts: np.ndarray, ends: np.ndarray, first_row: np.ndarray,
                base: int, chunks: int, probe_idx: np.ndarray, build_pos: np.ndarray) -> None:
        total = probe_idx.shape[0]
        step = (total + chunks - 1) // chunks
        for c in prange(chunks):  # equal shares of the output, whatever the run lengths
            s = c * step
            e = min(total, s + step)
            i = first_row[c]
            k = s
            while k < e:
                run_end = min(e, ends[i])
                b = lo[i] + (k - (ends[i] - counts[i]))
                for x in range(k, run_end):
                    probe_idx[x] = base + i
                    build_pos[x] = b + (x - k)
                k = run_end
                i += 1


def expand(lo: np.ndarray, counts: np.ndarray, base: int, total: int,
           ends: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Join expansion (see kernels.join.expand) in parallel, each thread writing an equal
    share of the output (a probe row's run may be split between shares).  ``ends``:
    the cumulative sum of ``counts`` if known."""
    counts = np.ascontiguousarray(counts)
    ends = np.cumsum(counts) if ends is None else np.ascontiguousarray(ends)
    chunks = _chunks()
    step = (total + chunks - 1) // chunks
    first_row = np.searchsorted(ends, np.arange(chunks, dtype=np.int64) * step, side="right")
    probe_idx = np.empty(total, dtype=np.int64)
    build_pos = np.empty(total, dtype=np.int64)
    _expand(np.ascontiguousarray(lo), counts, ends, first_row, base, chunks, probe_idx,
            build_pos)
    return probe_idx, build_pos


if AVAILABLE:

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _expand_gather(lo: np.ndarray, counts: np.ndarray, ends: np.ndarray,
                       first_row: np.ndarray, base: int, chunks: int, rows: np.ndarray,
                       identity: bool, pcols, npc: int, bcols, nbc: int, pouts, bouts,
                       total: int) -> None:
        step = (total + chunks - 1) // chunks
        for c in prange(chunks):
            s = c * step
            e = min(total, s + step)
            i = first_row[c]
            k = s
            while k < e:
                run_end = min(e, ends[i])
                b = lo[i] + (k - (ends[i] - counts[i]))
                p = base + i
                for j in range(npc):
                    v = pcols[j][p]
                    o = pouts[j]
                    for x in range(k, run_end):
                        o[x] = v
                for x in range(k, run_end):
                    r = b + (x - k)
                    if not identity:
                        r = rows[r]
                    for j in range(nbc):
                        bouts[j][x] = bcols[j][r]
                k = run_end
                i += 1


def expand_gather(lo: np.ndarray, counts: np.ndarray, ends: np.ndarray, base: int,
                  total: int, rows, probe_cols, build_cols
                  ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """join.expand_gather in one parallel pass, equal output shares per thread."""
    counts = np.ascontiguousarray(counts)
    ends = np.ascontiguousarray(ends)
    chunks = _chunks()
    step = (total + chunks - 1) // chunks
    first_row = np.searchsorted(ends, np.arange(chunks, dtype=np.int64) * step, side="right")
    dummy = np.zeros(1, dtype=np.int64)  # Numba needs a typed tuple even when empty
    pcols = column_tuple(probe_cols) or (dummy,)
    bcols = column_tuple(build_cols) or (dummy,)
    pouts = [np.empty(total, dtype=np.int64) for _ in probe_cols]
    bouts = [np.empty(total, dtype=np.int64) for _ in build_cols]
    _expand_gather(np.ascontiguousarray(lo), counts, ends, first_row, base, chunks,
                   dummy if rows is None else np.ascontiguousarray(rows), rows is None,
                   pcols, len(probe_cols), bcols, len(build_cols),
                   tuple(pouts) or (dummy,), tuple(bouts) or (dummy,), total)
    return pouts, bouts


# --- packed keys --------------------------------------------------------------------------

if AVAILABLE:

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _pack(cols, offs: np.ndarray, shifts: np.ndarray, out: np.ndarray) -> None:
        k = len(cols)
        for i in prange(out.shape[0]):
            v = (cols[0][i] - offs[0]) << shifts[0]
            for j in range(1, k):
                v |= (cols[j][i] - offs[j]) << shifts[j]
            out[i] = v

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _unpack(keys: np.ndarray, offs: np.ndarray, masks: np.ndarray, shifts: np.ndarray,
                outs) -> None:
        k = len(outs)
        for i in prange(keys.shape[0]):
            v = keys[i]
            for j in range(k):
                outs[j][i] = ((v >> shifts[j]) & masks[j]) + offs[j]


if AVAILABLE:

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _repack(keys: np.ndarray, shift_from: np.ndarray, mask_from: np.ndarray,
                delta: np.ndarray, width_to: np.ndarray, shift_to: np.ndarray,
                out: np.ndarray) -> None:
        k = shift_from.shape[0]
        for i in prange(keys.shape[0]):
            v = keys[i]
            r = 0
            for j in range(k):
                d = ((v >> shift_from[j]) & mask_from[j]) + delta[j]
                if d < 0 or (d >> width_to[j]) != 0:
                    r = -1
                    break
                r |= d << shift_to[j]
            out[i] = r


def repack(keys: np.ndarray, src, dst) -> np.ndarray:
    """Keys of one packing (``src``: a KeySpec) in another (``dst``); -1 for a row with a
    value outside ``dst`` (see keys.repack_probe), in one parallel pass."""
    out = np.empty(len(keys), dtype=np.int64)
    _repack(np.ascontiguousarray(keys), np.asarray(src.shifts, dtype=np.int64),
            np.asarray([(1 << w) - 1 for w in src.widths], dtype=np.int64),
            np.asarray([a - b for a, b in zip(src.offsets, dst.offsets)], dtype=np.int64),
            np.asarray(dst.widths, dtype=np.int64), np.asarray(dst.shifts, dtype=np.int64),
            out)
    return out


if AVAILABLE:

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _pack_probe(cols, offs: np.ndarray, widths: np.ndarray, shifts: np.ndarray,
                    out: np.ndarray) -> None:
        k = len(cols)
        for i in prange(out.shape[0]):
            r = 0
            for j in range(k):
                d = cols[j][i] - offs[j]
                if cols[j][i] < offs[j] or d < 0 or (d >> widths[j]) != 0:
                    r = -1
                    break
                r |= d << shifts[j]
            out[i] = r

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _probe_dense(keys: np.ndarray, offsets: np.ndarray, lo: np.ndarray,
                     counts: np.ndarray) -> None:
        span = offsets.shape[0] - 1
        for i in prange(keys.shape[0]):
            k = keys[i]
            if k >= 0 and k < span:
                lo[i] = offsets[k]
                counts[i] = offsets[k + 1] - offsets[k]
            else:
                lo[i] = offsets[0]
                counts[i] = 0


def pack_probe(cols, offsets, widths, shifts) -> np.ndarray:
    """keys.pack_probe in one parallel pass: -1 for a row with a value outside the layout."""
    cols = column_tuple(cols)
    out = np.empty(len(cols[0]), dtype=np.int64)
    _pack_probe(cols, np.asarray(offsets, dtype=np.int64), np.asarray(widths, dtype=np.int64),
                np.asarray(shifts, dtype=np.int64), out)
    return out


def probe_dense(keys: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """join.probe_dense in one parallel pass."""
    lo = np.empty(len(keys), dtype=np.int64)
    counts = np.empty(len(keys), dtype=np.int64)
    _probe_dense(np.ascontiguousarray(keys), np.ascontiguousarray(offsets), lo, counts)
    return lo, counts


def pack(cols, offsets, shifts) -> np.ndarray:
    """``sum((c - off) << sh)`` over the columns, in one parallel pass (see keys.pack)."""
    cols = column_tuple(cols)
    out = np.empty(len(cols[0]), dtype=np.int64)
    _pack(cols, np.asarray(offsets, dtype=np.int64), np.asarray(shifts, dtype=np.int64), out)
    return out


def unpack(keys: np.ndarray, offsets, widths, shifts) -> tuple[np.ndarray, ...]:
    """The columns of packed keys (see keys.unpack), in one parallel pass."""
    n = len(keys)
    outs = tuple(np.empty(n, dtype=np.int64) for _ in offsets)
    masks = np.asarray([(1 << w) - 1 for w in widths], dtype=np.int64)
    _unpack(np.ascontiguousarray(keys), np.asarray(offsets, dtype=np.int64), masks,
            np.asarray(shifts, dtype=np.int64), outs)
    return outs


# --- merging sorted runs ------------------------------------------------------------------

if AVAILABLE:

    @njit(cache=CACHE, nogil=True)
    def _split(a: np.ndarray, b: np.ndarray, d: int) -> int:
        """How many of the first ``d`` outputs of merging a and b come from a (on equal
        values b's come first)."""
        lo = max(0, d - b.shape[0])
        hi = min(d, a.shape[0])
        while lo < hi:
            i = (lo + hi) // 2
            if a[i] < b[d - i - 1]:
                lo = i + 1
            else:
                hi = i
        return lo

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _merge(a: np.ndarray, b: np.ndarray, out: np.ndarray, chunks: int) -> None:
        na = a.shape[0]
        nb = b.shape[0]
        n = na + nb
        step = (n + chunks - 1) // chunks
        for c in prange(chunks):
            s = c * step
            e = min(n, s + step)
            if s >= e:
                continue
            i = _split(a, b, s)
            j = s - i
            for k in range(s, e):
                if j >= nb or (i < na and a[i] < b[j]):
                    out[k] = a[i]
                    i += 1
                else:
                    out[k] = b[j]
                    j += 1

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _merge_positions(a: np.ndarray, b: np.ndarray, pos_a: np.ndarray, pos_b: np.ndarray,
                         chunks: int) -> None:
        na = a.shape[0]
        nb = b.shape[0]
        n = na + nb
        step = (n + chunks - 1) // chunks
        for c in prange(chunks):
            s = c * step
            e = min(n, s + step)
            if s >= e:
                continue
            i = _split(a, b, s)
            j = s - i
            for k in range(s, e):
                if j >= nb or (i < na and a[i] < b[j]):
                    pos_a[i] = k
                    i += 1
                else:
                    pos_b[j] = k
                    j += 1

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _scatter2(ca: np.ndarray, pos_a: np.ndarray, cb: np.ndarray, pos_b: np.ndarray,
                  out: np.ndarray) -> None:
        for i in prange(ca.shape[0]):
            out[pos_a[i]] = ca[i]
        for j in prange(cb.shape[0]):
            out[pos_b[j]] = cb[j]


if AVAILABLE:

    @njit(parallel=True, cache=CACHE, nogil=True)
    def _sequential_sums(v: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                         sums: np.ndarray, counts: np.ndarray, one: np.ndarray) -> None:
        for g in prange(starts.shape[0]):
            acc = sums[g]
            c = counts[g]
            for i in range(starts[g], ends[g]):
                acc = acc + v[i]
                c = c + one[0]
            sums[g] = acc
            counts[g] = c


def sequential_sums(v: np.ndarray, starts: np.ndarray, ends: np.ndarray, sums: np.ndarray,
                    counts: np.ndarray) -> None:
    """Per group, ``v[starts[g]:ends[g]]`` added one at a time in ``v``'s float type into
    ``sums[g]``, and counted in that type into ``counts[g]`` (both start at zero)."""
    _sequential_sums(v, starts, ends, sums, counts, np.ones(1, dtype=v.dtype))


def merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted merge of two sorted arrays (equal values: b's first), in parallel."""
    out = np.empty(len(a) + len(b), dtype=np.result_type(a, b))
    _merge(np.ascontiguousarray(a), np.ascontiguousarray(b), out, _chunks())
    return out


def merge_positions(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the elements of two sorted arrays land in their merge (see :func:`merge`)."""
    pos_a = np.empty(len(a), dtype=np.int64)
    pos_b = np.empty(len(b), dtype=np.int64)
    _merge_positions(np.ascontiguousarray(a), np.ascontiguousarray(b), pos_a, pos_b, _chunks())
    return pos_a, pos_b


def scatter2(ca: np.ndarray, pos_a: np.ndarray, cb: np.ndarray, pos_b: np.ndarray
             ) -> np.ndarray:
    """``out[pos_a] = ca; out[pos_b] = cb`` for positions that cover ``out`` once."""
    out = np.empty(len(ca) + len(cb), dtype=np.result_type(ca, cb))
    _scatter2(np.ascontiguousarray(ca), pos_a, np.ascontiguousarray(cb), pos_b, out)
    return out
