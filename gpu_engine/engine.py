"""The columnar engine: explicit facts, strata and seminaive materialisation.

Seminaive evaluation with exact delta variants (DESIGN.md): for a recursive rule whose
body atoms of the current stratum are at positions p_1..p_k, variant i evaluates atom
p_i over Δ, atoms p_j (j < i) over I \\ Δ (the previous version) and atoms p_j (j > i)
over I (the current version, which includes Δ).  Every rule instance is thereby
considered exactly once, so the number of output rows of all variants of all rounds is
the exact number of derivations of each fact; with ``counting=True`` the engine keeps
these multiplicities as the non-recursive counter ``c_nr`` (rules with no atom of their
own stratum) and the recursive counter ``c_r``, aligned with the rows of each relation
(the counters of DRed^c, paper 000 §4).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gpu_engine.kernels.backend import INDEX, Backend

from . import fallback, iteration, order_dependent, small_rounds, subsumption
from .counters import Counters, flat
from .dense_absorb import DenseAbsorb
from .give_up import GaveUp
from .hd_module import HDModule
from .ir import Atom, Negation, Program, ProgramError, Rule, SymbolTable, rule_constants
from .modules import ModulePlan, plan_modules
from .plan import Role, delta_variants
from .recursive_aggregates import round_outputs
from .rowset import RowSet
from .rule_eval import RuleEvaluator, RuleOutput, concat_outputs
from .runs import RunSet
from .small_rounds import SmallPlan, SmallResult, run_small, small_plan
from .state import EngineState
from .stats import MaterialisationStats, RuleStats, StratumStats
from .stratify import Stratum, all_rules, stratify
from .twin import Twin
from .values import word_size

ProgressHook = Callable[[str, int, int], None]


def _state_field(name: str, scalar: bool = False) -> property:
    """An attribute of the engine that lives in its :class:`EngineState` (a scalar is read
    from whichever side of a GPU engine's host twin is current, without a copy)."""
    def get(self: Engine) -> Any:
        return getattr(self.current_state() if scalar else self.state, name)

    def put(self: Engine, value: Any) -> None:
        setattr(self.state, name, value)
        self._device_changed()

    return property(get, put, doc=f"``state.{name}``")


class OutOfMemory(MemoryError):
    """Materialisation ran out of (host or device) memory; the message names the stratum,
    the rule when known, and the allocation that failed."""


def _rule_of(exc: BaseException) -> str:
    rule = getattr(exc, "rule", None)
    return f", rule {rule} at {rule.loc}" if rule is not None else ""


def _size_of(exc: BaseException) -> str:
    return str(exc).strip() or "an allocation failed"


class Engine:
    """Holds a program's relations on one backend and materialises them.

    What makes up the materialisation lives in one :class:`EngineState` (``state``);
    ``explicit``, ``store``, ``counters``, ``counting``, ``materialised``, ``modules``,
    ``counted_with`` and ``module_state`` are views of its fields."""

    explicit = _state_field("explicit")
    store = _state_field("store")
    counters = _state_field("counters")
    counting = _state_field("counting", scalar=True)
    materialised = _state_field("materialised", scalar=True)
    counted_with = _state_field("counted_with", scalar=True)
    module_state = _state_field("module_state")

    def __init__(self, program: Program, be: Backend, symbols: SymbolTable,
                 counting: bool | int = False, progress: ProgressHook | None = None,
                 modules: str = "auto", decompose: str | None = None) -> None:
        self.program = program
        self.be = be
        self.symbols = symbols
        self.progress = progress
        self._twin: Twin | None = None  # (GPU) the host twin for small updates
        # seconds the last materialisation took (a host twin: its device's), which the
        # default update algorithm's time budget is a share of (gpu_engine.maintenance)
        self.materialise_seconds: float | None = None
        # the default algorithm's memory of its last fallbacks (gpu_engine.give_up)
        self.default_gave_up: GaveUp | None = None
        self._state = EngineState(counting=counter_level(counting))
        self.rules: list[Rule] = all_rules(self.program)
        self.strata: list[Stratum] = stratify(self.program, self.rules)
        order_dependent.check_program(self.program,
                                      [r for s in self.strata for r in s.recursive_rules])
        iteration.check(self.program, self.strata)  # recursive_iteration_cnt(), debug_delta
        self.order_dependent = (order_dependent.features(self.program, self.rules)
                                + iteration.features(self.program, self.rules))
        if self.order_dependent and counter_level(counting):
            raise ProgramError(f"derivation counters (a store) are not supported for programs "
                               f"with {' and '.join(self.order_dependent)}: their results "
                               "depend on the evaluation order")
        self.evaluator = RuleEvaluator(self.be, self.symbols)
        self.dense = DenseAbsorb(self.be)  # bitmaps of relations that large rounds add to
        # an update redoes itself on the CPU after a device OOM (gpu_engine.fallback)
        self.defer_fallback = False
        self.set_modules(modules)
        self.hd = HDModule(self)  # hypertree decompositions (paper 003)
        self.hd.set_mode(decompose or os.environ.get("GPU_ENGINE_DECOMPOSE", "auto"))
        self.evaluator.hd_plan = self.hd.plan
        for name, rel in self.program.relations.items():
            self.explicit.setdefault(name, RunSet.empty(self.be, rel.arity))
        self.store = dict(self.explicit)
        self._note_symbols()

    @property
    def modules(self) -> str:
        """``auto``: TC/STC modules where rules match (paper 002); ``off``."""
        return self.current_state().modules

    # --- the state and the host twin (gpu_engine.twin) ---------------------------------

    @property
    def state(self) -> EngineState:
        """The materialisation on this engine's backend (brought up to date first when
        a GPU engine's host twin ran the last updates)."""
        if self._twin is not None:
            self._twin.to_device()
        return self._state

    @state.setter
    def state(self, value: EngineState) -> None:
        self._state = value
        self._device_changed()

    def current_state(self) -> EngineState:
        """The state on whichever side is current (no copy)."""
        if self._twin is not None and not self._twin.device_current:
            return self._twin.host.state
        return self._state

    def twin(self) -> Twin:
        """The host twin of this (GPU) engine, made on first use."""
        if self._twin is None:
            self._twin = Twin(self)
        return self._twin

    def _host_reads(self) -> Engine | None:
        """The host twin when it is current and the device is not (reads go there)."""
        t = self._twin
        return t.host if t is not None and not t.device_current else None

    def _device_changed(self) -> None:
        if self._twin is not None:
            self._twin.device_updated()

    def _note_symbols(self) -> None:
        size = getattr(self.symbols, "__len__", None)
        self.state.symbols = int(size()) if size is not None else 0
        records = getattr(self.symbols, "records", None)
        self.state.records = len(records) if records is not None else 0

    def set_modules(self, modules: str) -> None:
        """Choose ``auto`` (TC/STC modules where a stratum's rules match) or ``off``."""
        if modules not in ("auto", "off"):
            raise ValueError(f"modules must be 'auto' or 'off', not {modules!r}")
        self.state.modules = modules
        self._device_changed()
        self.module_plans: dict[int, list[ModulePlan]] = {}
        if modules == "auto":
            for s in self.strata:
                if s.subsumptions or s.lookups or iteration.observes_rounds(
                        self.program, s) or any(self.program.relations[r].choice
                                         for r in s.relations):
                    continue  # a choice is made as tuples are added (in _absorb)
                if (plan := plan_modules(s)) is not None:
                    self.module_plans[s.index] = plan
        self.module_state: dict[int, list[Any]] = {}

    def modular_relations(self) -> set[str]:
        """Relations of strata evaluated by modules: no recursive counters are kept for
        them (paper 002 §4.2), so ``c_r`` is reported as 0."""
        return {r for s in self.strata if s.index in self.module_plans for r in s.relations}

    def module_names(self, strata: list[Stratum] | None = None) -> dict[int, str]:
        """The module of every rule (of ``strata``, default all), by ``id(rule)``:
        ``nonrecursive``, ``seminaive``, ``tc(R)`` or ``stc(R)``."""
        out: dict[int, str] = {}
        for s in self.strata if strata is None else strata:
            for r in s.nonrecursive_rules:
                out[id(r)] = "nonrecursive"
            for r in s.recursive_rules:
                out[id(r)] = "seminaive"
            for p in self.module_plans.get(s.index, []):
                if p.kind != "seminaive":
                    for r in p.rules:
                        out[id(r)] = f"{p.kind}({p.relation})"
        return out

    # --- facts --------------------------------------------------------------------------

    def add_facts(self, relation: str, cols: list[np.ndarray] | tuple[Any, ...],
                  n_rows: int | None = None) -> int:
        """Add encoded explicit facts (one int64 column per attribute); returns new rows.
        Facts that do not fit on the device move the engine to the CPU first."""
        return fallback.on_cpu_if_full(self, f"loading {relation}",
                                       lambda: self._add_facts(relation, cols, n_rows))

    def _add_facts(self, relation: str, cols: list[np.ndarray] | tuple[Any, ...],
                   n_rows: int | None) -> int:
        rel = self._relation(relation)
        dev = tuple(self.be.asarray(c) for c in cols)
        if len(dev) != rel.arity:
            raise ValueError(f"{relation} has arity {rel.arity}, got {len(dev)} columns")
        n = n_rows if rel.arity == 0 else (len(dev[0]) if dev else 0)
        cur = self.explicit[relation]
        delta = cur.new_rows(RowSet.from_columns(self.be, dev, rel.arity, n_rows=n))
        self.explicit[relation] = cur.append(delta)
        self.materialised = False  # (the host twin, if any, is out of date now)
        return len(delta)

    def _relation(self, name: str):
        try:
            return self.program.relations[name]
        except KeyError:
            raise ProgramError(f"unknown relation {name!r}") from None

    # --- materialisation ----------------------------------------------------------------

    def materialise(self) -> MaterialisationStats:
        """Compute the materialisation from the explicit facts (from scratch)."""
        self.evaluator.compact = self._compact
        self._device_changed()
        try:
            return self._materialise()
        finally:
            self.evaluator.compact = None

    def _materialise(self) -> MaterialisationStats:
        t0 = time.perf_counter()
        stats = MaterialisationStats(device=self.be.name)
        self.explicit = {n: rs.compacted() for n, rs in self.explicit.items()}
        self.store = dict(self.explicit)
        for name, rel in self.program.relations.items():  # facts obey the choice too
            if rel.choice and len(self.store[name]):
                empty = RunSet.empty(self.be, rel.arity)
                self.store[name] = RunSet.of(order_dependent.choose(
                    self.be, empty, self.store[name].compact(), rel.choice))
        self.counters = {}
        self.module_state = {}
        self.hd.replan()  # chosen again over this materialisation's facts
        self._compact_floor: dict[str, int] = {}
        self._count_log: dict[str, list[tuple[RowSet, Any, bool]]] = {}
        self.evaluator.expr.autoinc = 0  # autoinc() counts from 0 in every materialisation
        self._encode_constants()
        retries0 = self.evaluator.memory.retries
        for k, stratum in enumerate(self.strata):
            if self.progress:
                self.progress("stratum", k, len(self.strata))
            if stratum.aggregate is None and not stratum.rules and not stratum.subsumptions:
                continue
            evaluate = (self._evaluate_aggregate if stratum.aggregate is not None
                        else self._evaluate_stratum)
            where = f"stratum {stratum.index} ({', '.join(stratum.relations)})"
            names = list(stratum.relations)
            try:  # after a device OOM: again on the CPU (gpu_engine.fallback)
                stats.strata.append(fallback.run_stratum(
                    self, names, where, lambda s=stratum, f=evaluate: f(s)))
            except MemoryError as exc:  # one line for the user: where, and the size asked
                if self.defer_fallback and fallback.device_oom(exc, self.be):
                    raise  # an update's: it redoes itself on the CPU
                raise OutOfMemory(f"{where}{_rule_of(exc)}: {_size_of(exc)}") from None
        if self.counting:
            try:
                fallback.run_stratum(self, [], "derivation counters", self._build_counters)
            except MemoryError as exc:
                if self.defer_fallback and fallback.device_oom(exc, self.be):
                    raise
                raise OutOfMemory(f"derivation counters: {_size_of(exc)}") from None
        self.counted_with = "auto" if self.module_plans else "off"
        stats.seconds = self.materialise_seconds = time.perf_counter() - t0
        stats.facts = sum(len(r) for n, r in self.store.items() if not n.startswith("@"))
        stats.derivations = sum(s.derivations for s in stats.strata)
        stats.peak_device_bytes = self.be.peak_memory_bytes()
        stats.oom_retries = self.evaluator.memory.retries - retries0
        stats.fallback = self.evaluator.memory.take_fallback()  # (also one while loading)
        self.materialised = True
        self._note_symbols()
        return stats

    def _encode_constants(self) -> None:
        """Encode the rules' symbol constants as one batch (``encode_few``) before the
        evaluation looks them up one at a time: the host dictionary then answers those
        look-ups without building a dict of every symbol it holds
        (``host/dictionary.py``)."""
        names = list(dict.fromkeys(str(c.value) for r in self.rules
                                   for c in rule_constants(r) if c.type == "symbol"))
        if names:
            getattr(self.symbols, "encode_few", self.symbols.encode_many)(names)

    def _evaluate_stratum(self, s: Stratum) -> StratumStats:
        t0 = time.perf_counter()
        st = StratumStats(index=s.index, relations=list(s.relations), recursive=s.recursive)
        names = self.module_names([s])
        rstats = {id(r): RuleStats(str(r), r.loc, module=names.get(id(r), "")) for r in s.rules}
        before = {r: len(self.store[r]) for r in s.relations}
        iteration.start(self, s)  # iteration 0 (Soufflé's recursive_iteration_cnt())
        # non-recursive rules: once, over the complete lower strata
        outputs: dict[str, list[RuleOutput]] = {r: [] for r in s.relations}
        for rule in s.nonrecursive_rules:
            self._fire(rule, [self.store[a.relation] for a in _atoms(rule)], outputs, rstats)
        for r in s.relations:
            self._absorb(r, outputs[r], recursive=False)
        if s.subsumptions:
            subsumption.apply(self, s.subsumptions, [])
        st.iterations = 1
        if s.recursive:
            iteration.record(self, s, self.store, 0)  # debug_delta: known before round 1
        if s.index in self.module_plans:  # MAT-MOD (paper 002 Algorithm 2)
            from .modular import instantiate, mat_mod

            t1 = time.perf_counter()
            mods = instantiate(self.module_plans[s.index], self.be)
            st.iterations += mat_mod(self, s, mods)
            self.module_state[s.index] = mods
            for p, m in zip(self.module_plans[s.index], mods):
                rs = rstats[id(p.rules[0])]
                rs.derivations += m.derivations
                rs.evaluations += 1
            rstats[id(self.module_plans[s.index][0].rules[0])].seconds += (
                time.perf_counter() - t1)
            return self._finish_stratum(s, st, rstats, before, t0)
        # recursive rules: seminaive rounds with exact delta variants.  The first delta is
        # everything known so far (explicit facts and non-recursive derivations).
        delta = {r: self.store[r] for r in s.relations}
        prev = {r: RunSet.empty(self.be, self.store[r].arity) for r in s.relations}
        small = self._small_plan(s)
        force_array = False
        while s.recursive and any(len(delta[r]) for r in s.relations):
            if (small is not None and not force_array
                    and sum(len(delta[r]) for r in s.relations) <= small_rounds.ENTER_DELTA
                    and small_rounds.worth_entering(st.iterations, self.be)):
                res = run_small(small, self.store, prev, delta, self.symbols,
                                self.counting >= 2, self.progress)
                if res is None:  # a plan needs a ranked index: array path from now on
                    small = None
                    continue
                self._absorb_small(s, res, st, rstats)
                prev, delta = res.prev, res.delta
                force_array = res.overflow
                continue
            force_array = False
            st.iterations += 1
            self.evaluator.expr.iteration = st.iterations - 1
            if self.progress:
                self.progress("iteration", st.iterations, s.index)
            outputs = {r: [] for r in s.relations}
            versions = {Role.DELTA: delta, Role.OLD: prev, Role.NEW: self.store}
            changed = {r for r in s.relations if len(delta[r])}
            for rule in s.recursive_rules:
                atoms = _atoms(rule)
                for p, roles in delta_variants(atoms, changed.__contains__):
                    sources = [versions[role][a.relation] for a, role in zip(atoms, roles)]
                    self._fire(rule, sources, outputs, rstats, delta[atoms[p].relation])
            for name, rows in round_outputs(self, s.lookups, delta).items():
                outputs[name].append(RuleOutput(rows.cols, len(rows)))  # aggregates inside
            if self.program.limits and iteration.limit_reached(self, s):
                break  # .limitsize: Soufflé's loop exits before adding the round's tuples
            prev = {r: self.store[r] for r in s.relations}
            delta = {r: RunSet.of(self._absorb(r, outputs[r], recursive=True))
                     for r in s.relations}
            if s.subsumptions:
                subsumption.apply(self, s.subsumptions, [prev, delta])
            iteration.record(self, s, delta, st.iterations - 1)
        return self._finish_stratum(s, st, rstats, before, t0)

    def _evaluate_aggregate(self, s: Stratum) -> StratumStats:
        """An aggregate's hidden relation (``gpu_engine.aggregates``); each of its facts
        has exactly one non-recursive derivation."""
        from .aggregates import evaluate

        t0 = time.perf_counter()
        agg = s.aggregate
        assert agg is not None
        st = StratumStats(index=s.index, relations=list(s.relations), recursive=False)
        rows = evaluate(self.evaluator, agg, self.store.__getitem__)
        name = agg.relation
        self.store[name] = RunSet.of(rows)
        if self.counting:
            self._count_log.setdefault(name, []).append(
                (rows, self.be.xp.ones(len(rows), dtype=INDEX), False))
        st.iterations = 1
        st.facts = st.derivations = len(rows)
        st.seconds = time.perf_counter() - t0
        return st

    def _small_plan(self, s: Stratum) -> SmallPlan | None:
        """The stratum's small-delta plan (None: array path only)."""
        if any((p := self.hd.plan(r)) is not None and p.dec.width > 1
               for r in s.recursive_rules):
            return None  # cyclic decomposed rules keep the array path (gpu_engine.hd_eval)
        cache = self.__dict__.setdefault("_small_plans", {})
        if s.index not in cache:
            arity = {n: r.arity for n, r in self.program.relations.items()}
            choice = any(self.program.relations[r].choice for r in s.relations)
            rounds = s.lookups or iteration.observes_rounds(self.program, s)
            cache[s.index] = None if choice or s.subsumptions or rounds else small_plan(
                s, arity, word_size(self.symbols))
        return cache[s.index]

    def _absorb_small(self, s: Stratum, res: SmallResult, st: StratumStats,
                      rstats: dict[int, RuleStats]) -> None:
        """Install the versions, counts and statistics of rounds run on the small path."""
        if res.rounds:
            for r in s.relations:
                self.store[r] = res.prev[r].append(res.delta[r].compact())
        for name, d, cnt in res.counts:
            self._count_log.setdefault(name, []).append((d, cnt, True))
        st.iterations += res.rounds
        st.small_rounds += res.rounds
        for i, n in res.derivations.items():
            rstats[id(s.recursive_rules[i])].derivations += n
        for i, n in res.evaluations.items():
            rstats[id(s.recursive_rules[i])].evaluations += n

    def _finish_stratum(self, s: Stratum, st: StratumStats, rstats: dict[int, RuleStats],
                        before: dict[str, int], t0: float) -> StratumStats:
        """Compact the stratum's relations and fill in its statistics."""
        self.dense.clear()
        for r in s.relations:
            self.store[r] = self.store[r].compacted()
        st.rules = list(rstats.values())
        st.derivations = sum(r.derivations for r in st.rules)
        st.facts = sum(len(self.store[r]) - before[r] for r in s.relations)
        st.seconds = time.perf_counter() - t0
        return st

    def _fire(self, rule: Rule, sources: list[RunSet], outputs: dict[str, list[RuleOutput]],
              rstats: dict[int, RuleStats], delta: RunSet | None = None) -> None:
        t0 = time.perf_counter()
        negated = {lit.atom.relation: self.store[lit.atom.relation]
                   for lit in rule.body if isinstance(lit, Negation)}
        try:
            outs = self.evaluator.evaluate(rule, sources, negated, delta)
        except MemoryError as exc:
            exc.rule = rule  # type: ignore[attr-defined]  # named by the stratum loop
            raise
        head = outputs[rule.head.relation]
        head.extend(outs)
        floor = self._compact_floor.get(rule.head.relation, 0)
        if sum(o.n for o in head) > max(self.evaluator.compact_rows, 2 * floor):
            head[:] = self._compact(rule, head)  # amortised: again once doubled
            self._compact_floor[rule.head.relation] = sum(o.n for o in head)
        rs = rstats[id(rule)]
        if not rs.evaluations and (hd := self.hd.describe(rule)):
            rs.module = f"{rs.module} {hd}".strip()
        rs.derivations += sum(o.count for o in outs)
        rs.evaluations += 1
        rs.seconds += time.perf_counter() - t0

    def _absorb(self, name: str, outs: list[RuleOutput], recursive: bool) -> RowSet:
        """Add rule outputs to relation ``name`` (logging their multiplicities when
        counting); returns Δ, the rows that were new."""
        cur = self.store[name]
        if not outs:
            return RowSet.empty(self.be, cur.arity)
        n = sum(o.n for o in outs)
        cols, weights = concat_outputs(self.be, cur.arity, outs)
        if self.counting >= (2 if recursive else 1):
            d, cnt = RowSet.from_columns(self.be, cols, cur.arity, n, return_counts=True,
                                         weights=weights)
            self._count_log.setdefault(name, []).append((d, cnt, recursive))
            new, marked = cur.new_rows(d), False
        else:
            keys = self.program.relations[name].choice
            new = None if keys else self.dense.new_rows(name, cur, cols, n)
            marked = new is not None
            if new is None:
                new = cur.new_rows(RowSet.from_columns(self.be, cols, cur.arity, n))
            if keys:
                new = order_dependent.choose(self.be, cur, new, keys)
        self.store[name] = cur.append(new)
        if self.dense.sets:
            self.dense.appended(name, cur, self.store[name], new, marked)
        return new

    def _compact(self, rule: Rule, outs: list[RuleOutput]) -> list[RuleOutput]:
        """Bound the memory of a round's outputs (many derivations, few distinct rows):
        distinct rows with their multiplicities when counters need them, otherwise only
        the distinct rows not yet in the relation."""
        name = rule.head.relation
        if not outs:
            return outs
        arity = len(outs[0].cols) if name not in self.store else self.store[name].arity
        total = sum(o.count for o in outs)
        n = sum(o.n for o in outs)
        cols, weights = concat_outputs(self.be, arity, outs)
        if self.counting and name in self.store:
            d, cnt = RowSet.from_columns(self.be, cols, arity, n, return_counts=True,
                                         weights=weights)
            return [RuleOutput(d.cols, len(d), cnt, total)]
        d = RowSet.from_columns(self.be, cols, arity, n)
        if name in self.store:  # else an internal join (a module's): distinct rows suffice
            d = self.store[name].new_rows(d)
        return [RuleOutput(d.cols, len(d), derivations=total)]  # may be empty: keeps total

    def _build_counters(self) -> None:
        """Sum the logged multiplicities into c_nr / c_r aligned with each relation; an
        explicit fact counts as one non-recursive derivation (paper 000 §4.2)."""
        xp = self.be.xp
        for name, runs in self.store.items():
            final = runs.compact()
            self.store[name] = RunSet.of(final)
            nonrec = xp.zeros(len(final), dtype=INDEX)
            rec = xp.zeros(len(final), dtype=INDEX)
            e = self.explicit[name].compact()
            if len(e):
                nonrec[final.positions(e.cols)] += 1
            for d, cnt, recursive in self._count_log.get(name, []):
                if len(d):
                    target = rec if recursive else nonrec
                    target[final.positions(d.cols)] += cnt  # distinct positions per entry
            self.counters[name] = Counters.single(nonrec, rec)
        self._count_log = {}

    # --- access -------------------------------------------------------------------------

    def columns(self, name: str) -> tuple[np.ndarray, ...]:
        """The materialised rows of ``name`` as host int64 columns (sorted)."""
        if (host := self._host_reads()) is not None:
            return host.columns(name)
        rs = self.store[name].compact()
        return tuple(self.be.to_host(c) for c in rs.cols)

    def size(self, name: str) -> int:
        if (host := self._host_reads()) is not None:
            return host.size(name)
        return len(self.store[name])

    def explicit_columns(self, name: str) -> tuple[np.ndarray, ...]:
        """The explicit facts E of ``name`` as host int64 columns (sorted)."""
        if (host := self._host_reads()) is not None:
            return host.explicit_columns(name)
        return tuple(self.be.to_host(c) for c in self.explicit[name].compact().cols)

    def counter_arrays(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(c_nr, c_r) as host arrays (copies) aligned with :meth:`columns`."""
        if (host := self._host_reads()) is not None:
            return host.counter_arrays(name)
        if name not in self.counters:
            raise RuntimeError("no derivation counters: materialise with counting enabled")
        _, nr, r = flat(self.store[name], self.counters[name])
        return self.be.to_host(nr), self.be.to_host(r)

    def install_state(self, explicit: dict[str, tuple[tuple[np.ndarray, ...], int]],
                      materialised: dict[str, tuple[tuple[np.ndarray, ...], int]],
                      counters: dict[str, tuple[np.ndarray, np.ndarray]] | None) -> None:
        """Install a saved state: E and I as (sorted unique host columns, row count) per
        relation, and counters aligned with I's rows (or None).  Relations not given
        are empty.  A state that does not fit on the device is installed on the CPU."""
        return fallback.on_cpu_if_full(
            self, "loading the store",
            lambda: self._install_state(explicit, materialised, counters))

    def _install_state(self, explicit: dict[str, tuple[tuple[np.ndarray, ...], int]],
                       materialised: dict[str, tuple[tuple[np.ndarray, ...], int]],
                       counters: dict[str, tuple[np.ndarray, np.ndarray]] | None) -> None:
        self._device_changed()

        def rows(cols: tuple[np.ndarray, ...], n: int, arity: int) -> RowSet:
            dev = tuple(self.be.asarray(c) for c in cols)
            return RowSet.from_columns(self.be, dev, arity, n_rows=n)

        for name, rel in self.program.relations.items():
            cols, n = explicit.get(name, ((), 0))
            self.explicit[name] = RunSet.of(rows(cols, n, rel.arity)) if n else RunSet.empty(
                self.be, rel.arity)
            cols, n = materialised.get(name, ((), 0))
            self.store[name] = RunSet.of(rows(cols, n, rel.arity)) if n else RunSet.empty(
                self.be, rel.arity)
        self.counters = {}
        self.module_state = {}
        if counters is not None:
            for name in self.program.relations:
                m = len(self.store[name])
                nr, r = counters.get(name, (np.zeros(m), np.zeros(m)))
                if len(nr) != m or len(r) != m:
                    raise ValueError(f"counters of {name} do not match its {m} facts")
                self.counters[name] = Counters.single(self.be.asarray(nr), self.be.asarray(r))
        self.materialised = True
        self._note_symbols()




def counter_level(counting: bool | int) -> int:
    """0: no counters, 1: non-recursive counters only, 2: both (``True``)."""
    level = 2 if counting is True else int(counting)
    if level not in (0, 1, 2):
        raise ValueError(f"counting must be False, True, 0, 1 or 2, not {counting!r}")
    return level


def _atoms(rule: Rule) -> list[Atom]:
    return [lit for lit in rule.body if isinstance(lit, Atom)]

