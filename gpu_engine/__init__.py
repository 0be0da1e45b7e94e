"""gpu-engine: a GPU-accelerated columnar Datalog reasoning engine.

``from gpu_engine import Reasoner`` is the public entry point.  The facade lives in the
host layer (``host.reasoner``); it is imported lazily so that the device-side modules of
this package never depend on the host layer.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Reasoner", "ProgramError", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Reasoner":
        from host.reasoner import Reasoner

        return Reasoner
    if name == "ProgramError":
        from .ir import ProgramError

        return ProgramError
    raise AttributeError(name)
