"""Incremental maintenance of a materialisation (paper 000): the entry point.

:func:`apply_update` normalises the change (paper 000 line 1: E⁻ := (E⁻ ∩ E) \\ E⁺,
E⁺ := E⁺ \\ E), runs the chosen algorithm over an
:class:`~gpu_engine.update_state.UpdateState` and installs the result.  Until that last
step nothing of the engine changes, and any exception restores the state from before
the call, so an interrupted update leaves the last consistent materialisation.

Algorithms and the counters they leave behind (``engine.counting``):

=========  ===========================================================  ========
name       what                                                         counters
=========  ===========================================================  ========
remat      rematerialise from scratch                                   none
remat1c    rematerialise, keeping non-recursive counters (Remat-1C)     c_nr
remat2c    rematerialise, keeping both counters (Remat-2C)              both
dred       DRed, paper 000 Algorithm 1                                  none
counting   Counting (Gupta et al. 1993), non-recursive programs only   as before
dredc      DRed^c, paper 000 Algorithm 2                                both
bf         B/F, paper 001 §3 / Motik et al. 2015                        none
bfc        B/F^c, paper 000 Algorithm 3 (``backward_forward``)          c_nr
=========  ===========================================================  ========

An algorithm that needs counters the engine does not have first rebuilds them by one
materialisation with counting (reported in ``UpdateStats.note``).

Programs with an equality relation go to :mod:`gpu_engine.equality_maintenance` (``auto``,
``dred_eq``: DRed≈, ``remat``: Remat≈).
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from gpu_engine.kernels import cpu_small as small
from gpu_engine.kernels.oom import describe

from . import fallback, give_up, twin
from .rowset import RowSet
from .state import Encoded
from .stats import UpdateStats
from .update_state import UpdateState

ALGORITHMS = ("remat", "remat1c", "remat2c", "dred", "counting", "dredc", "bf", "bfc")
# counters each algorithm needs before it runs and leaves after it ran (None: unchanged)
_NEEDS = {"dred": 0, "counting": 1, "dredc": 2, "bf": 0, "bfc": 1}
_LEAVES = {"remat": 0, "remat1c": 1, "remat2c": 2, "dred": 0, "counting": None, "dredc": 2,
           "bf": 0, "bfc": 1}
_REMAT = {0: "remat", 1: "remat1c", 2: "remat2c"}  # the rematerialisation leaving a level


# The default algorithm (no algorithm named, or ``auto``) runs with a time budget: DRed^c's
# (or DRed's) overdeletion stops once the update has run longer than DEFAULT_TIME of the
# last materialisation, and the update rematerialises instead (keeping the counters the
# algorithm would have left), so a deletion that touches most of the materialisation costs
# about 1.35 rematerialisations at worst.  1,000 deletions, DRed^c against Remat: SSPE
# 10k/100k 0.89 s / 0.16 s, DAG-R 2k/10k 0.45 s / 0.081 s on the 2-core CPU; SSPE 1.81 s /
# 0.18 s on the H200 (host twin / device).  Only after a materialisation that took at
# least DEFAULT_MIN_SECONDS: below, an update costs little either way, and a loaded
# machine must not turn a tiny DRed^c into a rematerialisation.  A named algorithm, an
# insertion and a fully dynamic update (a boundary hook) run to their end.
DEFAULT_TIME = 0.35
DEFAULT_MIN_SECONDS = 0.05
# After a fallback, this many deletions at least as large rematerialise at once (then one
# tries again; a smaller one tries at once; each give-up in a row doubles it: give_up), as
# equality's auto does (RETRY_AFTER): on a GPU the device then copies nothing to its host
# twin for an attempt that would stop
DEFAULT_RETRY_AFTER = 1


def _deadline(engine: Any, t0: float) -> float | None:
    """When the default algorithm's overdeletion stops (None: no budget;
    ``GPU_ENGINE_UPDATE_BUDGET=0`` turns it off, as the tests do)."""
    last = engine.materialise_seconds
    if last is None or last < DEFAULT_MIN_SECONDS or \
            os.environ.get("GPU_ENGINE_UPDATE_BUDGET", "1") == "0":
        return None
    return t0 + DEFAULT_TIME * last


def _lately(engine: Any, alg: str, deleted: int) -> str:
    """Why the default algorithm ``alg`` rematerialises a deletion of ``deleted`` facts at
    once ("" to try it): its overdeletion gave up lately on one at most as large."""
    rec = engine.default_gave_up
    skip, engine.default_gave_up = give_up.skips(rec, alg, deleted)
    return f"it {rec.note()}" if skip else ""


def _present(engine: Any, delete: Encoded) -> int:
    """How many of ``delete``'s facts are explicit (|E⁻ ∩ E|, on the engine's own side)."""
    rows = _rows(engine, delete)
    return sum(int(e.has(rows[n]).sum()) for n, e in engine.explicit.items()
               if n in rows and len(rows[n]))


def _stale_present(engine: Any, insert: Encoded, delete: Encoded, boundary: Any
                   ) -> int | None:
    """|E⁻ ∩ E| of a deletion on a GPU engine whose host twin is stale (the device
    rematerialised) or not made yet, where the twin would first copy the whole state over;
    None (not counted) otherwise.  A deletion that removes no explicit fact then stays on
    the device, which returns at once (no round)."""
    t = engine._twin
    if boundary is not None or (t is not None and t.host_current) or \
            any(n for _, n in insert.values()):
        return None
    return _present(engine, delete)


def default_algorithm(engine: Any) -> str:
    """Counting when no stratum is recursive, otherwise DRed^c."""
    return "dredc" if any(s.recursive for s in engine.strata) else "counting"


def apply_update(engine: Any, insert: Encoded, delete: Encoded,
                 algorithm: str | None = None, boundary: Any = None) -> UpdateStats:
    """Apply E⁻ = ``delete`` and E⁺ = ``insert`` (encoded columns and row count per
    relation) to a materialised engine with ``algorithm``; returns what it did.

    ``boundary`` (``fdu.Boundary``) is called at round boundaries of the incremental
    algorithms: it may inject additions or raise ``fdu.Restart`` (the state is restored).
    A change that is empty after normalisation runs no round (incremental algorithms)."""
    t0 = time.perf_counter()
    # compiled small kernels (the current side's sizes: a host twin's after host updates)
    small.consider(sum(len(r) for r in engine.current_state().store.values()))
    if getattr(engine, "equality", None) is not None:  # equality by rewriting: DRed≈/Remat≈
        from .equality_maintenance import apply_update as apply_update_eq

        return apply_update_eq(engine, insert, delete, algorithm)
    if algorithm == "auto":
        algorithm = None
    alg = algorithm or default_algorithm(engine)
    if getattr(engine, "order_dependent", None) and alg != "remat":
        if algorithm is not None:  # order-dependent results: only rematerialisation
            raise ValueError(f"the {alg} algorithm cannot maintain a program with "
                             f"{' and '.join(engine.order_dependent)}: use remat")
        alg = "remat"
    if alg not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {alg!r}: expected one of {', '.join(ALGORITHMS)}")
    if alg != "remat" and any(s.lookups for s in engine.strata):
        alg = "remat"  # aggregates inside recursion: REMAT_NOTE (every algorithm)
    if twin.wanted(engine, insert, delete, alg, _NEEDS.get(alg, 0)) and \
            (present := _stale_present(engine, insert, delete, boundary)) != 0:  # small, GPU
        t = engine._twin
        why = ""
        if t is not None and algorithm is None and boundary is None and \
                give_up.skips(t.host.default_gave_up, alg, sum(n for _, n in delete.values()))[0]:
            # counted by the facts it removes (a no-op deletion tries), once
            why = _lately(t.host, alg, _present(engine, delete) if present is None else present)
        try:
            if why:  # (nothing copied to the host for an attempt that would stop)
                raise twin.RematOnDevice(f"{_REMAT[_LEAVES[alg]]}: {alg} {why}")
            stats = engine.twin().run(
                lambda host: apply_update(host, insert, delete, algorithm, boundary))
        except twin.RematOnDevice as exc:  # the host's state as it was: the device remats
            stats = apply_update(engine, insert, delete, _REMAT.get(_LEAVES[alg], "remat"),
                                 boundary)
            stats.note = f"{exc} (on the device, the host twin's choice)"
        stats.seconds = time.perf_counter() - t0
        return stats
    if alg == "counting" and any(s.recursive for s in engine.strata):
        rec = next(s for s in engine.strata if s.recursive)
        raise ValueError("the Counting algorithm handles non-recursive programs only, but "
                         f"{', '.join(rec.relations)} is recursive: use dredc or bfc")
    timed = algorithm is None  # the default algorithm: with its time budget
    if engine.defer_fallback:
        return _update(engine, insert, delete, alg, t0, boundary, timed)
    pending = engine.evaluator.memory.take_fallback()  # (e.g. one while loading the store)
    retries0 = engine.evaluator.memory.retries
    if not engine.be.is_device:
        stats = _update(engine, insert, delete, alg, t0, boundary, timed)
        stats.fallback = pending
        return stats
    engine.defer_fallback = True  # a device OOM ends the update, which is redone on the CPU
    try:
        stats = _update(engine, insert, delete, alg, t0, boundary, timed)
        stats.oom_retries = engine.evaluator.memory.retries - retries0
        stats.fallback = pending
        return stats
    except Exception as exc:  # noqa: BLE001 - CUDA errors are RuntimeErrors
        if not fallback.device_oom(exc, engine.be):
            raise
        text = describe(exc)
    finally:
        engine.defer_fallback = False
    fallback.move_to_cpu(engine, f"the {alg} update", text)  # from the restored snapshot
    why = engine.evaluator.memory.take_fallback()
    stats = _update(engine, insert, delete, alg, t0, boundary)
    stats.oom_retries = engine.evaluator.memory.retries - retries0
    stats.fallback = "; ".join(x for x in (pending, why) if x)
    return stats


def _update(engine: Any, insert: Encoded, delete: Encoded, alg: str, t0: float,
            boundary: Any = None, timed: bool = False) -> UpdateStats:
    """The update on the engine's backend; restores the state when anything fails.
    ``timed``: DRed's and DRed^c's overdeletion has the default algorithm's time budget
    (:func:`_deadline`); past it, the update rematerialises."""
    from .forward_algorithms import OutOfTime

    stats = UpdateStats(algorithm=alg, device=engine.be.name)
    eq = getattr(engine, "equality", None)  # equality by rewriting: Mat≈ / Remat≈
    saved = engine.state.snapshot()  # restored as one value if anything fails
    try:
        e_plus = _rows(engine, insert)
        e_minus = _rows(engine, delete)
        new_e = dict(engine.explicit)
        for name in insert.keys() | delete.keys():  # line 1 of Algorithms 1-3
            e = engine.explicit.get(name)
            if e is None:
                continue
            em, ep = e_minus[name], e_plus[name]
            if len(em):
                em = em.select(e.has(em))  # E⁻ ∩ E
                if len(ep) and len(em):
                    em = em.select(~ep.has(em))  # \ E⁺
            if len(ep):
                ep = ep.select(~e.has(ep))  # E⁺ \ E
            e_minus[name], e_plus[name] = em, ep
            if len(em) or len(ep):  # E' = (E \ E⁻) ∪ E⁺: a tombstone set and a run
                ne = e.without(em) if len(em) else e
                ne = ne.append(ep) if len(ep) else ne
                new_e[name] = ne.compacted() if ne.worth_compacting() else ne
        stats.deleted = sum(len(x) for x in e_minus.values())
        stats.inserted = sum(len(x) for x in e_plus.values())

        def rematerialise(level: int) -> None:
            """E := E′, materialised from scratch with counters of ``level``."""
            engine.explicit = new_e
            engine.counting = level
            stats.derivations = engine.materialise().derivations

        if not (stats.deleted or stats.inserted) and not alg.startswith("remat") \
                and engine.materialised and _counters_ready(engine, alg):
            pass  # nothing changes: no round (a queue that cancelled itself)
        elif eq is not None and not stats.deleted and engine.can_continue():
            engine.explicit = new_e  # insertions only: Mat≈ continues (paper 001 §1)
            stats.derivations = engine.continue_insert(e_plus)
            stats.algorithm = "mat≈"
            stats.note = "insertions continued the rewritten materialisation (Mat≈)"
        elif alg.startswith("remat"):
            rematerialise(_LEAVES[alg])
            if any(s.lookups for s in engine.strata):
                from .recursive_aggregates import REMAT_NOTE

                stats.note = REMAT_NOTE
            if eq is not None:
                stats.algorithm = "remat≈"
                stats.note = ("Remat≈: rematerialised by rewriting (deletions with equality "
                              "are not maintained incrementally yet)")
        else:
            timed = timed and bool(stats.deleted) and boundary is None \
                and alg in ("dred", "dredc")
            why = _lately(engine, alg, stats.deleted) if timed else ""
            try:
                if why:
                    raise OutOfTime(why)
                _run_incremental(engine, alg, e_minus, e_plus, new_e, stats, boundary, timed)
                if timed:
                    engine.default_gave_up = None  # it ran to its end
            except OutOfTime as exc:
                engine.state = saved.snapshot()  # as it was (saved kept for a failure)
                stats.note = (f"{_REMAT[_LEAVES[alg]]}: {alg} {why}" if why
                              else f"{_REMAT[_LEAVES[alg]]}: {alg}'s {exc}")
                if not why:
                    engine.default_gave_up = give_up.after_give_up(
                        engine.default_gave_up, alg, stats.deleted, DEFAULT_RETRY_AFTER)
                if getattr(engine, "is_twin", False):  # the device rematerialises
                    raise twin.RematOnDevice(stats.note) from None
                rematerialise(_LEAVES[alg])
                stats.algorithm = _REMAT[_LEAVES[alg]]
                stats.overdeleted = stats.rederived = stats.added = 0
    except BaseException:
        engine.state = saved
        raise
    engine._device_changed()
    # hidden relations (aggregates, their key domains) are not counted
    stats.facts = sum(len(r) for n, r in engine.store.items() if not n.startswith("@"))
    stats.seconds = time.perf_counter() - t0
    return stats


def _counters_ready(engine: Any, alg: str) -> bool:
    """Whether the engine holds the derivation counters ``alg`` needs (an update with no
    change still leaves them, as ``stats.algorithm`` says)."""
    need = _NEEDS.get(alg, 0)
    # recursive counters of modular strata are not kept (paper 002 §4.2): DRed^c without
    # modules needs them rebuilt when they were last computed with modules
    stale_rec = (alg == "dredc" and engine.modules == "off"
                 and engine.counted_with == "auto")
    return not (need and (engine.counting < need or not engine.counters or stale_rec))


def _run_incremental(engine: Any, alg: str, e_minus: dict[str, RowSet],
                     e_plus: dict[str, RowSet], new_e: dict[str, RowSet],
                     stats: UpdateStats, boundary: Any = None, timed: bool = False
                     ) -> None:
    """``alg`` over the engine's state, committed at the end; ``timed``: its overdeletion
    has the default algorithm's time budget from when the counters are ready
    (:func:`_deadline`; a rebuild of the counters first is not charged to it)."""
    from . import forward_algorithms as F

    need = _NEEDS[alg]
    if not _counters_ready(engine, alg):
        engine.counting = max(need, engine.counting)
        engine.materialise()
        stats.note = f"rebuilt derivation counters (level {engine.counting}) first"
    deadline = _deadline(engine, time.perf_counter()) if timed else None
    level = engine.counting if _LEAVES[alg] is None else _LEAVES[alg]
    state = UpdateState(engine.be, engine.store, engine.counters, level)
    modules = {}
    if alg == "dredc" and engine.module_plans:
        from .modular import rebuild

        for s in engine.strata:
            if s.index in engine.module_plans:
                mods = engine.module_state.get(s.index)
                if mods is None:
                    mods = rebuild(engine, s, engine.module_plans[s.index])
                    stats.note = (stats.note + "; " if stats.note else "") + \
                        "rebuilt module state (X_R, C_R) first"
                modules[s.index] = [dataclasses.replace(m, derivations=0) for m in mods]
                stats.modules += [f"{m.kind}({m.relation})" for m in mods
                                  if m.kind != "seminaive"]
    u = F.Update(engine.evaluator, state, engine.strata, engine.explicit, e_minus, e_plus,
                 {n: r.arity for n, r in engine.program.relations.items()}, stats,
                 modules, boundary, new_e, deadline=deadline)
    # every algorithm's multisets and backward steps accept compacted outputs
    from .rule_eval import keep_counts

    engine.evaluator.compact = keep_counts(engine.be)
    try:
        if alg == "dredc":
            F.dred_c(u)
        elif alg == "dred":
            F.dred(u)
        elif alg == "counting":
            F.counting(u)
        else:
            from . import backward_forward as BF

            BF.bf(u, alg == "bfc")
    finally:
        engine.evaluator.compact = None
    stats.rederived = sum(len(s.A_old) for s in state.rel.values())  # |D ∩ A|
    derived = {r.head.relation for r in engine.rules} | set(engine.program.aggregates)
    store, counters = state.commit({n: e for n, e in new_e.items() if n not in derived})
    engine.explicit = new_e
    engine.store = store
    engine.counters = counters if level else {}
    engine.counting = level
    engine.materialised = True
    engine.module_state = modules  # other algorithms leave no module state behind
    if alg == "dredc" and engine.module_plans and level >= 2:
        for name in engine.modular_relations():  # c_r of modular strata: not kept
            c = engine.counters.get(name)
            if c is not None:
                engine.counters[name] = c.without_rec(engine.be)
        engine.counted_with = "auto"


def _rows(engine: Any, given: Encoded) -> dict[str, RowSet]:
    """Per relation, the given facts as a sorted unique row set (empty when absent)."""
    be = engine.be
    out: dict[str, RowSet] = {}
    empty: dict[int, RowSet] = {}  # one per arity, shared (row sets are immutable)
    for name, rel in engine.program.relations.items():
        if name in given:
            cols, n = given[name]
            if len(cols) != rel.arity:
                raise ValueError(f"{name} has arity {rel.arity}, got {len(cols)} columns")
            dev = tuple(be.asarray(c) for c in cols)
            out[name] = RowSet.from_columns(be, dev, rel.arity, n_rows=n)
        else:
            e = empty.get(rel.arity)
            if e is None:
                e = empty[rel.arity] = RowSet.empty(be, rel.arity)
            out[name] = e
    for name in given:
        if name not in engine.program.relations:
            raise ValueError(f"unknown relation {name!r}")
    return out
