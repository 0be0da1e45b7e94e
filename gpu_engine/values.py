"""Value semantics of Soufflé's builds, as column operations: the default 32-bit build
and the 64-bit one (``souffle -d64``-like, chosen per run by the *word size*).

Every column is int64.  With 32-bit words ``number`` holds int32 values, ``unsigned``
uint32 values and ``float`` the int32 bit pattern of a float32; with 64-bit words
``number`` holds int64 values, ``unsigned`` the int64 bit pattern of a uint64 (values
from 2^63 up are stored negative: ordering comparisons flip the sign bit first) and
``float`` the bit pattern of a float64.  ``symbol`` holds dictionary ids in both.  Floats
have -0.0 normalised to 0.0, so equal floats have equal bits.  Arithmetic is done on
wide values and wrapped back to the word (64-bit arithmetic wraps in int64 itself);
``/`` and ``%`` truncate toward zero as in C.

The word size reaches the engine on its symbol table (``symbols.word_size``, read by
:func:`word_size`; absent means 32), which the host sets from the run's option.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from gpu_engine.kernels.backend import INDEX, Backend

from .ir import ColumnType

_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1
SIGN64 = -(1 << 63)
WORD_SIZES = (32, 64)


def word_size(symbols: Any) -> int:
    """The word size (32 or 64) a symbol table carries (32 when it carries none)."""
    return int(getattr(symbols, "word_size", 32))


def int_range(typ: str, bits: int = 32) -> tuple[int, int]:
    """The closed range of values of ``number`` or ``unsigned`` in a word of ``bits``."""
    if typ == "unsigned":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def wrap(be: Backend, v: Any, typ: ColumnType, bits: int = 32) -> Any:
    """Wrap wide integer results to the word of ``typ`` (64 bits: int64 has wrapped)."""
    if bits == 64:
        return v
    if typ == "number":
        return ((v + (1 << 31)) & _U32) - (1 << 31)
    if typ == "unsigned":
        return v & _U32
    return v


def wrap_int(v: int, typ: str, bits: int = 32) -> int:
    """A Python integer wrapped to the stored value of ``typ`` (two's complement; a
    64-bit unsigned value is stored as its int64 bit pattern)."""
    mask = (1 << bits) - 1
    v &= mask
    if typ == "unsigned" and bits == 32:
        return v
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def encode_scalar(value: Any, typ: ColumnType, bits: int = 32) -> int:
    """A Python constant (not a symbol) as its stored int64 value."""
    if typ == "float":
        f = float(value) + 0.0
        if bits == 64:
            return struct.unpack("<q", struct.pack("<d", f))[0]
        return struct.unpack("<i", struct.pack("<f", f))[0]
    v = int(value)
    if typ in ("number", "unsigned"):
        return wrap_int(v, typ, bits)
    return v


def decode_scalar(value: int, typ: ColumnType, bits: int = 32) -> int | float:
    """A stored int64 value of a number, unsigned or float as a Python value."""
    if typ == "float":
        if bits == 64:
            return struct.unpack("<d", struct.pack("<q", int(value)))[0]
        return struct.unpack("<f", struct.pack("<i", int(value)))[0]
    if typ == "unsigned" and bits == 64:
        return int(value) & _U64
    return int(value)


# NaN bits as x86-64 builds make them (Soufflé's outputs are such builds'): a NaN
# operand's sign and payload survive arithmetic and conversion; an invalid operation on
# numbers gives the default NaN, whose sign bit is set ("-nan").  A GPU (and an Arm CPU)
# returns a positive canonical NaN instead, so NaNs are put right in integer space, where a
# select keeps every bit.
_QUIET64 = 0x7FF8000000000000
DEFAULT_NAN64 = SIGN64 | _QUIET64  # 0xFFF8000000000000
_QUIET32 = 0x7FC00000


def _some(be: Backend, mask: Any) -> bool:
    """Whether ``mask`` may hold a True: asked on the host only (on a device the answer
    would cost a synchronisation, more than the selection it saves)."""
    return bool(be.is_gpu) or bool(mask.any())


def float_decode(be: Backend, col: Any, bits: int = 32) -> Any:
    """Stored float bits (int64) -> float64 values (NaN sign and payload kept, as x86's
    widening conversion keeps them)."""
    if bits == 64:
        return col.astype(INDEX, copy=False).view(np.float64)
    f = col.astype(np.int32).view(np.float32).astype(np.float64)
    xp = be.xp
    isnan = xp.isnan(f)
    if not _some(be, isnan):
        return f
    c = col.astype(INDEX, copy=False)
    nan = SIGN64 * ((c >> 31) & 1) | _QUIET64 | ((c & 0x3FFFFF) << 29)
    return xp.where(isnan, nan, f.view(INDEX)).view(np.float64)


def float_encode(be: Backend, vals: Any, bits: int = 32) -> Any:
    """float64 values -> stored float bits (rounded to the word's float, -0.0 made 0.0, a
    NaN's sign and leading payload bits kept as x86's narrowing conversion keeps them)."""
    xp = be.xp
    vals = vals.astype(np.float64, copy=False)
    isnan = xp.isnan(vals)
    some = _some(be, isnan)
    b = vals.view(INDEX)
    if bits == 64:
        out = (vals + np.float64(0.0)).view(INDEX)
        return xp.where(isnan, b | _QUIET64, out) if some else out
    out = (vals.astype(np.float32) + np.float32(0.0)).view(np.int32).astype(INDEX)
    if not some:
        return out
    return xp.where(isnan, ((b >> 32) & ~0x7FFFFFFF) | _QUIET32 | ((b >> 29) & 0x3FFFFF), out)


def x86_nan(be: Backend, result: Any, operands: list[Any]) -> Any:
    """``result`` (float64) of an operation on ``operands`` with its NaNs as x86 makes
    them: the first NaN operand, quieted, else the default NaN (sign set)."""
    xp = be.xp
    isnan = xp.isnan(result)
    if not _some(be, isnan):
        return result
    fill: Any = DEFAULT_NAN64
    for a in reversed(operands):
        fill = xp.where(xp.isnan(a), a.view(INDEX) | _QUIET64, fill)
    return xp.where(isnan, fill, result.view(INDEX)).view(np.float64)


def floats_to_host(col: np.ndarray, bits: int = 32) -> np.ndarray:
    """Stored float bits -> host floats of the word (float32 or float64)."""
    if bits == 64:
        return np.ascontiguousarray(col, dtype=np.int64).view(np.float64)
    return col.astype(np.int32).view(np.float32)


def floats_from_host(vals: np.ndarray, bits: int = 32) -> np.ndarray:
    """Host floats -> stored float bits (rounded to the word's float, -0.0 made 0.0)."""
    if bits == 64:
        return (np.asarray(vals, dtype=np.float64) + 0.0).view(np.int64)
    f = np.asarray(vals, dtype=np.float32) + np.float32(0.0)
    return f.view(np.int32).astype(np.int64)


def unsigned_order(be: Backend, col: Any, bits: int = 32) -> Any:
    """Keys that order stored unsigned values as unsigned (64 bits: the sign bit flipped)."""
    return col ^ SIGN64 if bits == 64 else col


def unsigned_to_float(be: Backend, col: Any, bits: int = 32) -> Any:
    """Stored unsigned values as float64."""
    if bits == 64:
        return col.view(np.uint64).astype(np.float64)
    return col.astype(np.float64)


def c_div(be: Backend, a: Any, b: Any) -> tuple[Any, Any]:
    """C-style truncating integer division: (quotient, valid mask); b == 0 is invalid.
    (``INT64_MIN / -1``, undefined in C, gives INT64_MIN.)"""
    xp = be.xp
    ok = b != 0
    bs = xp.where(ok, b, 1)
    q = xp.abs(a) // xp.abs(bs)
    q = xp.where((a < 0) != (bs < 0), -q, q)
    return q, ok


def c_div_wide(be: Backend, a: Any, b: Any, typ: ColumnType) -> tuple[Any, Any]:
    """Truncating division of 64-bit words: signed (INT64_MIN's magnitude kept exact) or
    unsigned (on uint64 views); (quotient, valid mask)."""
    xp = be.xp
    ok = b != 0
    bs = xp.where(ok, b, 1)
    if typ == "unsigned":
        return (a.view(np.uint64) // bs.view(np.uint64)).view(INDEX), ok
    ua = xp.where(a < 0, -a, a).view(np.uint64)  # -INT64_MIN wraps to itself: 2^63 unsigned
    ub = xp.where(bs < 0, -bs, bs).view(np.uint64)
    q = (ua // ub).view(INDEX)
    return xp.where((a < 0) != (bs < 0), -q, q), ok


def float_to_int(be: Backend, f: Any, typ: ColumnType, bits: int = 32) -> Any:
    """C's conversion of doubles ``f`` to the word's ``number`` or ``unsigned`` as x86-64
    builds of Soufflé do it (``static_cast``; out of range is undefined in C, the
    instructions decide): to a signed word, truncation, and the most negative value for
    NaN, infinities and whatever lies outside; to an unsigned word, through int64 (low
    bits of the truncation below 2^63; 2^63 up to 2^64 exactly with 64-bit words; 0
    beyond and for NaN).  Explicit, so that a GPU's saturating conversion does not
    differ."""
    xp = be.xp
    with np.errstate(invalid="ignore", over="ignore"):
        t = xp.trunc(f)
        if typ == "number":
            lo = -2.0 ** (bits - 1)
            ok = (t >= lo) & (t < 2.0 ** (bits - 1))
            return xp.where(ok, t, lo).astype(INDEX)
        ok = (t >= -2.0 ** 63) & (t < 2.0 ** 63)
        out = xp.where(ok, t, 0).astype(INDEX)
        if bits == 64:
            big = (t >= 2.0 ** 63) & (t < 2.0 ** 64)
            hi = xp.where(big, t, 0).astype(np.uint64).view(INDEX)
            out = xp.where(big, hi, out)
        return wrap(be, out, typ, bits)


def int_pow(be: Backend, base: Any, exp: Any, typ: ColumnType, bits: int = 32) -> Any:
    """Integer power by repeated squaring on whole columns (one round a bit), wrapped."""
    xp = be.xp
    result = xp.ones_like(base)
    b = wrap(be, base, typ, bits)
    unsigned64 = bits == 64 and typ == "unsigned"
    neg = exp < 0
    e = exp.view(np.uint64) if unsigned64 else xp.where(neg, 0, exp)
    for _ in range(bits):
        result = xp.where((e & 1) == 1, wrap(be, result * b, typ, bits), result)
        b = wrap(be, b * b, typ, bits)
        e = e >> 1
    if typ == "number":
        # Soufflé: x ^ negative truncates the real power (1 for |x| = 1 with even/odd sign)
        result = xp.where(neg, xp.where(base == 1, 1, xp.where(base == -1,
                          xp.where((exp & 1) == 0, 1, -1), 0)), result)
    return result
