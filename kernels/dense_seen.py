"""A set of rows over a small box of values, as one bit per possible packed key.

Seminaive evaluation deduplicates each round's derivations and drops those already in
the relation: a value sort of the packed keys, a pass for the distinct ones, and a
membership test against every run of the relation.  When the relation's key space (the
product of its columns' value ranges, :class:`kernels.keys.KeySpec`) is small, a bitmap
of the keys answers both in one pass: a row whose bit is clear is new, and setting the
bit makes its repetitions old (a test-and-set per derivation, in input order).  Only
the new rows are sorted afterwards.  Graphs with numbered nodes (transitive closure of
10^4 nodes: 2^28 keys, a 32 MiB bitmap) are the case this serves; a binary relation
over a large dictionary does not qualify (:func:`fits`).

Compiled (Numba) kernels on the CPU only; the caller (:mod:`gpu_engine.dense_absorb`)
keeps the sorted path everywhere else.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .keys import KeySpec
from .numba_args import column_tuple
from .numba_cache import CACHE

try:
    from numba import njit

    AVAILABLE = True
except ImportError:  # pragma: no cover - numba is a dependency, but stay importable
    AVAILABLE = False

MAX_BITS = 1 << 31  # a bitmap of at most 256 MiB
BITS_PER_ROW = 64  # ... and of at most 8 bytes per row it serves (rows of the relation
# and of the round): zeroing and scanning it must not cost more than sorting them


def fits(spec: KeySpec, rows: int) -> bool:
    """Whether a bitmap over ``spec``'s key space is small enough for ``rows`` rows."""
    bits = 1 << sum(spec.widths)
    return bits <= MAX_BITS and bits <= BITS_PER_ROW * max(rows, 1)


def empty(spec: KeySpec) -> np.ndarray:
    """A bitmap with no key set (64 keys a word)."""
    return np.zeros(((1 << sum(spec.widths)) + 63) >> 6, dtype=np.uint64)


def _layout(spec: KeySpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets, shifts and field masks of a key layout, as kernel arguments."""
    return (np.asarray(spec.offsets, dtype=np.int64), np.asarray(spec.shifts, dtype=np.int64),
            np.asarray([(1 << w) - 1 for w in spec.widths], dtype=np.int64))


def mark_keys(bits: np.ndarray, keys: np.ndarray, src: KeySpec, spec: KeySpec) -> None:
    """Set the bits of rows given as keys packed under ``src`` (their values within the
    bitmap's ``spec``): no unpacking into columns."""
    if not len(keys):
        return
    if src == spec:
        _mark_keys(bits, keys)
        return
    s_off, s_sh, masks = _layout(src)
    off, sh, _ = _layout(spec)
    _mark_repacked(bits, keys, s_sh, masks, s_off - off, sh)


def first_new(bits: np.ndarray, cols: tuple[Any, ...], spec: KeySpec) -> np.ndarray:
    """Packed keys (under ``spec``) of the rows whose bit was clear, each once, in input
    order; their bits are set.  The rows' values must lie within ``spec``."""
    n = len(cols[0])
    out = np.empty(n, dtype=np.int64)  # pages are touched only where written
    if not n:
        return out
    off, sh, _ = _layout(spec)
    m = _first_new(bits, column_tuple(cols), off, sh, out)
    return out[:m].copy() if m < n // 2 else out[:m]


def field_ranges(keys: np.ndarray, spec: KeySpec) -> tuple[list[int], list[int]]:
    """Minimum and maximum of every column of non-empty packed keys, without unpacking
    them (one pass)."""
    _, sh, masks = _layout(spec)
    lo, hi = _field_ranges(keys, sh, masks)
    return ([int(v) + o for v, o in zip(lo, spec.offsets)],
            [int(v) + o for v, o in zip(hi, spec.offsets)])


if AVAILABLE:

    @njit(cache=CACHE, nogil=True, boundscheck=False)
    def _mark_keys(bits: np.ndarray, keys: np.ndarray) -> None:
        for i in range(keys.shape[0]):
            k = keys[i]
            bits[k >> 6] |= np.uint64(1) << np.uint64(k & 63)

    @njit(cache=CACHE, nogil=True, boundscheck=False)
    def _mark_repacked(bits: np.ndarray, keys: np.ndarray, s_sh: np.ndarray,
                       masks: np.ndarray, delta: np.ndarray, sh: np.ndarray) -> None:
        for i in range(keys.shape[0]):
            src = keys[i]
            k = 0
            for j in range(s_sh.shape[0]):
                k |= (((src >> s_sh[j]) & masks[j]) + delta[j]) << sh[j]
            bits[k >> 6] |= np.uint64(1) << np.uint64(k & 63)

    @njit(cache=CACHE, nogil=True, boundscheck=False)
    def _first_new(bits: np.ndarray, cols, off: np.ndarray, sh: np.ndarray,
                   out: np.ndarray) -> int:
        m = 0
        for i in range(cols[0].shape[0]):
            k = 0
            for j in range(len(cols)):
                k |= (cols[j][i] - off[j]) << sh[j]
            w = k >> 6
            b = np.uint64(1) << np.uint64(k & 63)
            x = bits[w]
            if not (x & b):
                bits[w] = x | b
                out[m] = k
                m += 1
        return m

    @njit(cache=CACHE, nogil=True, boundscheck=False)
    def _field_ranges(keys: np.ndarray, sh: np.ndarray, masks: np.ndarray):
        a = sh.shape[0]
        lo = np.empty(a, dtype=np.int64)
        hi = np.empty(a, dtype=np.int64)
        for j in range(a):
            lo[j] = (keys[0] >> sh[j]) & masks[j]
            hi[j] = lo[j]
        for i in range(1, keys.shape[0]):
            k = keys[i]
            for j in range(a):
                v = (k >> sh[j]) & masks[j]
                if v < lo[j]:
                    lo[j] = v
                elif v > hi[j]:
                    hi[j] = v
        return lo, hi
