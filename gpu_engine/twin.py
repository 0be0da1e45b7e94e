"""Small updates of a GPU engine on a host twin (the host path of small changes).

On the GPU a small update pays kernel launches and synchronisations per rule and per
stratum, far more than the change itself costs on the CPU: rematerialising LUBM(50) on an
H100 takes about 0.1 s, DRed^c's 1,000-fact deletion about 0.25 s there, and 15 ms on the
CPU.  So a GPU engine keeps a CPU twin (an :class:`~gpu_engine.engine.Engine` on the NumPy
backend over host copies of its state) and sends updates whose change is small there.
Which side holds the current state is tracked (:class:`Twin`): after a host update the
device copy is stale, and it is brought up to date only when the device is needed again
(a materialisation, a large update, anything that reads ``engine.state``); reads of
relations and counters are served by whichever side is current.

Copies cost what changed: relations are immutable runs, and each run remembers its copy on
the other backend (``RowSet._mirror``), so a switch copies only the runs (and tombstone
sets) made since the last switch; counter arrays, updated in place by commits, are copied
whole; the paper-002 module state is rebuilt on the side that needs it; an equality
engine's ρ travels with the state and each side renormalises its rules under it.  An
update on the host must not read ``engine.state`` (which switches back): the dispatch in
``maintenance.apply_update`` reads ``engine.current_state()``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from gpu_engine.kernels.backend import get_backend

from .counters import Counters
from .rowset import RowSet
from .runs import RunSet
from .state import Encoded, EngineState

HOST_UPDATE_ROWS = 1 << 16  # updates changing at most this many explicit facts go to the host


def wanted(engine: Any, insert: Encoded, delete: Encoded, algorithm: str, need: int) -> bool:
    """Whether the update ``insert``/``delete`` (encoded columns and row count per
    relation) by ``algorithm`` (which needs counters of level ``need``) goes to the host
    twin: on a GPU engine, when the change is small and the counters are there
    (rebuilding them is bulk work: the device's).  Rematerialising never does."""
    setting = os.environ.get("GPU_ENGINE_HOST_UPDATES", "1")  # 0: never; always: tests
    if setting == "0" or getattr(engine, "is_twin", False) or algorithm.startswith("remat"):
        return False
    if not (engine.be.is_gpu or setting == "always"):
        return False
    changed = sum(n for _, n in insert.values()) + sum(n for _, n in delete.values())
    st = engine.current_state()
    return changed <= HOST_UPDATE_ROWS and st.materialised and st.counting >= need


def row_to(rs: RowSet, be: Any, link: bool = True) -> RowSet:
    """The run on backend ``be`` (a cached copy; both copies point at each other unless
    ``link`` is false: a one-way move, which keeps nothing of the source alive)."""
    if rs.be is be or (link and rs.be.name == be.name):
        return rs
    hit = rs._mirror.get("twin") if link else None
    if hit is not None and hit.be.name == be.name:
        return hit
    keys = be.asarray(rs.be.to_host(rs.keys))
    cols = None if rs.cols_ is None else tuple(be.asarray(rs.be.to_host(c)) for c in rs.cols_)
    out = RowSet(be, cols, keys, rs.spec, rs.n)
    if link:
        rs._mirror["twin"] = out
        out._mirror["twin"] = rs
    return out


def runs_to(rs: RunSet, be: Any, link: bool = True) -> RunSet:
    return RunSet(be, rs.arity, tuple(row_to(r, be, link) for r in rs.runs),
                  tuple(row_to(d, be, link) for d in rs.dead))


def state_to(st: EngineState, be: Any) -> EngineState:
    """``st`` on backend ``be`` (runs through their cached copies, counters copied)."""
    def conv(a: Any) -> Any:  # a copy, also between two host engines (a test setting)
        return be.xp.array(a.get() if hasattr(a, "get") and not be.is_gpu else a, copy=True)

    return EngineState(
        explicit={n: runs_to(r, be) for n, r in st.explicit.items()},
        store={n: runs_to(r, be) for n, r in st.store.items()},
        counters={n: Counters(tuple(conv(a) for a in c.nonrec), tuple(conv(a) for a in c.rec))
                  for n, c in st.counters.items()},
        counting=st.counting, materialised=st.materialised, modules=st.modules,
        counted_with=st.counted_with, module_state={}, symbols=st.symbols,
        records=st.records, decompose=st.decompose, decompositions=st.decompositions,
        rho=None if st.rho is None else conv(st.rho))


class RematOnDevice(Exception):
    """A GPU engine's host twin chose to rematerialise: the device runs it (the message:
    why)."""


class Twin:
    """The host twin of a GPU engine and which side is current."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.host = type(engine)(engine.program, get_backend("cpu"), engine.symbols,
                                 counting=engine._state.counting, modules=engine.modules)
        self.host.is_twin = True
        self.device_current = True
        self.host_current = False

    def to_host(self) -> Any:
        """The host engine, brought up to date with the device state."""
        if not self.host_current:
            self.host.state = state_to(self.engine._state, self.host.be)
            self.host.set_modules(self.engine.modules)
            self.host.state.module_state = {}
            self.host_current = True
            if hasattr(self.host, "renormalise_rules"):  # equality: the rules under ρ
                self.host.renormalise_rules()
            # the update algorithms' time budgets weigh them against a rematerialisation,
            # which the device runs
            self.host.materialise_seconds = self.engine.materialise_seconds
        return self.host

    def to_device(self) -> None:
        """Bring the device state up to date with the host's (after host updates)."""
        if self.device_current:
            return
        st = state_to(self.host.state, self.engine.be)
        self.engine._state = st
        self.device_current = True
        if hasattr(self.engine, "renormalise_rules"):
            self.engine.renormalise_rules()

    def run(self, update: Callable[[Any], Any]) -> Any:
        """``update`` applied to the host engine (brought up to date first); the host is
        then the current side, and the statistics ``update`` returns say so."""
        stats = update(self.to_host())
        self.host_updated()
        stats.device = f"{self.engine.be.name} (host twin)"
        return stats

    def host_updated(self) -> None:
        self.device_current = False
        self.host_current = True

    def device_updated(self) -> None:
        self.host_current = False
        self.device_current = True
