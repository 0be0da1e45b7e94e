"""Constant folding with the semantics of Soufflé's default 32-bit build (or, inside
:func:`word_size_context` ``(64)``, of its 64-bit build).

``number`` wraps as int32, ``unsigned`` as uint32, ``/`` and ``%`` truncate toward zero
like C, ``^`` is integer power (wrapping), ``float`` is 32-bit IEEE (64-bit words: int64,
uint64 and double).  Operations whose
result C leaves undefined (division by zero, over-wide shifts, out-of-range float to
integer conversions) are not folded: :func:`fold_call` returns ``None`` and the engine
evaluates them.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from gpu_engine.ir import Const
from gpu_engine.values import int_range

_WORD: ContextVar[int] = ContextVar("word_size", default=32)


def word_bits() -> int:
    """The word size (32 or 64) the front end is reading a program with."""
    return _WORD.get()


@contextmanager
def word_size_context(bits: int) -> Iterator[None]:
    """Read (type-check and fold) programs with ``bits``-wide values inside."""
    token = _WORD.set(bits)
    try:
        yield
    finally:
        _WORD.reset(token)


def wrap_number(v: int) -> int:
    """Wrap an integer to the signed range of the word (int32 or int64)."""
    bits = _WORD.get()
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def wrap_unsigned(v: int) -> int:
    """Wrap an integer to the unsigned range of the word (uint32 or uint64)."""
    return v & ((1 << _WORD.get()) - 1)


def to_float32(v: float) -> float:
    """Round a Python float to the word's float: the nearest 32-bit float (overflow gives
    infinity), or the float itself with 64-bit words."""
    if _WORD.get() == 64:
        return float(v)
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
        return pow(a, b, 1 << _WORD.get())
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
        bits = _WORD.get()
        if not 0 <= b < bits:
            return None
        if op == "bshl":
            return a << b
        if op == "bshr" and ty == "number":
            return a >> b  # arithmetic shift of the signed value
        return (a & ((1 << bits) - 1)) >> b
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
        lo, hi = int_range("number" if op == "ftoi" else "unsigned", _WORD.get())
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
