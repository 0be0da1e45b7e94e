"""Constant folding with the semantics of Soufflé's default 32-bit build.

``number`` wraps as int32, ``unsigned`` as uint32, ``/`` and ``%`` truncate toward zero
like C, ``^`` is integer power (wrapping), ``float`` is 32-bit IEEE.  Operations whose
result C leaves undefined (division by zero, over-wide shifts, out-of-range float to
integer conversions) are not folded: :func:`fold_call` returns ``None`` and the engine
evaluates them.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from gpu_engine.ir import Const

_MASK = 0xFFFFFFFF


def wrap_number(v: int) -> int:
    """Wrap an integer to the int32 range."""
    v &= _MASK
    return v - (1 << 32) if v >= 1 << 31 else v


def wrap_unsigned(v: int) -> int:
    """Wrap an integer to the uint32 range."""
    return v & _MASK


def to_float32(v: float) -> float:
    """Round a Python float to the nearest 32-bit float (overflow gives infinity)."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _wrap(v: int, ty: str) -> int:
    return wrap_number(v) if ty == "number" else wrap_unsigned(v)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_pow(a: int, b: int) -> int:
    if b >= 0:
        return pow(a, b, 1 << 32)
    if a == 1:
        return 1
    if a == -1:
        return -1 if b % 2 else 1
    return 0  # |a| >= 2: the real result truncates to zero (a == 0 is left unfolded)


def _int_op(op: str, a: int, b: int, ty: str) -> int | None:
    if op in ("/", "%"):
        if b == 0:
            return None
        q = _trunc_div(a, b)
        return q if op == "/" else a - b * q
    if op == "^":
        return None if a == 0 and b < 0 else _int_pow(a, b)
    if op in ("bshl", "bshr", "bshru"):
        if not 0 <= b < 32:
            return None
        if op == "bshl":
            return a << b
        if op == "bshr" and ty == "number":
            return a >> b  # arithmetic shift of the signed value
        return (a & _MASK) >> b
    simple: dict[str, Callable[[int, int], int]] = {
        "+": lambda x, y: x + y,
        "-": lambda x, y: x - y,
        "*": lambda x, y: x * y,
        "band": lambda x, y: x & y,
        "bor": lambda x, y: x | y,
        "bxor": lambda x, y: x ^ y,
        "land": lambda x, y: int(bool(x) and bool(y)),
        "lor": lambda x, y: int(bool(x) or bool(y)),
    }
    fn = simple.get(op)
    return None if fn is None else fn(a, b)


def _float_op(op: str, a: float, b: float) -> float | None:
    try:
        if op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        elif op == "/":
            if b == 0:
                return None
            r = a / b
        elif op == "^":
            r = math.pow(a, b)
        else:
            return None
    except (OverflowError, ValueError, ZeroDivisionError):
        return None
    return to_float32(r)


def _convert(op: str, v: int | float) -> int | float | None:
    if op == "itou":
        return wrap_unsigned(int(v))
    if op == "utoi":
        return wrap_number(int(v))
    if op in ("itof", "utof"):
        return to_float32(float(v))
    if op in ("ftoi", "ftou"):
        if not math.isfinite(v):
            return None
        t = math.trunc(v)
        lo, hi = (-(1 << 31), (1 << 31) - 1) if op == "ftoi" else (0, _MASK)
        return t if lo <= t <= hi else None
    return None


def fold_call(op: str, args: tuple[Const, ...], ty: str) -> Const | None:
    """Fold ``op(args)`` with result type ``ty``; ``None`` when it is not folded."""
    values = [a.value for a in args]
    if op in ("itou", "utoi", "itof", "utof", "ftoi", "ftou"):
        r = _convert(op, values[0])
        return None if r is None else Const(r, ty)  # type: ignore[arg-type]
    if ty == "float":
        fvals = [float(v) for v in values]
        if op == "neg":
            return Const(-fvals[0], ty)
        if op in ("min", "max"):
            return Const((min if op == "min" else max)(fvals), ty)
        fr = _float_op(op, fvals[0], fvals[1]) if len(fvals) == 2 else None
        return None if fr is None else Const(fr, ty)
    if ty not in ("number", "unsigned"):
        return None
    ivals = [int(v) for v in values]
    if op in ("min", "max"):
        return Const((min if op == "min" else max)(ivals), ty)
    if op == "neg":
        r: int | None = -ivals[0]
    elif op == "bnot":
        r = ~ivals[0]
    elif op == "lnot":
        r = int(ivals[0] == 0)
    elif len(ivals) == 2:
        r = _int_op(op, ivals[0], ivals[1], ty)
    else:
        r = None
    return None if r is None else Const(_wrap(r, ty), ty)


def compare_consts(op: str, a: Const, b: Const) -> bool:
    """Evaluate a comparison of two constants of the same type."""
    x, y = a.value, b.value
    if op == "=":
        return x == y
    if op == "!=":
        return x != y
    if op == "<":
        return x < y  # type: ignore[operator]
    if op == "<=":
        return x <= y  # type: ignore[operator]
    if op == ">":
        return x > y  # type: ignore[operator]
    return x >= y  # type: ignore[operator]
