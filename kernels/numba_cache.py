"""Where Numba may cache compiled kernels (``cache=True``), decided once per process.

Numba looks for a writable cache next to the source (``__pycache__``), then in the
user-wide cache directory; when neither is usable (a read-only installation and no
writable home) decorating a function with ``cache=True`` raises at import.  Then this
module points ``NUMBA_CACHE_DIR`` at a fresh temporary directory, and when even that
cannot be used it turns caching off: the kernels are compiled in every process instead.
Modules inside the zip shipped to Spark executors (``gpu_engine-<version>-<hash>.zip``)
cache in ``NUMBA_CACHE_DIR`` or the user-wide directory, under the zip's name
(:class:`ShippedZipLocator`), so a later application with the same code finds them.
``CACHE`` is the flag to pass to ``njit(cache=...)``.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any

try:
    from numba.core import caching as _caching
    from numba.core import config as _config
except ImportError:  # pragma: no cover - numba is a dependency
    _caching = None

# a module inside the zip the Spark backend ships (host/spark/ship.py), named after a hash
# of its content: <folder>/gpu_engine-<version>-<hash>.zip/<path inside>
_SHIPPED = re.compile(r"^.*[/\\](gpu_engine-[^/\\]+-[0-9a-f]{16})\.zip[/\\](.+)$")


def _zip_cache_root() -> str:
    if _config.CACHE_DIR:
        return str(_config.CACHE_DIR)
    from numba.misc.appdirs import AppDirs

    return str(AppDirs(appname="numba", appauthor=False).user_cache_dir)


if _caching is not None:

    class ShippedZipLocator(_caching._CacheLocator):
        """Caches kernels of the content-addressed zip shipped to Spark executors under
        the zip's name in ``NUMBA_CACHE_DIR`` or the user-wide cache, stamped with that
        name: each application fetches the zip to a new place with a new time stamp,
        which would make Numba's own zip locator compile every kernel again."""

        def __init__(self, py_func: Any, name: str, inner: str) -> None:
            self._lineno = py_func.__code__.co_firstlineno
            self._stamp = name
            self._cache_path = os.path.join(_zip_cache_root(), name, os.path.dirname(inner))

        def get_cache_path(self) -> str:
            return self._cache_path

        def get_source_stamp(self) -> str:
            return self._stamp

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            found = _SHIPPED.match(py_file)
            if found is None:
                return None
            self = cls(py_func, found.group(1), found.group(2))
            try:
                self.ensure_cache_path()
            except OSError:
                return None
            return self

    _impl = getattr(_caching, "CacheImpl", None) or getattr(_caching, "_CacheImpl", None)
    if _impl is not None and ShippedZipLocator not in _impl._locator_classes:
        _impl._locator_classes.insert(0, ShippedZipLocator)


def _probe() -> None:
    """A function of this file: if Numba finds a cache locator for it, it finds one for
    every kernel of this package."""


def _locatable() -> bool:
    try:
        cache = _caching.FunctionCache(_probe)
        # the locator of a module inside a zip (the package shipped to Spark executors)
        # does not check that its folder (the user-wide cache) is writable: check here,
        # or the first compiled kernel would fail to save its cache
        cache._impl.locator.ensure_cache_path()
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
