"""gpu-engine: a GPU-accelerated columnar Datalog reasoning engine.

``from gpu_engine import Reasoner`` is the public entry point.  The three layers are
importable under the project's own name: ``gpu_engine.kernels`` (the folder ``kernels/``),
``gpu_engine`` itself and ``gpu_engine.host`` (the folder ``host/``), so the installed
names cannot collide with other distributions (``kernels`` is a package of its own on the
package index).  An installed wheel holds them as subfolders (``pyproject.toml`` maps the
folders); in the source tree the package's search path also covers the repository root.
The facade lives in the host layer (``gpu_engine.host.reasoner``) and is imported lazily,
so that the device-side modules never depend on the host layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_here = Path(__file__).resolve().parent
if not (_here / "kernels").is_dir() and (_here.parent / "kernels" / "__init__.py").is_file():
    __path__.append(str(_here.parent))  # source tree: kernels/ and host/ sit beside us

__version__ = "0.1.0"
__all__ = ["Reasoner", "ProgramError", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Reasoner":
        from .host.reasoner import Reasoner

        return Reasoner
    if name == "ProgramError":
        from .ir import ProgramError

        return ProgramError
    raise AttributeError(name)
