"""``--profile FILE`` (Soufflé's ``-p``): a run's statistics as one JSON document.

Written by ``run``, ``update`` and ``query`` (atomically, after everything else succeeded).
The shape (``version`` 1; every time in seconds)::

    {
      "format": "gpu-engine-profile", "version": 1,
      "command": "run" | "update" | "query",
      "gpu_engine_version": "...", "device": "cpu" | "gpu" | "spark", "word_size": 32 | 64,
      "program": "prog.dl"            (run)   | "store": "db/" (update, query),
      "seconds": {"total": ..., <phase>: ...},
          run: load (reading facts), materialise, outputs (rendering and writing), store
          update: load_store, read_facts, update, outputs, commit
          query: load_store, answer, format
      "materialisation": {            (run) the --stats content:
        "device", "seconds", "facts", "derivations", "peak_device_bytes",
        "strata": [{"index", "relations", "recursive", "seconds", "iterations" (rounds),
                    "facts", "derivations", "small_rounds",
                    "rules": [{"rule", "loc", "seconds", "evaluations", "derivations",
                               "module"}]}]},
      "update": {...},                (update) the --stats content: algorithm, seconds,
                                       deleted, inserted, overdeleted, rederived, added,
                                       facts, derivations, backward, checked, proved,
                                       disproved (B/F≈), modules, note
      "query": {"text", "rows"},      (query)
      "relations": {"<name>": facts}  (run, update) sizes after the command (declared
                                       relations; hidden ones such as ``@agg1`` left out)
    }
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .io import write_text_atomic

FORMAT = "gpu-engine-profile"
VERSION = 1


def profile(command: str, reasoner: Any, seconds: dict[str, float],
            **sections: Any) -> dict[str, Any]:
    """The profile document of ``command`` (see the module docstring)."""
    from gpu_engine import __version__

    doc: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "command": command,
        "gpu_engine_version": __version__, "device": reasoner.device,
        "word_size": getattr(reasoner, "word_size", 32),
    }
    doc.update({k: v for k, v in sections.items() if k not in ("relations",)})
    doc["seconds"] = {k: round(float(v), 6) for k, v in seconds.items()}
    if "relations" in sections:  # hidden relations (``@agg1``, magic sets) left out
        doc["relations"] = {k: v for k, v in sections["relations"].items()
                            if not k.startswith("@")}
    return doc


def write_profile(path: str | Path, doc: dict[str, Any]) -> None:
    """Write the document (replaced atomically)."""
    write_text_atomic(Path(path), json.dumps(doc, indent=1) + "\n")
