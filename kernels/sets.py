"""Set operations on sorted integer keys and on the rows they stand for.

A row set is a tuple of equally long int64 columns; its keys (see :mod:`kernels.keys`)
sort like the rows.  Membership is a binary search of sorted keys; union of disjoint
sorted sets is a linear merge by scatter (no re-sort); deduplication is a sort.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import cpu_numba as _numba
from . import cpu_small as _small
from . import radix_sort as _radix
from .backend import INDEX, Backend

Columns = Sequence[Any]


COMPOSITE_MIN = 256  # CPU: from this size a stable argsort sorts (key, index) composites


def argsort_keys(be: Backend, keys: Any) -> Any:
    """A stable permutation that sorts ``keys``."""
    if be.is_gpu:
        return be.xp.argsort(keys)  # CuPy's argsort is a stable radix sort
    return sort_with_order(be, keys)[1]


def sort_with_order(be: Backend, keys: Any) -> tuple[Any, Any]:
    """``keys`` sorted and the stable permutation that sorts them.

    On the CPU, when the key range and the row numbers fit 63 bits together, a value
    sort of ``(key - min) << b | row`` (NumPy's vectorised sort) gives both: ties are
    broken by row number, so the permutation is the stable one.  NumPy's stable argsort
    of int64 (a merge sort) is 7-13x slower from 10^5 rows on.  Keys of a dense range
    (at most ``radix_sort.DENSE_SPAN`` values a key) take a counting sort instead.
    """
    be.charge(len(keys))
    if be.is_gpu:
        order = be.xp.argsort(keys)
        return keys[order], order
    n = len(keys)
    if n >= COMPOSITE_MIN and keys.dtype == INDEX:
        lo, hi = int(keys.min()), int(keys.max())
        if _radix.dense(n, hi - lo + 1) and _radix.use(be, n):
            return _radix.counting_sort_with_order(keys, lo, hi - lo + 1)
        ib = (n - 1).bit_length()
        if (hi - lo).bit_length() + ib <= 63:
            rows = be.xp.arange(n, dtype=INDEX)
            comp = (_numba.pack((keys, rows), (lo, 0), (ib, 0)) if _numba.use(be, n, True)
                    else ((keys - lo) << ib) | rows)
            comp = sort_values(be, comp, overwrite=True)
            order = comp & ((1 << ib) - 1)
            comp >>= ib
            comp += lo
            return comp, order
    order = keys.argsort(kind="stable")
    return keys[order], order


def unique_sorted_positions(be: Backend, sorted_keys: Any) -> Any:
    """Positions of the first occurrence of each distinct value in sorted keys."""
    xp = be.xp
    n = len(sorted_keys)
    if n == 0:
        return xp.zeros(0, dtype=INDEX)
    first = xp.empty(n, dtype=bool)
    first[0] = True
    xp.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
    return xp.flatnonzero(first)


def sort_unique(be: Backend, keys: Any) -> tuple[Any, Any]:
    """Sorted distinct keys and, for each, the index of one row that has it."""
    sk, order = sort_with_order(be, keys)
    pos = unique_sorted_positions(be, sk)
    return sk[pos], order[pos]


SORT_PROBES = 512  # CPU: unsorted look-ups from this many are sorted first ...
LARGE_KEYS = 1 << 17  # ... into at least this many sorted keys (beyond the caches)


def _probe_order(be: Backend, n_keys: int, queries: Any) -> tuple[Any, Any] | None:
    """``queries`` sorted and their order, when sorting them first pays on the CPU: a
    binary search per query in an array larger than the caches misses at every level,
    while sorted queries read it in order (NumPy narrows each search from the previous
    one).  5 M keys: 20,000 look-ups 21 ms unsorted, 6.8 ms sorted first (the sort
    included); 200k keys: 3.3 against 1.9 ms; into 10k keys sorting gains nothing.
    None on the GPU, for few queries or few keys, or when the queries are sorted."""
    if be.is_gpu or len(queries) < SORT_PROBES or n_keys < LARGE_KEYS:
        return None
    if bool((queries[1:] >= queries[:-1]).all()):
        return None
    return sort_with_order(be, queries)


def _unpermute(xp: Any, got: Any, order: Any) -> Any:
    out = xp.empty_like(got)
    out[order] = got
    return out


def search(be: Backend, sorted_keys: Any, queries: Any, side: str = "left") -> Any:
    """``searchsorted(sorted_keys, queries, side)``, the queries sorted first when that
    is faster (:func:`_probe_order`)."""
    xp = be.xp
    po = _probe_order(be, len(sorted_keys), queries)
    if po is None:
        return xp.searchsorted(sorted_keys, queries, side=side)
    return _unpermute(xp, xp.searchsorted(sorted_keys, po[0], side=side), po[1])


def search_range(be: Backend, sorted_keys: Any, queries: Any) -> tuple[Any, Any]:
    """The left and right ``searchsorted`` positions of ``queries`` (the range of keys
    equal to each), the queries sorted once first when that is faster."""
    xp = be.xp
    po = _probe_order(be, len(sorted_keys), queries)
    q = queries if po is None else po[0]
    lo = xp.searchsorted(sorted_keys, q, side="left")
    hi = xp.searchsorted(sorted_keys, q, side="right")
    if po is None:
        return lo, hi
    return _unpermute(xp, lo, po[1]), _unpermute(xp, hi, po[1])


def isin_sorted(be: Backend, keys: Any, sorted_keys: Any, keys_sorted: bool = False) -> Any:
    """Boolean mask: which ``keys`` occur in ``sorted_keys`` (the semi-join test).

    With ``keys_sorted`` (and large inputs on the CPU) a parallel linear merge replaces
    the binary searches.
    """
    xp = be.xp
    if len(sorted_keys) == 0 or len(keys) == 0:
        return xp.zeros(len(keys), dtype=bool)
    if _small.use(be, len(keys)):
        return _small.isin(keys, sorted_keys)
    if keys_sorted and _parallel(be, len(keys)):
        return _numba.isin_sorted_merge(keys, sorted_keys)
    idx = search(be, sorted_keys, keys)
    idx = xp.minimum(idx, len(sorted_keys) - 1)
    return sorted_keys[idx] == keys


def take_rows(cols: Columns, idx: Any) -> tuple[Any, ...]:
    return tuple(c[idx] for c in cols)


def merge_disjoint(
    be: Backend, a_keys: Any, a_cols: Columns, b_keys: Any, b_cols: Columns
) -> tuple[Any, tuple[Any, ...]]:
    """Union of two sorted, disjoint row sets by a linear merge (scatter by rank).  Keys
    on both sides may also be equal (a value sort's merge): both are kept, ``b``'s
    first."""
    xp = be.xp
    na, nb = len(a_keys), len(b_keys)
    if nb == 0:
        return a_keys, tuple(a_cols)
    if na == 0:
        return b_keys, tuple(b_cols)
    if _small.use(be, na + nb):
        out_keys, pos_a, pos_b = _small.merge(a_keys, b_keys)
        out_cols = []
        for ca, cb in zip(a_cols, b_cols):
            if ca is a_keys and cb is b_keys:  # a set of one column: its keys
                out_cols.append(out_keys)
                continue
            oc = xp.empty(na + nb, dtype=INDEX)
            oc[pos_a] = ca
            oc[pos_b] = cb
            out_cols.append(oc)
        return out_keys, tuple(out_cols)
    if _parallel(be, na + nb):
        out_keys = _numba.merge(a_keys, b_keys)
        if not a_cols:
            return out_keys, ()
        pos_a, pos_b = _numba.merge_positions(a_keys, b_keys)
        return out_keys, tuple(out_keys if (ca is a_keys and cb is b_keys)
                               else _numba.scatter2(ca, pos_a, cb, pos_b)
                               for ca, cb in zip(a_cols, b_cols))
    pos_b = xp.searchsorted(a_keys, b_keys) + xp.arange(nb, dtype=INDEX)
    is_b = xp.zeros(na + nb, dtype=bool)
    is_b[pos_b] = True
    is_a = ~is_b
    out_keys = xp.empty(na + nb, dtype=INDEX)
    out_keys[is_a] = a_keys
    out_keys[pos_b] = b_keys
    out_cols = []
    for ca, cb in zip(a_cols, b_cols):
        oc = xp.empty(na + nb, dtype=INDEX)
        oc[is_a] = ca
        oc[pos_b] = cb
        out_cols.append(oc)
    return out_keys, tuple(out_cols)


def merge_positions(be: Backend, a_keys: Any, b_keys: Any) -> tuple[Any, Any]:
    """Where the rows of two sorted disjoint sets land in their merge (for aligned arrays)."""
    xp = be.xp
    if _parallel(be, len(a_keys) + len(b_keys)) and len(a_keys) and len(b_keys):
        return _numba.merge_positions(a_keys, b_keys)
    pos_b = xp.searchsorted(a_keys, b_keys) + xp.arange(len(b_keys), dtype=INDEX)
    is_b = xp.zeros(len(a_keys) + len(b_keys), dtype=bool)
    is_b[pos_b] = True
    return xp.flatnonzero(~is_b).astype(INDEX), pos_b


NEARLY_MIN = 4096  # CPU: from this size a value sort looks for keys already in order
NEARLY_SORTED = 8  # ... and sorts apart at most 1/8 of them (out of place) and merges
SAMPLE_DESCENTS = 64  # ... when samples show at most 1/64 descents (else a plain sort)
FEW_RUNS = 8  # ... and merges keys that are fewer than this many sorted runs


def _looks_unsorted(xp: Any, keys: Any) -> bool:
    """Whether samples of ``keys`` show more than 1/:data:`SAMPLE_DESCENTS` descents:
    1,024 keys spread over the array (disorder at large) and four windows of 256
    neighbours (disorder within blocks, such as join output grouped by its first column:
    DAG-R's transitive closure derives rows with 11-18 % descents), so that unsorted
    keys go straight to the sort without a pass over them."""
    n = len(keys)
    spread = keys[:: max(1, n // 1024)]
    if int(xp.count_nonzero(spread[1:] < spread[:-1])) > len(spread) // SAMPLE_DESCENTS:
        return True
    near = 0
    for start in (0, n // 4, n // 2, n - 256):
        w = keys[start:start + 256]
        near += int(xp.count_nonzero(w[1:] < w[:-1]))
    return near > 1024 // SAMPLE_DESCENTS


def sort_values(be: Backend, keys: Any, overwrite: bool = False) -> Any:
    """``keys`` sorted (a value sort; ``overwrite``: in place, ``keys`` being a temporary
    of the caller's).  May return ``keys`` itself when it is sorted already.

    On the CPU NumPy's sort costs the same on sorted input as on random input (150k
    keys: 6 ms either way), while keys are often sorted, or sorted but for a few (rows
    of a sorted set rewritten through a mapping that moved some of their values).  The
    keys at or above the running maximum are in order; when the others are at most
    1/:data:`NEARLY_SORTED` of them, they are sorted apart and merged in by rank:
    O(n + k log k) instead of O(n log n)."""
    xp = be.xp
    n = len(keys)
    if be.is_gpu or n < NEARLY_MIN or _looks_unsorted(xp, keys):
        return _full_sort(be, keys, overwrite)
    cuts = xp.flatnonzero(keys[1:] < keys[:-1]) + 1  # where a sorted run starts
    if not len(cuts):
        return keys
    if len(cuts) < FEW_RUNS:  # a few sorted runs (parts of a union): merged, no sort
        bounds = [0, *be.to_host(cuts).tolist(), n]
        runs = [keys[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        while len(runs) > 1:
            runs = [merge_disjoint(be, runs[i], (), runs[i + 1], ())[0]
                    if i + 1 < len(runs) else runs[i] for i in range(0, len(runs), 2)]
        return runs[0]
    bad = keys < xp.maximum.accumulate(keys)  # below an earlier key: out of place
    k = int(xp.count_nonzero(bad))
    if k > n // NEARLY_SORTED:
        return _full_sort(be, keys, overwrite)
    return merge_disjoint(be, keys[~bad], (), _full_sort(be, keys[bad], True), ())[0]


def _full_sort(be: Backend, keys: Any, overwrite: bool) -> Any:
    """A sort of keys in no known order: a radix sort of int64 keys on the CPU
    (:mod:`kernels.radix_sort`), else the backend's sort (in place with ``overwrite``)."""
    if keys.dtype == INDEX and _radix.use(be, len(keys)):
        return _radix.sort(keys, overwrite)
    if overwrite:
        keys.sort()
        return keys
    return be.xp.sort(keys)


def unique_keys(be: Backend, keys: Any, return_counts: bool = False,
                overwrite: bool = False) -> Any:
    """Sorted distinct keys (and their multiplicities): a value sort, no permutation.

    ``overwrite``: ``keys`` is a temporary of the caller's and is sorted in place (one
    array fewer)."""
    xp = be.xp
    n = len(keys)
    be.charge(n)
    if _small.use(be, n) and n:
        uk, cnt = _small.unique(keys, return_counts)
        return (uk, cnt) if return_counts else uk
    sk = sort_values(be, keys, overwrite)
    pos = unique_sorted_positions(be, sk)
    if not return_counts:
        return sk[pos]
    ends = xp.concatenate([pos[1:], xp.asarray([n], dtype=INDEX)])
    return sk[pos], (ends - pos).astype(INDEX)


def _parallel(be: Backend, n: int) -> bool:
    """Whether the parallel CPU kernel serves ``n`` rows (NumPy backend, large inputs)."""
    return _numba.use(be, n)
