"""User-defined functors (``@name(...)``, declared with ``.functor``) as column operations.

The code of a user-defined functor lives in a shared library the host loads
(``host/functor_libs.py``) and attaches to the symbol table as ``symbols.functors`` (an
:class:`gpu_engine.ir.FunctorLibrary`).  A call is evaluated once per *distinct* row of
its arguments: the stored columns are deduplicated, decoded to the C types of the word size
(``number`` int32/int64, ``unsigned`` uint32/uint64, ``float`` float32/float64, ``symbol``
text), handed to the library in one call and the results encoded and spread back.  Soufflé
calls a functor once per tuple; a stateless functor is a function of its arguments, so
calling it once per distinct argument row gives the same relation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu_engine.kernels.backend import Backend

from .ir import Call, FunctorDecl, ProgramError
from .values import floats_from_host, floats_to_host

_INT = {32: np.int32, 64: np.int64}
_UINT = {32: np.uint32, 64: np.uint64}
_FLOAT = {32: np.float32, 64: np.float64}


def functor_decl(symbols: Any, call: Call) -> FunctorDecl:
    """The declaration of the functor ``call`` applies (``symbols.functors`` knows it)."""
    library = getattr(symbols, "functors", None)
    decl = library.decls.get(call.op[1:]) if library is not None else None
    if decl is None:
        raise ProgramError(f"user-defined functor '{call.op[1:]}' has no implementation: "
                           "load its library (gpu-engine run -L DIR -l NAME, or the "
                           "Reasoner's library_dirs/libraries)")
    return decl


def apply_user_functor(be: Backend, symbols: Any, call: Call, vals: list[Any], n: int,
                       bits: int, valid: Any | None = None) -> Any:
    """The stored result column of ``call`` over the stored argument columns ``vals``
    (rows outside ``valid`` are not passed to the library; their result is 0)."""
    decl = functor_decl(symbols, call)
    host = [np.ascontiguousarray(be.to_host(v), dtype=np.int64) for v in vals]
    if valid is not None:
        keep = np.asarray(be.to_host(valid), dtype=bool)
        out = np.zeros(n, dtype=np.int64)
        if keep.any():
            out[keep] = _apply(symbols, decl, [h[keep] for h in host], int(keep.sum()), bits)
        return be.asarray(out)
    return be.asarray(_apply(symbols, decl, host, n, bits))


def _apply(symbols: Any, decl: FunctorDecl, host: list[np.ndarray], n: int,
           bits: int) -> np.ndarray:
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if not host:  # a nullary functor: one call
        distinct: list[np.ndarray] = []
        inverse = np.zeros(n, dtype=np.int64)
        m = 1
    elif len(host) == 1:
        u, inverse = np.unique(host[0], return_inverse=True)
        distinct, m = [u], len(u)
    else:
        rows, inverse = np.unique(np.stack(host, axis=1), axis=0, return_inverse=True)
        distinct, m = [rows[:, j] for j in range(rows.shape[1])], len(rows)
    args = [_decode(symbols, col, typ, bits) for col, typ in zip(distinct, decl.params,
                                                                  strict=True)]
    result = symbols.functors.call(decl, args, m)
    return _encode(symbols, result, decl.result, bits, m)[np.asarray(inverse).reshape(-1)]


def _decode(symbols: Any, col: np.ndarray, typ: str, bits: int) -> Any:
    if typ == "symbol":
        return list(symbols.decode_many(col))
    if typ == "float":
        return floats_to_host(col, bits)
    if typ == "unsigned":
        return col.astype(_INT[bits]).view(_UINT[bits])
    return col.astype(_INT[bits])


def _encode(symbols: Any, result: Any, typ: str, bits: int, m: int) -> np.ndarray:
    if typ == "symbol":
        return np.asarray(symbols.encode_many(list(result)), dtype=np.int64).reshape(m)
    arr = np.asarray(result).reshape(m)
    if typ == "float":
        return np.asarray(floats_from_host(arr.astype(_FLOAT[bits]), bits), dtype=np.int64)
    if typ == "unsigned":  # 64 bits: the uint64 bit pattern
        return arr.astype(_UINT[bits]).astype(np.int64) if bits == 32 \
            else arr.astype(np.uint64).view(np.int64)
    return arr.astype(_INT[bits]).astype(np.int64)


__all__ = ["apply_user_functor", "functor_decl"]
