"""``range(from, to[, step])``: Soufflé's multi-valued functor, as a columnar expansion.

Each binding row yields the values ``from, from + step, ...`` strictly before ``to``
(``to`` is exclusive, as Python's ``range``); without a step, the step is 1 when
``from <= to`` and -1 otherwise; a zero step yields ``from`` once unless ``from == to``.
For integers the number of values per row is computed in closed form and the rows are
expanded with a repeat plus per-row offsets.  Floats are stepped as Soufflé does, by
repeated addition in the word's float (``x += step``; float32, or float64 with 64-bit
words), one vectorised step for all rows at a time, so the values equal Soufflé's also
where the step is not exactly representable.  With 64-bit words an unsigned range over
values from 2^63 up is refused (its bounds are stored negative).
"""

from __future__ import annotations

from typing import Any

from gpu_engine.kernels.backend import INDEX, Backend

from .ir import ColumnType, ProgramError
from .values import float_decode, float_encode, wrap

MAX_FLOAT_STEPS = 1 << 24  # a float range that long is refused (it may never end)


def expand_range(be: Backend, args: list[Any], typ: ColumnType,
                 bits: int = 32) -> tuple[Any, Any]:
    """(row of each output value, values) for ``range(*args)`` over binding rows."""
    if typ == "float":
        return _float_range(be, args, bits)
    xp = be.xp
    if bits == 64 and typ == "unsigned" and any(bool((a < 0).any()) for a in args):
        raise ProgramError("range() over unsigned values from 2^63 up is not supported")
    lo, hi = args[0], args[1]
    step = args[2] if len(args) == 3 else xp.where(lo <= hi, 1, -1).astype(INDEX)
    pos, neg = step > 0, step < 0
    span = xp.where(pos, hi - lo, lo - hi)
    mag = xp.where(step == 0, 1, xp.abs(step))
    count = xp.where(pos | neg, xp.maximum(span + mag - 1, 0) // mag, (lo != hi).astype(INDEX))
    count = xp.where(span > 0, count, xp.where(step == 0, count, 0)).astype(INDEX)
    ends = xp.cumsum(count)
    starts = ends - count
    total = be.scalar(ends[-1]) if len(ends) else 0  # (CuPy before 14.1: no array repeats)
    rows = xp.searchsorted(ends, xp.arange(total, dtype=INDEX), side="right").astype(INDEX)
    k = xp.arange(len(rows), dtype=INDEX) - starts[rows]
    return rows, wrap(be, lo[rows] + k * step[rows], typ, bits)


def _float_range(be: Backend, args: list[Any], bits: int = 32) -> tuple[Any, Any]:
    import numpy as np

    xp = be.xp
    ft = np.float64 if bits == 64 else np.float32
    lo, hi = (float_decode(be, a, bits).astype(ft) for a in args[:2])
    if len(args) == 3:
        step = float_decode(be, args[2], bits).astype(ft)
    else:
        step = xp.where(lo <= hi, ft(1), ft(-1)).astype(ft)
    ids = xp.arange(len(lo), dtype=INDEX)
    out_rows, out_vals = [], []
    zero = step == 0
    once = zero & (lo != hi)  # a zero step: `from` once, for a non-empty range
    out_rows.append(ids[once])
    out_vals.append(lo[once])
    x, act = lo, ~zero
    steps = 0
    while True:
        act = act & xp.where(step > 0, x < hi, hi < x)
        if not bool(act.any()):
            break
        steps += 1
        if steps > MAX_FLOAT_STEPS:
            raise ProgramError(f"a float range() yields more than {MAX_FLOAT_STEPS} values")
        out_rows.append(ids[act])
        out_vals.append(x[act])
        nxt = (x + step).astype(ft)
        if bool(xp.any(act & (nxt == x))):
            raise ProgramError("a float range() does not advance (its step is too small)")
        x = nxt
    rows = xp.concatenate(out_rows)
    vals = xp.concatenate(out_vals).astype(xp.float64)
    order = xp.argsort(rows, kind="stable")
    return rows[order], float_encode(be, vals[order], bits)
