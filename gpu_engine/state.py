"""One named engine state: everything that makes up a materialisation.

:class:`EngineState` is the single place that holds what a materialisation is: the
explicit facts E, the materialised relations I, the derivation counters and at which
level they are kept, the module state of paper 002 and the settings the counters were
computed under, and the size of the symbol dictionary the rows are encoded against.  The
engine reads and writes it (``Engine.state``), an update snapshots it and restores it as
one value when it fails (``maintenance.apply_update``), and the store saves and loads it
field by field from the ``persist`` metadata below (``host/store.py``).

The relations and counters are immutable between updates apart from the counter arrays,
which a commit updates in place as its very last step (``update_state``): a snapshot is
therefore a shallow copy of the dictionaries.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .counters import Counters
from .runs import RunSet

# how the store keeps a field: "relations" (a file per relation), "meta" (meta.json),
# "rebuilt" (recomputed on first use after loading), "dictionary" (the symbols file),
# "bags" (kept bags of decomposed rules, files H/: gpu_engine.hd_persist)
RELATIONS, META, REBUILT, DICTIONARY = "relations", "meta", "rebuilt", "dictionary"


def _persist(how: str, **kw: Any) -> Any:
    return field(metadata={"persist": how}, **kw)


# an update's change: per relation, encoded host columns and their row count
Encoded = dict[str, tuple[tuple[Any, ...], int]]


@dataclass
class EngineState:
    """A materialisation: what the engine holds between updates."""

    explicit: dict[str, RunSet] = _persist(RELATIONS, default_factory=dict)  # E
    store: dict[str, RunSet] = _persist(RELATIONS, default_factory=dict)  # I
    counters: dict[str, Counters] = _persist(RELATIONS, default_factory=dict)
    counting: int = _persist(META, default=0)  # 0: none, 1: c_nr, 2: c_nr and c_r
    materialised: bool = _persist(REBUILT, default=False)
    # modules setting ("auto" | "off") and the one the recursive counters were kept under
    modules: str = _persist(META, default="auto")
    counted_with: str = _persist(META, default="off")
    module_state: dict[int, list[Any]] = _persist(REBUILT, default_factory=dict)  # X_R, C_R
    # hypertree decompositions (paper 003): "auto" | "all" | "off", and per rule (its
    # index in Engine.rules, as a string) the decomposition chosen (JSON) or None
    decompose: str = _persist(META, default="auto")
    decompositions: dict[str, Any] = _persist(META, default_factory=dict)
    # their kept bags (gpu_engine.hd_bags.NodeBags), tagged by versions; the store keeps
    # those over the saved I (files H/, gpu_engine.hd_persist), the rest is rebuilt on use
    hd_bags: Any = _persist("bags", default=None)
    symbols: int = _persist(DICTIONARY, default=0)  # dictionary size the rows refer to
    records: int = _persist(DICTIONARY, default=0)  # record table size (records, ADTs)
    # equality by rewriting: ρ over the dictionary (gpu_engine.equality; None: identity);
    # the store keeps it as rho.arrow
    rho: Any = _persist("equality", default=None)

    def snapshot(self) -> EngineState:
        """A copy to restore after a failed update (the dictionaries copied, the
        immutable relations shared)."""
        return dataclasses.replace(
            self, explicit=dict(self.explicit), store=dict(self.store),
            counters=dict(self.counters), module_state=dict(self.module_state),
            decompositions=dict(self.decompositions))

    @staticmethod
    def fields_kept_as(how: str) -> list[str]:
        """The names of the fields the store keeps as ``how``."""
        return [f.name for f in dataclasses.fields(EngineState)
                if f.metadata.get("persist") == how]


__all__ = ["Encoded", "EngineState", "RELATIONS", "META", "REBUILT", "DICTIONARY"]
