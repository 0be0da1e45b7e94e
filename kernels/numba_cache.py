"""Where Numba may cache compiled kernels (``cache=True``), decided once per process.

Numba looks for a writable cache next to the source (``__pycache__``), then in the
user-wide cache directory; when neither is usable (a read-only installation and no
writable home) decorating a function with ``cache=True`` raises at import.  Then this
module points ``NUMBA_CACHE_DIR`` at a fresh temporary directory, and when even that
cannot be used it turns caching off: the kernels are compiled in every process instead.
``CACHE`` is the flag to pass to ``njit(cache=...)``.
"""

from __future__ import annotations

import os
import tempfile

try:
    from numba.core import caching as _caching
    from numba.core import config as _config
except ImportError:  # pragma: no cover - numba is a dependency
    _caching = None


def _probe() -> None:
    """A function of this file: if Numba finds a cache locator for it, it finds one for
    every kernel of this package."""


def _locatable() -> bool:
    try:
        _caching.FunctionCache(_probe)
    except Exception:  # RuntimeError: "cannot cache function ...: no locator available"
        return False
    return True


def _decide() -> bool:
    if _caching is None:
        return False
    if _locatable():
        return True
    try:
        path = tempfile.mkdtemp(prefix="gpu-engine-numba-")
    except OSError:
        return False
    _config.CACHE_DIR = path
    os.environ.setdefault("NUMBA_CACHE_DIR", path)  # child processes find it too
    return _locatable()


CACHE: bool = _decide()
