"""Shared libraries of user-defined functors (Soufflé's ``-L``/``-l``), through ctypes.

As Soufflé's interpreter: every library ``NAME`` of ``libraries`` (default ``functors``) is
looked for as ``libNAME.so`` (``.dylib`` on macOS) in each folder of ``library_dirs``
(default ``.``); a ``NAME`` that is a path to a file is loaded as it is.  A functor
declared ``.functor f(number, symbol): float`` is the C function
``float f(int32_t, const char*)`` (``int64_t``/``double`` with 64-bit words; ``unsigned``
is ``uint32_t``/``uint64_t``), looked up in the libraries in order.  Stateful functors
(which take Soufflé's C++ tables) are refused by the front end.

Calls come vectorised over distinct argument rows (``gpu_engine.user_functors``): small
batches, and any signature with symbols, go through ctypes one row at a time; a batch of at
least ``COMPILE_ROWS`` rows of a numeric signature runs in a loop Numba compiles around the
C function (compiled once per functor).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpu_engine.ir import FunctorDecl, ProgramError

COMPILE_ROWS = 200_000  # distinct rows from which a numeric functor runs compiled
_SUFFIX = ".dylib" if sys.platform == "darwin" else ".so"


def _ctype(typ: str, bits: int) -> Any:
    if typ == "symbol":
        return ctypes.c_char_p
    if typ == "float":
        return ctypes.c_float if bits == 32 else ctypes.c_double
    if typ == "unsigned":
        return ctypes.c_uint32 if bits == 32 else ctypes.c_uint64
    return ctypes.c_int32 if bits == 32 else ctypes.c_int64


def _dtype(typ: str, bits: int) -> Any:
    return {"float": {32: np.float32, 64: np.float64},
            "unsigned": {32: np.uint32, 64: np.uint64},
            "number": {32: np.int32, 64: np.int64}}[typ][bits]


class SharedLibraries:
    """The functors of a program, bound to C functions of loaded shared libraries
    (a :class:`gpu_engine.ir.FunctorLibrary`)."""

    def __init__(self, decls: dict[str, FunctorDecl], libraries: Sequence[str] = ("functors",),
                 library_dirs: Sequence[str | Path] = (".",), word_size: int = 32) -> None:
        self.decls = dict(decls)
        self.bits = word_size
        self.searched: list[str] = []
        self.loaded: list[str] = []  # absolute paths of the libraries loaded, in order
        self._handles: list[ctypes.CDLL] = []
        for name in _split(libraries):
            for path in self._candidates(name, _split(library_dirs)):
                self.searched.append(str(path))
                if path.is_file():
                    try:
                        self._handles.append(ctypes.CDLL(str(path.resolve())))
                        self.loaded.append(str(path.resolve()))
                    except OSError as e:
                        raise ProgramError(f"cannot load functor library {path}: {e}") from None
        self._functions = {name: self._bind(d) for name, d in self.decls.items()}
        self._compiled: dict[str, Any] = {}

    @staticmethod
    def _candidates(name: str, dirs: list[str]) -> list[Path]:
        if os.sep in name or name.endswith((".so", ".dylib")):
            return [Path(name)]
        return [Path(d) / f"lib{name}{_SUFFIX}" for d in dirs]

    def _bind(self, decl: FunctorDecl) -> Any:
        for handle in self._handles:
            try:
                fn = getattr(handle, decl.name)
            except AttributeError:
                continue
            fn.argtypes = [_ctype(t, self.bits) for t in decl.params]
            fn.restype = _ctype(decl.result, self.bits)
            return fn
        where = ", ".join(self.searched) or "no library"
        found = "" if self._handles else " (none of them exists)"
        raise ProgramError(f"functor '{decl.name}': no loaded library defines it (searched "
                           f"{where}{found}; use -L DIR and -l NAME)", decl.loc)

    def call(self, decl: FunctorDecl, args: list[Any], n: int) -> Any:
        """The functor's results over ``n`` argument rows (see ``ir.FunctorLibrary``)."""
        fn = self._functions[decl.name]
        numeric = "symbol" not in decl.params and decl.result != "symbol"
        if numeric and n >= COMPILE_ROWS:
            out = np.empty(n, dtype=_dtype(decl.result, self.bits))
            cols = [np.ascontiguousarray(a) for a in args]
            self._compiled_loop(decl, fn)(out, *cols)
            return out
        lists = [[s.encode("utf-8", "surrogateescape") for s in a] if t == "symbol"
                 else np.asarray(a).tolist() for a, t in zip(args, decl.params, strict=True)]
        rows = zip(*lists) if lists else [()] * n
        res = [fn(*row) for row in rows]
        if decl.result == "symbol":
            return [b.decode("utf-8", "surrogateescape") if b is not None else ""
                    for b in res]
        return np.asarray(res, dtype=_dtype(decl.result, self.bits))

    def _compiled_loop(self, decl: FunctorDecl, fn: Any) -> Any:
        loop = self._compiled.get(decl.name)
        if loop is None:
            import numba

            names = [f"a{i}" for i in range(len(decl.params))]
            call = ", ".join(f"{a}[i]" for a in names)
            ns: dict[str, Any] = {"fn": fn, "numba": numba}
            exec(  # a loop of the functor's arity around the C function (Numba calls ctypes)
                f"def loop(out{''.join(', ' + a for a in names)}):\n"
                f"    for i in range(out.shape[0]):\n"
                f"        out[i] = fn({call})\n", ns)
            loop = self._compiled[decl.name] = numba.njit(ns["loop"])
        return loop


def _split(items: Sequence[str | Path]) -> list[str]:
    """Names or folders, each item maybe several separated by spaces (as Soufflé's)."""
    return [part for item in items for part in str(item).split() if part]


__all__ = ["COMPILE_ROWS", "SharedLibraries"]
