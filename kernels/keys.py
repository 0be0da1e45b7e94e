"""Multi-column keys: pack k integer columns into one int64 key that sorts like the rows.

Packing subtracts each column's minimum and shifts it into a bit field; when the value
ranges need more than 63 bits together, the general path ranks the columns jointly
(dense ranks of the row tuples, computed column by column), which always fits.  Both
preserve lexicographic order, so sorted keys mean lexicographically sorted rows.
Correctness never depends on packing: the rank path is exact for any values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import cpu_numba as _numba
from . import cpu_small as _small
from .backend import INDEX, Backend

Columns = Sequence[Any]
MAX_BITS = 63


@dataclass(frozen=True)
class KeySpec:
    """Bit-field layout of a packed key: column c occupies ``widths[c]`` bits at ``shifts[c]``."""

    offsets: tuple[int, ...]
    widths: tuple[int, ...]
    shifts: tuple[int, ...]

    def covers(self, mins: Sequence[int], maxs: Sequence[int]) -> bool:
        """Whether values in ``[mins, maxs]`` per column fit this layout."""
        return all(
            lo >= off and hi - off < (1 << w)
            for lo, hi, off, w in zip(mins, maxs, self.offsets, self.widths)
        )

    def prefix(self, k: int) -> KeySpec:
        """The layout of the first ``k`` columns alone: their key is ``key >> shifts[k - 1]``
        of a key under this layout."""
        base = self.shifts[k - 1]
        return KeySpec(self.offsets[:k], self.widths[:k],
                       tuple(s - base for s in self.shifts[:k]))


def column_ranges(be: Backend, cols: Columns) -> tuple[list[int], list[int]]:
    """Minimum and maximum of every (non-empty) column, as Python ints."""
    if not cols or len(cols[0]) == 0:
        return [0] * len(cols), [0] * len(cols)
    if _small.use(be, len(cols[0])) or (_small.on(be) and all(  # one compiled pass
            c.dtype == INDEX and c.flags.c_contiguous for c in cols)):  # (no copies)
        return _small.ranges(tuple(cols))
    if not be.is_gpu:  # NumPy reductions return host scalars: no stacking needed
        return [int(c.min()) for c in cols], [int(c.max()) for c in cols]
    xp = be.xp
    mins = xp.stack([c.min() for c in cols])  # one device-to-host copy, not one per column
    maxs = xp.stack([c.max() for c in cols])
    return [int(v) for v in be.to_host(mins)], [int(v) for v in be.to_host(maxs)]


def make_spec(mins: Sequence[int], maxs: Sequence[int], headroom: int = 0) -> KeySpec | None:
    """A layout for the given ranges (plus ``headroom`` spare bits a column), or None."""
    widths = [max(1, (hi - lo).bit_length() + headroom) for lo, hi in zip(mins, maxs)]
    if sum(widths) > MAX_BITS:
        widths = [max(1, (hi - lo).bit_length()) for lo, hi in zip(mins, maxs)]
        if sum(widths) > MAX_BITS:
            return None
    shifts, acc = [], 0
    for w in reversed(widths):
        shifts.append(acc)
        acc += w
    return KeySpec(tuple(mins), tuple(widths), tuple(reversed(shifts)))


def pack(be: Backend, cols: Columns, spec: KeySpec) -> Any:
    """Pack columns whose values all fit ``spec`` (caller guarantees it)."""
    xp = be.xp
    if not cols:
        return xp.zeros(0, dtype=INDEX)
    if _small.use(be, len(cols[0])):
        return _small.pack(tuple(cols), spec)
    if _parallel(be, len(cols[0])):
        return _numba.pack(cols, spec.offsets, spec.shifts)
    key = (cols[0] - spec.offsets[0]) << spec.shifts[0]
    for c, off, sh in zip(cols[1:], spec.offsets[1:], spec.shifts[1:]):
        key |= (c - off) << sh
    return key


def pack_probe(be: Backend, cols: Columns, spec: KeySpec) -> Any:
    """Pack probe-side columns; rows with a value outside ``spec`` get key -1 (no match)."""
    xp = be.xp
    n = len(cols[0])
    if _small.use(be, n):
        return _small.pack_probe(tuple(cols), spec)
    if _parallel(be, n):
        return _numba.pack_probe(cols, spec.offsets, spec.widths, spec.shifts)
    valid = xp.ones(n, dtype=bool)
    key = xp.zeros(n, dtype=INDEX)
    for c, off, w, sh in zip(cols, spec.offsets, spec.widths, spec.shifts):
        d = c - off  # may wrap for values far outside the layout: c >= off rules that out
        valid &= (c >= off) & (d >= 0) & (d < (1 << w))
        key |= (d & ((1 << w) - 1)) << sh
    key[~valid] = -1
    return key


def repack_probe(be: Backend, keys: Any, src: KeySpec, dst: KeySpec) -> Any:
    """Keys packed with ``src`` re-packed with ``dst`` without unpacking the columns
    (:func:`pack_probe` of :func:`unpack`): rows with a value outside ``dst`` get -1.
    Rows that fit keep their relative order."""
    near = all(abs(a - b) < (1 << 62) for a, b in zip(src.offsets, dst.offsets))
    if near and _small.use(be, len(keys)):
        return _small.repack_probe(keys, src, dst)
    if near and _parallel(be, len(keys)):
        return _numba.repack(keys, src, dst)
    return pack_probe(be, unpack(be, keys, src), dst)


def rank_rows(be: Backend, cols: Columns) -> Any:
    """Dense lexicographic ranks of the rows (the general path; any values, any arity)."""
    xp = be.xp
    n = len(cols[0])
    cur = xp.zeros(n, dtype=INDEX)
    for c in cols:
        uniq, inv = xp.unique(c, return_inverse=True)
        combined = cur * len(uniq) + inv.reshape(-1).astype(INDEX)
        _, cur = xp.unique(combined, return_inverse=True)
        cur = cur.reshape(-1).astype(INDEX)
    return cur


def row_keys(be: Backend, cols: Columns) -> Any:
    """Order-preserving int64 keys for the rows of ``cols`` (one side)."""
    if len(cols) == 0:
        raise ValueError("row_keys needs at least one column")
    if len(cols) == 1:
        return cols[0]
    mins, maxs = column_ranges(be, cols)
    spec = make_spec(mins, maxs)
    return pack(be, cols, spec) if spec is not None else rank_rows(be, cols)


def joint_keys(be: Backend, a: Columns, b: Columns) -> tuple[Any, Any]:
    """Order-preserving keys for the rows of two column sets in one key space."""
    xp = be.xp
    if len(a) != len(b):
        raise ValueError("joint_keys: column counts differ")
    if len(a) == 0:
        return xp.zeros(len(a[0]) if a else 0, dtype=INDEX), xp.zeros(0, dtype=INDEX)
    if len(a) == 1:
        return a[0], b[0]
    na = len(a[0])
    if na == 0 or len(b[0]) == 0:
        empty_side_keys = row_keys(be, b if na == 0 else a)
        zero = xp.zeros(0, dtype=INDEX)
        return (zero, empty_side_keys) if na == 0 else (empty_side_keys, zero)
    amin, amax = column_ranges(be, a)
    bmin, bmax = column_ranges(be, b)
    mins = [min(x, y) for x, y in zip(amin, bmin)]
    maxs = [max(x, y) for x, y in zip(amax, bmax)]
    spec = make_spec(mins, maxs)
    if spec is not None:
        return pack(be, a, spec), pack(be, b, spec)
    both = rank_rows(be, [xp.concatenate([x, y]) for x, y in zip(a, b)])
    return both[:na], both[na:]


def unpack(be: Backend, key: Any, spec: KeySpec) -> tuple[Any, ...]:
    """The columns a packed key was made of (inverse of :func:`pack`)."""
    if _small.use(be, len(key)):
        return _small.unpack(key, spec)
    if _parallel(be, len(key)):
        return _numba.unpack(key, spec.offsets, spec.widths, spec.shifts)
    return tuple(((key >> sh) & ((1 << w) - 1)) + off
                 for off, w, sh in zip(spec.offsets, spec.widths, spec.shifts))


def _parallel(be: Backend, n: int) -> bool:
    """Whether the parallel CPU kernel serves ``n`` rows (NumPy backend, large inputs;
    the kernels here gain by parallelism only)."""
    return _numba.use(be, n, elementwise=True)
