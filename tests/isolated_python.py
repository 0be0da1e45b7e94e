"""Python environments without this package, for the install and cluster tests.

:func:`link_packages` links a few distributions of the running environment into a
folder (for ``PYTHONPATH``); :func:`python_without_package` makes a virtual environment (no system site-packages, no
pip) whose site-packages holds symbolic links to a few distributions of the running
environment (``numpy``, ``pyarrow`` ...), found through their import location, and not
``gpu_engine`` (its editable finder, a ``.pth`` file, is not linked either).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path


def _entries_of(module: str) -> list[Path]:
    """The site-packages entries one distribution occupies: the package folder, its
    ``.libs`` folder of vendored shared libraries and its ``.dist-info``."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{module} is not an installed package here")
    folder = Path(next(iter(spec.submodule_search_locations)))
    site = folder.parent
    found = [folder]
    for entry in site.iterdir():
        name = entry.name.lower()
        if name in (f"{module}.libs", f"{module}.libs".replace("_", "-")):
            found.append(entry)
        elif name.startswith(f"{module}-") and name.endswith(".dist-info"):
            found.append(entry)
    return found


def link_packages(folder: Path, modules: tuple[str, ...]) -> Path:
    """Symbolic links in ``folder`` to the site-packages entries of ``modules``."""
    folder.mkdir(parents=True, exist_ok=True)
    for module in modules:
        for entry in _entries_of(module):
            link = folder / entry.name
            if not link.exists():
                link.symlink_to(entry, target_is_directory=entry.is_dir())
    return folder


def python_without_package(root: Path, modules: tuple[str, ...]) -> Path:
    """A venv at ``root`` whose site-packages links ``modules`` (top-level package names)
    from this environment; returns its interpreter.  ``gpu_engine`` is not importable
    there (checked)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   capture_output=True, timeout=120)
    python = root / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60).stdout.strip())
    link_packages(site, modules)
    probe = subprocess.run([str(python), "-c", "import gpu_engine"], capture_output=True,
                           text=True, timeout=60, env={"PATH": "/usr/bin:/bin"}, cwd=root)
    assert probe.returncode != 0, "gpu_engine is importable in the isolated Python"
    return python
