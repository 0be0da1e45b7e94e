"""The package zip the Spark backend ships to executors (host/spark/ship.py), without Spark.

Its layout is an installed wheel's whatever the driver runs (source tree or wheel), it is
importable on its own (no source tree, no editable finder), it is content-addressed, and
Numba caches the kernels imported from it under the zip's name (kernels/numba_cache.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from gpu_engine.host.spark import ship

REPO = Path(__file__).resolve().parents[1]


def test_zip_has_the_wheel_layout(tmp_path: Path) -> None:
    path = ship.build_zip(tmp_path)
    names = zipfile.ZipFile(path).namelist()
    assert len(names) == len(set(names))
    for needed in ("gpu_engine/__init__.py", "gpu_engine/engine.py",
                   "gpu_engine/kernels/small_path.py", "gpu_engine/host/spark/backend_local.py",
                   "gpu_engine/host/lang/grammar.lark"):
        assert needed in names, needed
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "kernels/"))
                or "/examples/" in n]
    # content-addressed: the same sources give the same name
    again = tmp_path / "again"
    again.mkdir()
    assert ship.build_zip(again).name == path.name
    assert path.name.startswith("gpu_engine-") and path.suffix == ".zip"


def test_zip_from_an_installed_layout_has_no_duplicates(tmp_path: Path) -> None:
    """An installed wheel nests kernels/ and host/ inside gpu_engine/: each is walked once."""
    site = tmp_path / "site" / "gpu_engine"
    shutil.copytree(REPO / "gpu_engine", site, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "kernels", site / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "host", site / "host", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "examples").mkdir()
    (site / "examples" / "x.py").write_text("")
    folders = {"gpu_engine": site, "gpu_engine.kernels": site / "kernels",
               "gpu_engine.host": site / "host"}
    from_site = [n for n, _ in ship.zip_members(folders)]
    from_tree = [n for n, _ in ship.zip_members(ship.package_folders())]
    assert from_site == from_tree


def test_zip_imports_alone_and_numba_caches_under_its_name(tmp_path: Path) -> None:
    path = ship.build_zip(tmp_path)
    code = (
        "import sys; sys.meta_path[:] = [m for m in sys.meta_path "
        "if 'editable' not in repr(m).lower()]\n"
        f"sys.path.insert(0, {str(path)!r})\n"
        "import gpu_engine\n"
        "from gpu_engine.host.spark import backend_local\n"
        "from gpu_engine.host.lang.parser import parse_program\n"
        "parse_program('.decl e(a:number)\\n', '<t>')\n"
        "from gpu_engine.kernels import numba_cache as c\n"
        "from numba.core.caching import FunctionCache\n"
        "loc = FunctionCache(c._probe)._impl.locator\n"
        "print(gpu_engine.__file__); print(type(loc).__name__); print(loc.get_cache_path())\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"),
           "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    got = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    where, locator, cache = got.stdout.split()
    assert where == f"{path}/gpu_engine/__init__.py"
    assert locator == "ShippedZipLocator"
    assert cache == str(tmp_path / "cache" / path.stem / "gpu_engine" / "kernels")


def test_shipping_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ship.ENV_SWITCH, "0")
    assert not ship.enabled()
    assert ship.ensure_shipped(object()) is None
    monkeypatch.setenv(ship.ENV_SWITCH, "1")
    assert ship.enabled()


def test_a_session_that_refuses_the_file_gets_a_warning() -> None:
    """A classic session without context access (shared clusters) is warned about, not
    failed: its executors need the package installed."""

    class NoContext:
        @property
        def sparkContext(self) -> None:  # noqa: N802 - PySpark's name
            raise RuntimeError("no SparkContext here")

    with pytest.warns(RuntimeWarning, match="could not ship gpu_engine"):
        assert ship.ensure_shipped(NoContext()) is None
