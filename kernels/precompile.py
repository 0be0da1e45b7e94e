"""Compile the Numba kernels ahead of their first use, into Numba's on-disk cache.

A kernel is compiled for each type signature it meets, the first time a process meets
it, and kept in Numba's cache (:mod:`kernels.numba_cache`).  A fresh installation or
checkout has no cache, so the first large materialisation or update compiles what it
meets, and so does every process that meets a kernel before the cache holds it: the
test suite's workers each compiled the same kernels (about 85 s on the 2-core CI
machine).  ``python -m gpu_engine.kernels.precompile`` compiles the signatures listed in
:data:`kernels.precompile_list.SIGNATURES` (those the test suite meets) in parallel
processes, one kernel per task; a signature the cache already holds only loads.
``--record`` rewrites that list from the cache of this checkout (after ``make test``).

It changes no result: a signature missing from the list is compiled at its first use,
as without this step, and a listed one that no longer types (a kernel changed) is
skipped and reported.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

# modules holding kernels compiled with ``njit(cache=...)``, relative to gpu_engine.kernels
MODULES = ("cpu_numba", "cpu_small", "dense_seen", "radix_sort", "small_path")
LIST_FILE = Path(__file__).with_name("precompile_list.py")


@functools.cache
def _types_namespace() -> dict[str, Any]:
    """Numba's type names (and ``bool`` for its boolean), for :func:`parse_type`."""
    from numba.core import types

    ns = {k: v for k, v in vars(types).items() if not k.startswith("_")}
    ns["bool"] = types.boolean
    return ns


def parse_type(text: str) -> Any:
    """The Numba type a list entry names (``int64[::1]``, ``UniTuple(int64[::1], 2)``,
    ``bool``: what :func:`_short` writes)."""
    return eval(text, {"__builtins__": {}}, _types_namespace())  # noqa: S307


def _kernel(key: str) -> Any:
    """The kernel ``module.name`` of a list entry."""
    module, name = key.split(".", 1)
    return getattr(importlib.import_module(f"gpu_engine.kernels.{module}"), name)


def _compile_one(key: str, sigs: list[list[str]]) -> tuple[int, list[str]]:
    """Compile (or load) kernel ``key`` for each signature: (how many, errors)."""
    try:
        disp = _kernel(key)
    except (ImportError, AttributeError) as exc:
        return 0, [f"{key}: {exc}"]
    done, errors = 0, []
    for sig in sigs:
        try:
            disp.compile(tuple(parse_type(t) for t in sig))
            done += 1
        except Exception as exc:  # a kernel that changed: compiled at its first use instead
            errors.append(f"{key}{tuple(sig)}: {type(exc).__name__}: {str(exc)[:200]}")
    return done, errors


def precompile(jobs: int = 1, quiet: bool = False) -> int:
    """Compile every listed signature, ``jobs`` kernels at a time; the errors' count."""
    try:
        import numba  # noqa: F401
    except ImportError:  # pragma: no cover - numba is a dependency
        return 0
    from . import numba_cache
    from .precompile_list import SIGNATURES

    if not numba_cache.CACHE:  # no cache location: nothing would be kept
        if not quiet:
            print("precompile: Numba has no writable cache here; nothing to do")
        return 0
    t0 = time.perf_counter()
    # the interpreter's kernels (the longest to compile) and the many-signature ones first
    keys = sorted(SIGNATURES, key=lambda k: (not k.startswith("small_path."),
                                             -len(SIGNATURES[k])))
    sigs = [SIGNATURES[k] for k in keys]
    results = None
    if jobs > 1:
        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                results = list(pool.map(_compile_one, keys, sigs))
        except (OSError, BrokenProcessPool) as exc:  # no processes here: one at a time
            print(f"precompile: {type(exc).__name__}: {exc}; compiling in this process")
    if results is None:
        results = list(map(_compile_one, keys, sigs))
    total = sum(done for done, _ in results)
    errors = [e for _, errs in results for e in errs]
    if not quiet or errors:
        print(f"precompile: {total} kernel signatures compiled or loaded in "
              f"{time.perf_counter() - t0:.1f} s ({jobs} processes)"
              + (f"; {len(errors)} skipped:" if errors else ""))
        for e in errors:
            print("  " + e)
    return len(errors)


def record() -> dict[str, list[list[str]]]:
    """The signatures this checkout's Numba cache holds, per kernel (for the list)."""
    out: dict[str, list[list[str]]] = {}
    for module in MODULES:
        mod = importlib.import_module(f"gpu_engine.kernels.{module}")
        for name, obj in sorted(vars(mod).items()):
            cache = getattr(obj, "_cache", None)
            cache_file = getattr(cache, "_cache_file", None)
            if cache_file is None or getattr(obj, "py_func", None) is None \
                    or obj.py_func.__module__ != mod.__name__:
                continue  # (not a cached kernel of this module)
            try:
                index = cache_file._load_index()
            except OSError:
                continue
            sigs = sorted({tuple(_short(t) for t in key[0]) for key in index})
            if sigs:
                out[f"{module}.{name}"] = [list(s) for s in sigs]
    return out


def _short(t: Any) -> str:
    """A Numba type as a string that evaluates back to it (C-contiguous arrays as
    ``int64[::1]``, the way signatures are usually written)."""
    from numba.core import types

    if isinstance(t, types.Array) and t.layout == "C" and t.mutable and t.aligned:
        return f"{t.dtype}[{', '.join([':'] * (t.ndim - 1) + ['::1'])}]"
    if isinstance(t, types.UniTuple):
        return f"UniTuple({_short(t.dtype)}, {t.count})"
    return repr(t)


def _write_list(sigs: dict[str, list[list[str]]]) -> None:
    lines = ['"""Kernel signatures for :mod:`kernels.precompile`: written by',
             "``python -m gpu_engine.kernels.precompile --record`` from the Numba cache after",
             '``make test`` (one line per signature: the types of its arguments)."""',
             "", "SIGNATURES: dict[str, list[list[str]]] = {"]
    for key in sorted(sigs):
        lines.append(f"    {key!r}: [")
        lines.extend(f"        {list(sig)!r}," for sig in sigs[key])
        lines.append("    ],")
    lines.append("}")
    LIST_FILE.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpu_engine.kernels.precompile",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="processes compiling at once (default: one per core)")
    ap.add_argument("--quiet", action="store_true", help="print only what was skipped")
    ap.add_argument("--record", action="store_true",
                    help=f"rewrite {LIST_FILE.name} from this checkout's Numba cache")
    args = ap.parse_args(argv)
    if args.record:
        sigs = record()
        _write_list(sigs)
        print(f"precompile: recorded {sum(map(len, sigs.values()))} signatures of "
              f"{len(sigs)} kernels in {LIST_FILE}")
        return 0
    try:
        precompile(max(1, args.jobs), args.quiet)
    except Exception as exc:  # (an optimisation only: the kernels compile at first use)
        print(f"precompile: stopped ({type(exc).__name__}: {exc}); kernels compile at "
              "their first use instead")
    return 0  # (skipped signatures are compiled at their first use: not an error)


if __name__ == "__main__":
    sys.exit(main())
