"""Soufflé's command-line options that ``gpu-engine run`` understands, and those it refuses.

``-I DIR`` (include folders for ``.include`` and ``#include``), ``-M "X=1 Y=2"`` (macros for
the C preprocessor), ``--no-preprocessor``, ``-j N`` (threads of the CPU kernels), ``-w``
(no warnings or notes), ``-L DIR``/``-l NAME`` (shared libraries of user-defined functors,
``host/functor_libs.py``) and ``--version`` behave as in Soufflé; options for what this
engine does not do (compilation, provenance, ...) are refused by name rather than
ignored.  (``-p FILE``/``--profile FILE``, Soufflé's profile, is an option of ``run``
itself: see ``host/profile.py``.)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from gpu_engine import __version__
from gpu_engine.ir import ProgramError

from .lang.dl_source import ProgramSource, SourceOptions, load_source, parse_macros

VERSION = f"gpu-engine {__version__}"

# Soufflé options without an equivalent here: (flags, takes a value, what they are for)
_REFUSED: tuple[tuple[tuple[str, ...], bool, str], ...] = (
    (("-o", "--dl-program"), True, "compiling the program to an executable"),
    (("-c", "--compile"), False, "compiling the program to an executable"),
    (("-g", "--generate"), True, "generating C++ code"),
    (("-s", "--swig"), True, "SWIG interfaces"),
    (("-t", "--provenance"), True, "provenance (use 'gpu-engine explain' on a store)"),
    (("-r", "--debug-report"), True, "HTML debug reports"),
    (("--show",), True, "printing transformed programs"),
)


class _Refuse(argparse.Action):
    """An option of Soufflé's that this engine does not support: a clear error."""

    def __init__(self, option_strings: list[str], dest: str, what: str = "",
                 **kwargs: Any) -> None:
        self.what = what
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser.error(f"{option_string} is a Soufflé option for {self.what}, which gpu-engine "
                     "does not support")


def add_version(p: argparse.ArgumentParser) -> None:
    """``--version`` (as ``souffle --version``)."""
    p.add_argument("--version", action="version", version=VERSION)


def add_souffle_options(run: argparse.ArgumentParser) -> None:
    """The Soufflé options of ``run`` (see the module docstring)."""
    run.add_argument("-I", "--include-dir", action="append", default=[], metavar="DIR",
                     help="folder searched for .include and #include files (repeatable; the "
                          "including file's folder is searched first)")
    run.add_argument("-M", "--macro", action="append", default=[], metavar="'X=1 Y=2'",
                     help="macro definitions for the C preprocessor (repeatable)")
    run.add_argument("--no-preprocessor", action="store_true",
                     help="do not run the C preprocessor (cpp) on the program")
    run.add_argument("-j", "--jobs", metavar="N",
                     help="threads of the CPU kernels: a number or 'auto' (all cores)")
    run.add_argument("-L", "--library-dir", action="append", default=[], metavar="DIR",
                     help="folder searched for the libraries of user-defined functors "
                          "(repeatable; default: the current folder)")
    run.add_argument("-l", "--libraries", action="append", default=[], metavar="NAME",
                     help="library of user-defined functors, loaded as libNAME.so from the "
                          "-L folders, or a path (repeatable; default: functors)")
    run.add_argument("-w", "--no-warn", action="store_true",
                     help="print no warnings or notes")
    run.add_argument("-m", "--magic-transform", metavar="RELATIONS",
                     help="accepted for Soufflé compatibility and ignored (the magic-set "
                          "transformation does not change the results)")
    add_version(run)
    for flags, takes_value, what in _REFUSED:
        run.add_argument(*flags, action=_Refuse, what=what, nargs=None if takes_value else 0,
                         help=argparse.SUPPRESS)


def program_source(args: argparse.Namespace) -> ProgramSource:
    """The program of ``run``, read with its ``-I``/``-M``/``--no-preprocessor`` options."""
    for d in args.include_dir:
        if not Path(d).is_dir():
            raise ProgramError(f"-I {d}: no such folder")
    options = SourceOptions(include_dirs=tuple(args.include_dir),
                            macros=parse_macros(args.macro),
                            preprocessor=not args.no_preprocessor,
                            word_size=getattr(args, "word_size", 32))
    return load_source(args.program, options)


def set_threads(jobs: str | None) -> None:
    """``-j N``: the number of threads of the parallel (Numba) CPU kernels."""
    if jobs is None:
        return
    import numba

    most = int(numba.config.NUMBA_NUM_THREADS)
    if jobs == "auto":
        n = most
    else:
        try:
            n = int(jobs)
        except ValueError:
            raise ProgramError(f"-j expects a number of threads or 'auto', not {jobs!r}") from None
        if n < 1:
            raise ProgramError(f"-j expects at least one thread, not {n}")
    if n > most:
        print(f"note: -j {n}: using {most} threads (NUMBA_NUM_THREADS={most}, "
              f"{os.cpu_count()} cores)", file=sys.stderr)
        n = most
    numba.set_num_threads(n)
