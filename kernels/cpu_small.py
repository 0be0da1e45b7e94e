"""Serial Numba kernels for small inputs on the CPU: one compiled call in place of a
dozen array calls.

A small update reads its relations a few rows at a time: a membership test of 20 rows,
a probe of 50 keys.  Each NumPy call costs about a microsecond whatever its size, and
testing 20 rows of a packed binary relation takes about ten of them (the columns'
ranges, packing, a binary search, a gather, a comparison): 14 µs, against 1.2 µs for one
compiled loop that packs and searches row by row.  These kernels serve inputs of at most
:data:`MAX_ROWS` rows, with the same results as the array operations they replace.

Numba's first call in a process costs about 0.3 s (its compiler and the cached kernels
are loaded), which a short process with a small materialisation would pay for nothing.
So the kernels are off until :func:`enable` is called.  Maintenance calls
:func:`consider` at every update: the kernels come on for an update of a materialisation
of at least :data:`ENABLE_FACTS` facts (the rule of ``cpu_numba.FIRST_USE_ROWS``: only
work of that size pays the first use), or for the :data:`ENABLE_UPDATES`-th update of the
process (a long-lived process: the first use is paid once for many updates).
``GPU_ENGINE_SMALL_KERNELS=0`` keeps them off.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .numba_args import column_tuple
from .numba_cache import CACHE

try:
    from numba import njit

    # binary searches: the first position (in a range) with a key >= k
    from .small_path import _lower, _lower_between

    AVAILABLE = True
except ImportError:  # pragma: no cover - numba is a dependency
    AVAILABLE = False

MAX_ROWS = 4096  # inputs up to this many rows take the compiled loop
# A large sorted run is searched through a fence: every FENCE_STEP-th key, a copy 1/64 of
# its size, small enough to stay in cache.  A search then reads the fence and one block
# of FENCE_STEP keys instead of jumping across the whole run (a binary search over 14 M
# keys misses the cache at most of its 24 steps): 35 queries into 14 M keys take 25 µs
# against 76 µs for NumPy's searchsorted.
FENCE_STEP = 64
FENCE_MIN = 1 << 15  # runs of at least this many keys get a fence
NO_FENCE = np.zeros(0, dtype=np.int64)
# A large run of one column of ids is searched through a rank bitmap instead: one bit per
# id up to its largest (64-bit words) and the rank of each word's first id, about four
# bytes a row when the ids are dense enough (its largest id below RANK_DENSITY times its
# size).  Membership reads one word, a position one word and its rank, where a search
# through the fence reads a dozen places (450 ids into 555 K, cold cache: 68 -> 20 µs).
RANK_DENSITY = 16
FLAG_BLOCK = 1024  # flagged: rows counted per block (only blocks with a hit are reread)
ENABLE_FACTS = 1 << 21  # an update of a materialisation this large turns them on ...
ENABLE_UPDATES = 8  # ... and so does the process's eighth update

_on = False
_updates = 0  # updates this process has applied (consider)


def enable() -> None:
    """Turn the kernels on for this process (loading them costs ~0.3 s once)."""
    global _on
    if _on or not AVAILABLE or os.environ.get("GPU_ENGINE_SMALL_KERNELS", "1") == "0":
        return
    _on = True
    _warm()


_warmed = False


def _warm() -> None:
    """Load the kernels' usual specialisations (int64 columns, one to three of them) at
    once, so that each one's first load from Numba's cache (about a millisecond) falls in
    the call that turns the kernels on, not in a later update that meets its types first."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    from .keys import make_spec

    z = np.zeros(2, dtype=np.int64)
    keys = np.arange(2, dtype=np.int64)
    for k in (1, 2, 3):
        cols = (z,) * k
        spec = make_spec([0] * k, [1] * k)
        ranges(cols)
        if spec is not None:
            pack(cols, spec)
            pack_probe(cols, spec)
            contains_packed(cols, spec, keys)
            unpack(keys, spec)
            repack_probe(keys, spec, spec)
    isin(keys, keys)
    search(keys, keys)
    bitmap = rank_bitmap(keys)
    assert bitmap is not None
    rank_search(keys, bitmap, len(keys))
    rank_isin(keys, bitmap)
    rank_members(keys, bitmap)
    unique(keys)
    unique(keys, True)
    merge(keys, keys)
    probe_expand(keys, keys, 4)
    value_bits(keys, 8)
    flagged(keys, np.ones(2, dtype=np.bool_), 0)


def consider(facts: int) -> None:
    """An update of a materialisation of ``facts`` facts is about to run: turn the
    kernels on when it is large enough, or when the process has applied enough updates
    (module docstring)."""
    global _updates
    _updates += 1
    if not _on and (facts >= ENABLE_FACTS or _updates >= ENABLE_UPDATES):
        enable()


def disable() -> None:
    """Turn the kernels off (tests compare both paths)."""
    global _on
    _on = False


def use(be: Any, n: int) -> bool:
    """Whether the compiled loop serves ``n`` rows on backend ``be``."""
    return _on and n <= MAX_ROWS and not be.is_gpu


if AVAILABLE:

    @njit(cache=CACHE, nogil=True, inline='always')
    def _lower_fenced(keys: np.ndarray, m: int, fence: np.ndarray, key: int) -> int:
        """First position of ``keys`` with a key >= ``key``, through the ``fence``
        (``keys[FENCE_STEP - 1::FENCE_STEP]``; empty: a plain binary search)."""
        nf = fence.shape[0]
        if nf == 0:
            return _lower(keys, m, key)
        # the first block whose last key is >= key, then the key's place in that block
        a = _lower_between(fence, 0, nf, key) * FENCE_STEP
        return _lower_between(keys, a, min(a + FENCE_STEP, m), key)

    @njit(cache=CACHE, nogil=True)
    def _isin(needles: np.ndarray, keys: np.ndarray, fence: np.ndarray) -> np.ndarray:
        n, m = needles.shape[0], keys.shape[0]
        out = np.zeros(n, dtype=np.bool_)
        for i in range(n):
            at = _lower_fenced(keys, m, fence, needles[i])
            out[i] = at < m and keys[at] == needles[i]
        return out

    @njit(cache=CACHE, nogil=True)
    def _search(queries: np.ndarray, keys: np.ndarray, fence: np.ndarray) -> np.ndarray:
        n, m = queries.shape[0], keys.shape[0]
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            out[i] = _lower_fenced(keys, m, fence, queries[i])
        return out

    @njit(cache=CACHE, nogil=True)
    def _rank_bitmap(keys: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, bool]:
        n = keys.shape[0]
        if n == 0 or keys[0] < 0 or keys[n - 1] >= limit:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), False
        nw = (keys[n - 1] >> 6) + 1
        words = np.zeros(nw, dtype=np.uint64)
        first = np.empty(nw, dtype=np.int64)  # the rank of word w's first id
        w = 0
        for i in range(n):
            k = keys[i]
            kw = k >> 6
            while w <= kw:
                first[w] = i
                w += 1
            words[kw] |= np.uint64(1) << np.uint64(k & 63)
        return words, first, True

    @njit(cache=CACHE, nogil=True, inline='always')
    def _popcount(x: np.uint64) -> int:
        x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
        x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2))
                                                   & np.uint64(0x3333333333333333))
        x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
        return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))

    @njit(cache=CACHE, nogil=True)
    def _rank_search(queries: np.ndarray, words: np.ndarray, first: np.ndarray, n: int
                     ) -> np.ndarray:
        nw = words.shape[0]
        out = np.empty(queries.shape[0], dtype=np.int64)
        for i in range(queries.shape[0]):
            q = queries[i]
            if q <= 0:
                out[i] = 0
            elif (q >> 6) >= nw:
                out[i] = n
            else:
                b = np.uint64(q & 63)
                below = words[q >> 6] & ((np.uint64(1) << b) - np.uint64(1))
                out[i] = first[q >> 6] + _popcount(below)
        return out

    @njit(cache=CACHE, nogil=True)
    def _rank_isin(queries: np.ndarray, words: np.ndarray) -> np.ndarray:
        nw = words.shape[0]
        out = np.zeros(queries.shape[0], dtype=np.bool_)
        for i in range(queries.shape[0]):
            q = queries[i]
            if q >= 0 and (q >> 6) < nw:
                out[i] = (words[q >> 6] >> np.uint64(q & 63)) & np.uint64(1) != 0
        return out

    @njit(cache=CACHE, nogil=True)
    def _contains_packed(cols: Any, offsets: Any, widths: Any, shifts: Any,
                         keys: np.ndarray, fence: np.ndarray) -> np.ndarray:
        n, m = cols[0].shape[0], keys.shape[0]
        out = np.zeros(n, dtype=np.bool_)
        for i in range(n):
            k = 0
            ok = True
            for j in range(len(cols)):
                c = cols[j][i]
                d = c - offsets[j]
                w = widths[j]
                if c < offsets[j] or d < 0 or (w < 63 and d >= (1 << w)):
                    ok = False
                    break
                k |= d << shifts[j]
            if ok:
                at = _lower_fenced(keys, m, fence, k)
                out[i] = at < m and keys[at] == k
        return out


    @njit(cache=CACHE, nogil=True)
    def _ranges(cols: Any) -> tuple[np.ndarray, np.ndarray]:
        k = len(cols)
        lo = np.empty(k, dtype=np.int64)
        hi = np.empty(k, dtype=np.int64)
        for j in range(k):
            c = cols[j]
            a = c[0]
            b = c[0]
            for i in range(1, c.shape[0]):  # branch-free: the loop vectorises
                v = c[i]
                a = min(a, v)
                b = max(b, v)
            lo[j] = a
            hi[j] = b
        return lo, hi

    @njit(cache=CACHE, nogil=True)
    def _pack_probe(cols: Any, offsets: Any, widths: Any, shifts: Any) -> np.ndarray:
        n = cols[0].shape[0]
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            k = 0
            for j in range(len(cols)):
                c = cols[j][i]
                d = c - offsets[j]
                w = widths[j]
                if c < offsets[j] or d < 0 or (w < 63 and d >= (1 << w)):
                    k = -1
                    break
                k |= d << shifts[j]
            out[i] = k
        return out

    @njit(cache=CACHE, nogil=True)
    def _pack(cols: Any, offsets: Any, shifts: Any) -> np.ndarray:
        n = cols[0].shape[0]
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            k = 0
            for j in range(len(cols)):
                k |= (cols[j][i] - offsets[j]) << shifts[j]
            out[i] = k
        return out

    @njit(cache=CACHE, nogil=True)
    def _unpack(keys: np.ndarray, offsets: Any, widths: Any, shifts: Any, outs: Any) -> None:
        for i in range(keys.shape[0]):
            v = keys[i]
            for j in range(len(outs)):
                outs[j][i] = ((v >> shifts[j]) & ((1 << widths[j]) - 1)) + offsets[j]

    @njit(cache=CACHE, nogil=True)
    def _repack(keys: np.ndarray, src_off: Any, src_w: Any, src_sh: Any, dst_off: Any,
                dst_w: Any, dst_sh: Any) -> np.ndarray:
        n = keys.shape[0]
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            v = keys[i]
            k = 0
            for j in range(len(src_off)):
                d = ((v >> src_sh[j]) & ((1 << src_w[j]) - 1)) + (src_off[j] - dst_off[j])
                if d < 0 or (d >> dst_w[j]) != 0:
                    k = -1
                    break
                k |= d << dst_sh[j]
            out[i] = k
        return out

    @njit(cache=CACHE, nogil=True)
    def _unique(keys: np.ndarray, counts: bool) -> tuple[np.ndarray, np.ndarray]:
        sk = np.sort(keys)
        n = sk.shape[0]
        out = np.empty(n, dtype=sk.dtype)
        cnt = np.zeros(n if counts else 0, dtype=np.int64)
        m = 0
        for i in range(n):
            if i == 0 or sk[i] != sk[i - 1]:
                out[m] = sk[i]
                m += 1
            if counts:
                cnt[m - 1] += 1
        return out[:m].copy(), cnt[:m].copy()

    @njit(cache=CACHE, nogil=True)
    def _merge(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        na, nb = a.shape[0], b.shape[0]
        out = np.empty(na + nb, dtype=a.dtype)
        pa = np.empty(na, dtype=np.int64)
        pb = np.empty(nb, dtype=np.int64)
        i = j = 0
        while i < na or j < nb:
            if j == nb or (i < na and a[i] < b[j]):  # equal keys: b's first
                pa[i] = i + j
                out[i + j] = a[i]
                i += 1
            else:
                pb[j] = i + j
                out[i + j] = b[j]
                j += 1
        return out, pa, pb

    @njit(cache=CACHE, nogil=True)
    def _probe_expand(pk: np.ndarray, keys: np.ndarray, budget: int, fence: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, bool]:
        n, m = pk.shape[0], keys.shape[0]
        lo = np.empty(n, dtype=np.int64)
        cnt = np.empty(n, dtype=np.int64)
        total = 0
        for i in range(n):
            k = pk[i]
            a = _lower_fenced(keys, m, fence, k)
            # the first position with a key > k: galloping from a (a key's run of equal
            # keys is short, and its end lies in the cache lines just read)
            step = 1
            while a + step < m and keys[a + step - 1] <= k:
                step <<= 1
            b, hi = a + (step >> 1), min(a + step, m)  # keys[b - 1] <= k (or b == a)
            while b < hi:
                mid = (b + hi) >> 1
                if keys[mid] <= k:
                    b = mid + 1
                else:
                    hi = mid
            lo[i] = a
            cnt[i] = b - a
            total += b - a
        if total > budget:
            return lo, cnt, False
        pi = np.empty(total, dtype=np.int64)
        pos = np.empty(total, dtype=np.int64)
        k = 0
        for i in range(n):
            for j in range(cnt[i]):
                pi[k] = i
                pos[k] = lo[i] + j
                k += 1
        return pi, pos, True

    @njit(cache=CACHE, nogil=True)
    def _value_bits(col: np.ndarray, limit: int) -> tuple[np.ndarray, bool]:
        lo = hi = col[0]
        for i in range(col.shape[0]):  # branch-free: the loop vectorises
            v = col[i]
            lo = min(lo, v)
            hi = max(hi, v)
        if lo < 0 or hi + 1 > limit:
            return np.zeros(0, dtype=np.uint8), False
        out = np.zeros((hi + 8) >> 3, dtype=np.uint8)
        for i in range(col.shape[0]):
            v = col[i]
            out[v >> 3] |= np.uint8(0x80 >> (v & 7))
        return out, True


    @njit(cache=CACHE, nogil=True)
    def _flagged(col: np.ndarray, flag: np.ndarray, lo: int) -> np.ndarray:
        m = flag.shape[0]
        n = col.shape[0] if m else 0
        nb = (n + FLAG_BLOCK - 1) // FLAG_BLOCK
        found = np.zeros(nb, dtype=np.int64)  # flagged values per block of the column
        k = 0
        for b in range(nb):
            part = col[b * FLAG_BLOCK:min(n, b * FLAG_BLOCK + FLAG_BLOCK)]
            s = 0
            for j in range(part.shape[0]):  # branch-free over a slice: it vectorises
                v = part[j] - lo
                d = min(max(v, 0), m - 1)
                s += flag[d] & (v == d)
            found[b] = s
            k += s
        out = np.empty(k, dtype=np.int64)
        k = 0
        for b in range(nb):  # the positions, from the blocks that hold some
            if found[b]:
                for i in range(b * FLAG_BLOCK, min(n, b * FLAG_BLOCK + FLAG_BLOCK)):
                    v = col[i] - lo
                    if v >= 0 and v < m and flag[v]:
                        out[k] = i
                        k += 1
        return out


def on(be: Any) -> bool:
    """Whether the kernels are on for backend ``be`` (whatever the input's size: for the
    one-pass kernels below, whose array version makes several passes)."""
    return _on and not be.is_gpu


def value_bits(col: Any, limit: int) -> tuple[Any, bool]:
    """The bitset of a non-empty column's values in ``np.packbits`` order (one bit per
    value from 0 to the largest) in two passes, and True; False when a value is negative
    or the largest is ``limit`` or more."""
    return _value_bits(col, limit)


def flagged(col: Any, flag: Any, lo: int = 0) -> Any:
    """Sorted positions of the values ``v`` of ``col`` with ``flag[v - lo]`` (values
    outside the flag's range are not flagged): a vectorised count per block of the
    column, then a reread of the blocks with a hit (1.27 M rows, 50 hits: 1.75 -> 0.6
    ms); the array version makes five passes (shift, clip, gather, two comparisons)."""
    return _flagged(col, flag, lo)


def probe_expand(pk: Any, keys: Any, budget: int, fence: Any = NO_FENCE
                 ) -> tuple[Any, Any, bool]:
    """The matches of packed probe keys ``pk`` in sorted ``keys`` (``fence``: theirs):
    (probe index, key position) pairs in probe order, and True; when there are more than
    ``budget``, the first matching positions and the match counts (``kernels.join.probe``)
    and False."""
    return _probe_expand(pk, keys, budget, fence)


def fence_of(keys: Any) -> Any:
    """The fence of sorted ``keys`` (every FENCE_STEP-th key; none for a small run)."""
    if len(keys) < FENCE_MIN:
        return NO_FENCE
    return np.ascontiguousarray(keys[FENCE_STEP - 1::FENCE_STEP])


def isin(needles: Any, keys: Any, fence: Any = NO_FENCE) -> Any:
    """Mask: which of ``needles`` occur in the sorted ``keys`` (``fence``: theirs)."""
    return _isin(needles, keys, fence)


def search(queries: Any, keys: Any, fence: Any = NO_FENCE) -> Any:
    """``searchsorted(keys, queries)`` (left), through ``keys``' ``fence``."""
    return _search(queries, keys, fence)


def rank_bitmap(keys: Any) -> tuple[Any, Any] | None:
    """The rank bitmap of sorted, distinct ids ``keys`` (module docstring: the words
    and each word's first rank), or None when they are negative or too sparse."""
    words, first, ok = _rank_bitmap(keys, RANK_DENSITY * len(keys))
    return (words, first) if ok else None


def rank_search(queries: Any, bitmap: tuple[Any, Any], n: int) -> Any:
    """``searchsorted(keys, queries)`` (left) for the ``n`` keys of ``bitmap``."""
    return _rank_search(queries, bitmap[0], bitmap[1], n)


def rank_isin(queries: Any, bitmap: tuple[Any, Any]) -> Any:
    """Mask: which ``queries`` are keys of ``bitmap``."""
    return _rank_isin(queries, bitmap[0])


def rank_members(queries: Any, bitmap: tuple[Any, Any]) -> Any:
    """The indexes (ascending) of the ``queries`` that are keys of ``bitmap``."""
    return np.flatnonzero(_rank_isin(queries, bitmap[0]))


def contains_packed(cols: tuple[Any, ...], spec: Any, keys: Any, fence: Any = NO_FENCE) -> Any:
    """Mask: which rows (columns ``cols``) occur in sorted ``keys`` packed with ``spec``
    (rows with a value outside the layout occur nowhere; ``fence``: the keys')."""
    return _contains_packed(column_tuple(cols), spec.offsets, spec.widths, spec.shifts, keys,
                            fence)


def ranges(cols: tuple[Any, ...]) -> tuple[list[int], list[int]]:
    """Minimum and maximum of every (non-empty) column, as Python ints."""
    lo, hi = _ranges(column_tuple(cols))
    return lo.tolist(), hi.tolist()


def pack_probe(cols: tuple[Any, ...], spec: Any) -> Any:
    """``kernels.keys.pack_probe``: keys packed with ``spec``, -1 for rows outside it."""
    return _pack_probe(column_tuple(cols), spec.offsets, spec.widths, spec.shifts)


def pack(cols: tuple[Any, ...], spec: Any) -> Any:
    """``kernels.keys.pack``: columns whose values fit ``spec`` packed into keys."""
    return _pack(column_tuple(cols), spec.offsets, spec.shifts)


def unpack(keys: Any, spec: Any) -> tuple[Any, ...]:
    """``kernels.keys.unpack``: the columns packed keys were made of."""
    outs = tuple(np.empty(len(keys), dtype=np.int64) for _ in spec.offsets)
    _unpack(np.ascontiguousarray(keys), spec.offsets, spec.widths, spec.shifts, outs)
    return outs


def repack_probe(keys: Any, src: Any, dst: Any) -> Any:
    """``kernels.keys.repack_probe``: keys packed with ``src`` re-packed with ``dst``, -1
    for rows with a value outside ``dst`` (offsets less than 2**62 apart: the caller's
    test)."""
    return _repack(np.ascontiguousarray(keys), src.offsets, src.widths, src.shifts,
                   dst.offsets, dst.widths, dst.shifts)


def unique(keys: Any, counts: bool = False) -> tuple[Any, Any]:
    """Sorted distinct keys and (with ``counts``) their multiplicities."""
    return _unique(keys, counts)


def merge(a: Any, b: Any) -> tuple[Any, Any, Any]:
    """Two sorted key arrays merged (equal keys allowed, ``b``'s first) and the
    positions of ``a``'s and ``b``'s keys in the result."""
    return _merge(a, b)
