"""``python -m benchmarks.campaigns.faultchild K ARGS...``: ``gpu-engine ARGS`` with an
injected ``EIO`` at the K-th write-side file operation (``open``/``io.open``/``os.open`` for
writing, ``os.replace``/``rename``/``fsync``/``mkdir``/``rmdir``/``unlink``) made from Python.

Only operations on paths under ``FAULTCHILD_DIRS`` (``:``-separated; the store and output
folders) count, and every ``fsync``: imports and Numba's cache write elsewhere, and swallow
their own errors.  ``FAULTCHILD_COUNT=FILE`` writes the number of such operations at exit (calibration runs use
``K = 0``, which injects nothing).  Writes that Arrow makes itself (Parquet output) are not
seen.
"""

from __future__ import annotations

import atexit
import builtins
import errno
import io
import os
import sys
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def install(k: int) -> list[int]:
    """Patch the write-side file operations; the ``k``-th raises ``OSError(EIO)``."""
    calls = [0]

    def hit(name: str) -> None:
        calls[0] += 1
        if calls[0] == k:
            raise OSError(errno.EIO, f"Input/output error (injected into {name})")

    dirs = [os.path.realpath(d) for d in os.environ.get("FAULTCHILD_DIRS", "").split(":") if d]

    def targeted(*paths: Any) -> bool:
        for p in paths:
            if isinstance(p, int):
                return True  # a file descriptor (fsync)
            try:
                real = os.path.realpath(os.fspath(p))
            except TypeError:
                continue
            if any(real == d or real.startswith(d + os.sep) for d in dirs):
                return True
        return False

    def wrap(module: Any, name: str, writes: Any = None, npaths: int = 1) -> None:
        real = getattr(module, name)

        def patched(*args: Any, **kwargs: Any) -> Any:
            if (writes is None or writes(*args, **kwargs)) and targeted(*args[:npaths]):
                hit(name)
            return real(*args, **kwargs)

        setattr(module, name, patched)

    def open_writes(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> bool:
        return any(ch in str(kwargs.get("mode", mode)) for ch in "wax+")

    def os_open_writes(path: Any, flags: int, *args: Any, **kwargs: Any) -> bool:
        return bool(flags & _WRITE_FLAGS)

    real_open = io.open
    wrap(io, "open", open_writes)
    builtins.open = io.open  # the same function as io.open before patching
    del real_open
    wrap(os, "open", os_open_writes)
    for name in ("replace", "rename"):
        wrap(os, name, npaths=2)
    for name in ("fsync", "mkdir", "rmdir", "unlink"):
        wrap(os, name)
    return calls


def main() -> int:
    k = int(sys.argv[1])
    calls = install(k)
    count_file = os.environ.get("FAULTCHILD_COUNT")
    if count_file:
        atexit.register(lambda: open(count_file, "w").write(str(calls[0])))
    from gpu_engine.host.cli import main as cli_main

    return cli_main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
