"""Value semantics of Soufflé's default (32-bit) build, as column operations.

Every column is int64.  ``number`` holds int32 values, ``unsigned`` uint32 values,
``symbol`` dictionary ids and ``float`` the int32 bit pattern of a float32 (with -0.0
normalised to 0.0, so equal floats have equal bits).  Arithmetic is done on wide
values and wrapped back to 32 bits; ``/`` and ``%`` truncate toward zero as in C.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from gpu_engine.kernels.backend import INDEX, Backend

from .ir import ColumnType

_U32 = (1 << 32) - 1


def wrap(be: Backend, v: Any, typ: ColumnType) -> Any:
    """Wrap wide integer results to the 32-bit domain of ``typ``."""
    if typ == "number":
        return ((v + (1 << 31)) & _U32) - (1 << 31)
    if typ == "unsigned":
        return v & _U32
    return v


def encode_scalar(value: Any, typ: ColumnType) -> int:
    """A Python constant (not a symbol) as its stored int64 value."""
    if typ == "float":
        f = float(value) + 0.0
        return struct.unpack("<i", struct.pack("<f", f))[0]
    v = int(value)
    if typ == "number":
        return ((v + (1 << 31)) & _U32) - (1 << 31)
    if typ == "unsigned":
        return v & _U32
    return v


def float_decode(be: Backend, col: Any) -> Any:
    """Stored float bits (int64) -> float64 values."""
    return col.astype(np.int32).view(np.float32).astype(np.float64)


def float_encode(be: Backend, vals: Any) -> Any:
    """float64 values -> stored float bits (rounded to float32, -0.0 made 0.0)."""
    f = vals.astype(np.float32) + np.float32(0.0)
    return f.view(np.int32).astype(INDEX)


def floats_to_host(col: np.ndarray) -> np.ndarray:
    return col.astype(np.int32).view(np.float32)


def floats_from_host(vals: np.ndarray) -> np.ndarray:
    f = np.asarray(vals, dtype=np.float32) + np.float32(0.0)
    return f.view(np.int32).astype(np.int64)


def c_div(be: Backend, a: Any, b: Any) -> tuple[Any, Any]:
    """C-style truncating integer division: (quotient, valid mask); b == 0 is invalid."""
    xp = be.xp
    ok = b != 0
    bs = xp.where(ok, b, 1)
    q = xp.abs(a) // xp.abs(bs)
    q = xp.where((a < 0) != (bs < 0), -q, q)
    return q, ok


def int_pow(be: Backend, base: Any, exp: Any, typ: ColumnType) -> Any:
    """Integer power by repeated squaring on whole columns (32 rounds), wrapped."""
    xp = be.xp
    result = xp.ones_like(base)
    b = wrap(be, base, typ)
    e = xp.where(exp < 0, 0, exp)
    neg = exp < 0
    for _ in range(32):
        result = xp.where((e & 1) == 1, wrap(be, result * b, typ), result)
        b = wrap(be, b * b, typ)
        e = e >> 1
    if typ == "number":
        # Soufflé: x ^ negative truncates the real power (1 for |x| = 1 with even/odd sign)
        result = xp.where(neg, xp.where(base == 1, 1, xp.where(base == -1,
                          xp.where((exp & 1) == 0, 1, -1), 0)), result)
    return result
