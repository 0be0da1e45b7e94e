"""Out of device memory: smaller join chunks, then the CPU path.

What the engine does when the device (a GPU, or the NumPy backend standing in for one
with injected faults, :mod:`gpu_engine.kernels.oom`) runs out of memory:

1. **Smaller join chunks.**  A rule evaluation (:func:`retry_smaller_chunks`, around
   ``RuleEvaluator.evaluate``) that fails with a device OOM is retried from the start with
   half the join chunk (``Backend.join_chunk_rows``, and the output compaction bound with
   it), after the memory pool returned its cached blocks, until it succeeds or the chunk
   is at the floor (``GPU_ENGINE_OOM_FLOOR_ROWS``, default 65,536 rows).  A retry is
   exact: the evaluation has no side effect before it returns (its partial outputs are
   dropped; ``autoinc()``'s counter is reset; symbols and records it added are
   hash-consed, so adding them again changes nothing), and chunks are contiguous ranges
   of probe rows evaluated depth first, so the rows come out in the same order.  The
   halved chunk stays for the rest of the run.
2. **The CPU path.**  A device OOM that the retries did not cure (or one outside a rule
   evaluation: merging a round's output, counters, modules) ends the stratum's attempt:
   :class:`StratumMark` puts back the stratum's relations, logged counts and the
   ``autoinc()`` counter as they were when it began, :func:`move_to_cpu` copies the whole
   state to a fresh NumPy backend (``kernels.backend.cpu_fallback``) and releases the
   device's, and the stratum runs again there, as does everything after it: the engine
   stays on the CPU.  One ``warning:`` line on stderr says where and why; the statistics
   record it (``MaterialisationStats.fallback``, ``oom_retries``; ``UpdateStats`` alike).
   An update (:func:`gpu_engine.maintenance.apply_update`) is redone whole on the CPU
   from the snapshot it restores.  A ``MemoryError`` on the CPU path is the usual error
   naming the stratum and rule (``engine.OutOfMemory``).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpu_engine.kernels.backend import cpu_fallback
from gpu_engine.kernels.oom import as_memory_error, describe, floor_rows, is_device_oom

from .counters import Counters
from .twin import runs_to


@dataclass
class MemoryEvents:
    """Out-of-memory events of one engine: retries with smaller join chunks and the
    fallback to the CPU (empty when none)."""

    retries: int = 0
    fallback: str = ""  # why the engine moved to the CPU, until a statistics object took it

    def take_fallback(self) -> str:
        """The fallback not yet reported (by a materialisation's or update's statistics)."""
        text, self.fallback = self.fallback, ""
        return text


def device_oom(exc: BaseException, be: Any) -> bool:
    """Whether ``exc`` is a device out-of-memory on a backend that can fall back."""
    return bool(be.is_device) and is_device_oom(exc)


def retry_smaller_chunks(ev: Any, attempt: Callable[[], None], out: list[Any]) -> None:
    """Run ``attempt`` (one rule evaluation into ``out``), retrying a device OOM with half
    the join chunk until the floor; then re-raise it as a ``MemoryError``."""
    be = ev.be
    while True:
        autoinc = ev.expr.autoinc
        try:
            attempt()
            return
        except Exception as exc:  # noqa: BLE001 - CUDA errors are RuntimeErrors
            if not device_oom(exc, be):
                raise
            if be.join_chunk_rows <= floor_rows():
                raise as_memory_error(exc) from None
        out.clear()
        ev._pending = 0
        ev.expr.autoinc = autoinc
        be.free_memory()
        be.join_chunk_rows = max(floor_rows(), be.join_chunk_rows // 2)
        ev.compact_rows = min(ev.compact_rows, 2 * be.join_chunk_rows)
        ev._limit = ev.compact_rows
        ev.memory.retries += 1


class StratumMark:
    """What evaluating stratum ``s`` changes, as it was before: put back by
    :meth:`restore` before the stratum runs again on the CPU."""

    def __init__(self, engine: Any, names: list[str]) -> None:
        self.names = names
        self.store = {n: engine.store[n] for n in names if n in engine.store}
        log = getattr(engine, "_count_log", {})
        self.logged = {n: len(log.get(n, [])) for n in names}
        self.floors = {n: engine.__dict__.get("_compact_floor", {}).get(n) for n in names}
        self.autoinc = engine.evaluator.expr.autoinc

    def restore(self, engine: Any) -> None:
        for n, rs in self.store.items():
            engine.store[n] = rs
        log = getattr(engine, "_count_log", {})
        for n, k in self.logged.items():
            if n in log:
                del log[n][k:]
        floors = engine.__dict__.get("_compact_floor", {})
        for n, f in self.floors.items():
            if f is None:
                floors.pop(n, None)
            else:
                floors[n] = f
        engine.evaluator.expr.autoinc = self.autoinc


def move_to_cpu(engine: Any, where: str, exc_text: str) -> None:
    """Move ``engine`` (its state, counts logged so far, evaluator) to a fresh CPU backend
    and release the device's memory; print one line saying so."""
    from .rule_eval import RuleEvaluator

    old = engine.be
    cpu = cpu_fallback(old)
    st = engine._state

    def conv(a: Any) -> Any:
        return cpu.asarray(old.to_host(a))

    engine._state = dataclasses.replace(
        st, explicit={n: runs_to(r, cpu, link=False) for n, r in st.explicit.items()},
        store={n: runs_to(r, cpu, link=False) for n, r in st.store.items()},
        counters={n: Counters(tuple(conv(a) for a in c.nonrec), tuple(conv(a) for a in c.rec))
                  for n, c in st.counters.items()},
        module_state={},  # X_R, C_R: rebuilt when an update needs them
        rho=None if st.rho is None else conv(st.rho))  # equality: representatives
    log = getattr(engine, "_count_log", None)
    if log:
        from .twin import row_to

        engine._count_log = {n: [(row_to(d, cpu, link=False), conv(c), rec)
                                 for d, c, rec in entries] for n, entries in log.items()}
    ev = engine.evaluator
    new = RuleEvaluator(cpu, engine.symbols)
    new.expr.autoinc = ev.expr.autoinc
    new.expr._warned = ev.expr._warned
    new.compact = ev.compact
    new.memory = ev.memory
    engine.evaluator = new
    engine.be = cpu
    engine._twin = None  # a CPU engine keeps no host twin
    engine.__dict__.pop("_small_plans", None)
    chunk = old.join_chunk_rows
    del st, log, ev
    import gc

    gc.collect()  # once per fallback (0.1-0.5 s): cycles that still hold device arrays
    old.free_memory()
    text = (f"out of {'GPU' if old.is_gpu else 'device'} memory in {where}: {exc_text} "
            f"(join chunks {chunk:,} rows); continuing on the CPU")
    new.memory.fallback = text
    print(f"warning: {text}", file=sys.stderr)


def on_cpu_if_full(engine: Any, where: str, fn: Callable[[], Any],
                   undo: Callable[[], None] | None = None) -> Any:
    """``fn()``; after a device OOM, ``undo()`` (put back what ``fn`` changed), move the
    engine to the CPU and ``fn()`` again there.  Inside an update (``defer_fallback``) the
    OOM goes up to ``apply_update``, which redoes the whole update."""
    if not engine.be.is_device or engine.defer_fallback:
        return fn()
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - CUDA errors are RuntimeErrors
        if not device_oom(exc, engine.be):
            raise
        rule = getattr(exc, "rule", None)
        where += f", rule {rule} at {rule.loc}" if rule is not None else ""
        text = describe(exc)
    if undo is not None:
        undo()
    move_to_cpu(engine, where, text)
    return fn()


def run_stratum(engine: Any, names: list[str], where: str, fn: Callable[[], Any]) -> Any:
    """``fn()`` (evaluating one stratum, whose relations are ``names``); after a device OOM,
    again on the CPU from the stratum's start."""
    if not engine.be.is_device or engine.defer_fallback:
        return fn()
    mark = StratumMark(engine, names)
    return on_cpu_if_full(engine, where, fn, lambda: mark.restore(engine))


__all__ = ["MemoryEvents", "StratumMark", "device_oom", "move_to_cpu", "on_cpu_if_full",
           "retry_smaller_chunks", "run_stratum"]
