"""Shipping this package to Spark executors that do not have it installed.

The decomposed path of the Spark backend runs the local engine inside ``mapInArrow`` on the
executors, so their Python must import ``gpu_engine`` (its ``kernels`` and ``host`` layers
included).  :func:`ensure_shipped` adds the package to a session as one zip
(``SparkContext.addPyFile``; ``addArtifacts(pyfile=True)`` on Spark Connect), whatever
Python the executors run and whether or not the package is installed there: the executors
then import the driver's own code.

The zip has the layout of an installed wheel (``gpu_engine/``, ``gpu_engine/kernels/``,
``gpu_engine/host/`` ...), whether the driver runs an installed wheel or the source tree
(where ``kernels/`` and ``host/`` sit beside ``gpu_engine/``).  It holds the sources and
package data only (no tests, examples or byte code), is built once per process into a
temporary folder, and is named after a hash of its content, so that re-adding it to a
session (or to a shared Connect session by another driver of the same version) is a no-op.

What the executors' Python must provide itself: ``numpy`` and ``pyarrow`` (and PySpark's
own worker requirements).  Numba is optional there (the kernels fall back to array
operations); SciPy, lark and rich are not imported on executors.

``GPU_ENGINE_SPARK_SHIP=0`` turns shipping off (executors then import whatever
``gpu_engine`` their own Python has).
"""

from __future__ import annotations

import atexit
import hashlib
import io
import os
import shutil
import tempfile
import threading
import warnings
import weakref
import zipfile
from pathlib import Path
from typing import Any

ENV_SWITCH = "GPU_ENGINE_SPARK_SHIP"
# files of a package folder that the zip carries (sources and package data)
SUFFIXES = (".py", ".lark")
# the package folders shipped, by the name they import under; gpu_engine.examples is not
# needed by executors
LAYERS = ("gpu_engine", "gpu_engine.kernels", "gpu_engine.host")
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the content alone decides the hash

_lock = threading.Lock()
_zip_path: Path | None = None
_shipped_contexts: weakref.WeakSet[Any] = weakref.WeakSet()
_shipped_sessions: set[str] = set()


def enabled() -> bool:
    """Whether shipping is on (``GPU_ENGINE_SPARK_SHIP`` is not ``0``/``false``/``no``/``off``)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def package_folders() -> dict[str, Path]:
    """The folder each shipped layer is imported from on this process (``gpu_engine``,
    ``gpu_engine.kernels``, ``gpu_engine.host``)."""
    import importlib

    out: dict[str, Path] = {}
    for name in LAYERS:
        mod = importlib.import_module(name)
        out[name] = Path(mod.__file__).resolve().parent  # type: ignore[arg-type]
    return out


def zip_members(folders: dict[str, Path]) -> list[tuple[str, Path]]:
    """``(name in the zip, file)`` for every shipped file, sorted by name: each layer's
    folder walked recursively through its subpackages (folders holding an ``__init__.py``),
    leaving out folders that are another layer's root (an installed wheel nests them)."""
    roots = {p for p in folders.values()}
    members: dict[str, Path] = {}
    for name, root in folders.items():
        prefix = name.replace(".", "/")
        for path in _walk(root, roots):
            members[f"{prefix}/{path.relative_to(root).as_posix()}"] = path
    return sorted(members.items())


def _walk(folder: Path, roots: set[Path]) -> list[Path]:
    found: list[Path] = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir():
            if entry.resolve() in roots or entry.name == "__pycache__":
                continue
            if (entry / "__init__.py").is_file():
                found += _walk(entry, roots)
        elif entry.suffix in SUFFIXES and entry.is_file():
            found.append(entry)
    return found


def build_zip(target_dir: Path, folders: dict[str, Path] | None = None) -> Path:
    """Write the package zip into ``target_dir`` and return its path
    (``gpu_engine-<version>-<content hash>.zip``)."""
    from gpu_engine import __version__

    members = zip_members(folders or package_folders())
    if not any(n == "gpu_engine/__init__.py" for n, _ in members):
        raise RuntimeError("gpu_engine is not importable from plain folders: cannot ship it")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, path in members:
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())
    data = buf.getvalue()
    digest = hashlib.sha256(data).hexdigest()[:16]
    out = target_dir / f"gpu_engine-{__version__}-{digest}.zip"
    tmp = out.with_suffix(".part")
    tmp.write_bytes(data)
    os.replace(tmp, out)
    return out


def package_zip() -> Path:
    """The package zip of this process, built on first use into a temporary folder."""
    global _zip_path
    with _lock:
        if _zip_path is None or not _zip_path.is_file():
            folder = Path(tempfile.mkdtemp(prefix="gpu-engine-ship-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _zip_path = build_zip(folder)
        return _zip_path


def ensure_shipped(spark: Any) -> Path | None:
    """Add the package zip to ``spark`` (a classic or Connect session) once; returns the
    zip's path, or None when shipping is off.  A session that refuses the file (a shared
    cluster without ``sparkContext`` access, say) gets a warning, not an error: its
    executors then need the package installed."""
    from . import adapter as sa

    if not enabled():
        return None
    try:
        path = package_zip()
    except (OSError, RuntimeError) as exc:  # e.g. gpu_engine itself imported from a zip
        warnings.warn(f"could not build the gpu_engine zip for the Spark executors ({exc}); "
                      "they need the package installed", RuntimeWarning, stacklevel=2)
        return None
    with _lock:
        try:
            key = sa.shipping_key(spark)
            if key in (_shipped_sessions if isinstance(key, str) else _shipped_contexts):
                return path
            sa.add_py_file(spark, path)
        except Exception as exc:  # noqa: BLE001 - any refusal: warn, executors may have it
            warnings.warn(f"could not ship gpu_engine to the Spark executors ({exc}); "
                          "they need it installed", RuntimeWarning, stacklevel=2)
            return None
        if isinstance(key, str):
            _shipped_sessions.add(key)
        else:
            _shipped_contexts.add(key)
    return path


__all__ = ["ENV_SWITCH", "enabled", "package_folders", "zip_members", "build_zip",
           "package_zip", "ensure_shipped"]
