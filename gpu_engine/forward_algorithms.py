"""Counting, DRed and DRed^c (paper 000 Algorithms 1-2) as columnar passes.

Each algorithm walks the strata in order and records its changes in an
:class:`~gpu_engine.update_state.UpdateState`; the caller commits them.  Sets of facts
are sorted row sets, the multisets Π⟦...⟧ are rule outputs grouped and counted
(:func:`~gpu_engine.update_state.multiset`), and counter updates are scatter-adds at
the facts' positions in the old materialisation: no per-fact Python.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gpu_engine.kernels.backend import INDEX

from . import touch
from .affected import VersionOf, affected, mark_rederivable, may_match
from .aggregates import update_stratum as update_aggregate
from .backward_plan import one_step
from .fdu import at_boundary
from .ir import Atom, Rule
from .rowset import RowSet, union_rows
from .rule_eval import RuleEvaluator, RuleOutput
from .runs import RunSet
from .scan_rules import ScanPlan, scan, scan_plan
from .stats import UpdateStats
from .stratify import Stratum
from .update_state import UpdateState, multiset

Heads = dict[str, tuple[RowSet, Any]]


class TooLarge(Exception):
    """DRed overdeleted more than :attr:`Update.overdelete_limit` facts."""


class OutOfTime(Exception):
    """DRed's or DRed^c's overdeletion ran past :attr:`Update.deadline`."""


def _in_time(u: Update, s: Stratum, rnd: int) -> None:
    """An overdeletion round of stratum ``s`` begins: past the update's deadline, stop."""
    if u.deadline is not None and time.perf_counter() > u.deadline:
        raise OutOfTime(f"overdeletion ran past its time budget (stratum {s.index}, "
                        f"round {rnd})")


@dataclass
class Update:
    """One update in progress: the normalised E⁻ / E⁺ (per relation), the old E and
    the working state."""

    ev: RuleEvaluator
    state: UpdateState
    strata: list[Stratum]
    explicit: dict[str, RunSet]
    e_minus: dict[str, RowSet]
    e_plus: dict[str, RowSet]
    arity: dict[str, int]
    stats: UpdateStats
    modules: dict[int, list[Any]] = field(default_factory=dict)  # DRed^c-MOD strata
    # fully dynamic updates (fdu.py): a hook called at round boundaries, and the new E it
    # may extend with injected additions
    boundary: Any = None
    new_explicit: dict[str, RunSet] | None = None
    # DRed's overdeletion stops with TooLarge past this many facts (a caller that would
    # rather rematerialise: gpu_engine.equality_dred under auto)
    overdelete_limit: int | None = None
    # DRed's and DRed^c's overdeletion stops with OutOfTime once time.perf_counter() passes
    # this (the default algorithm's time budget: gpu_engine.maintenance)
    deadline: float | None = None
    # DRed's one-step rederivation through the backward planner (smallest estimated
    # fan-out first: gpu_engine.backward_plan) for rules without negation, instead of
    # the evaluator's order (gpu_engine.equality_dred sets it)
    planned_backward: bool = False

    @property
    def be(self) -> Any:
        return self.ev.be

    def ones(self, rows: RowSet) -> Any:
        return self.be.xp.ones(len(rows), dtype=INDEX)

    def derive(self, rules: list[Rule], pos: VersionOf, neg: VersionOf,
               P: dict[str, RunSet], N: dict[str, RunSet] | None = None) -> Heads:
        """Π⟦pos, neg : P, N⟧ for ``rules``, grouped per head relation."""
        outs: dict[str, list[RuleOutput]] = {}
        for rule in touch.seeing(rules, P, N) if touch.SHORTCUTS else rules:
            o = affected(self.ev, rule, pos, neg, P, N)
            if o:
                outs.setdefault(rule.head.relation, []).extend(o)
                self.stats.derivations += sum(x.count for x in o)
        return {r: multiset(self.be, self.arity[r], o) for r, o in outs.items()}

    def removed(self) -> dict[str, RunSet]:
        """``D \\ A`` per relation (nonempty ones)."""
        return dict(self.state.gone_of)

    def added(self) -> dict[str, RunSet]:
        """``A \\ D`` per relation (nonempty ones)."""
        return dict(self.state.new_of)

    def idle(self, s: Stratum) -> bool:
        """Whether nothing can change in stratum ``s``: no explicit change of its facts
        and no change of a relation its rules read (every Π⟦...⟧ of it is then empty)."""
        if any(len(self.e_minus[r]) or len(self.e_plus[r]) for r in s.relations):
            return False
        gone, new = self.state.gone_of, self.state.new_of
        watch = s.watch()
        for n in s.reads:
            if n not in gone and n not in new:
                continue
            atoms = watch.get(n, ())
            if atoms is None:  # read under negation
                return False
            # finer: no variant of a rule of s can match the changed facts (their constants)
            for part in (gone.get(n), new.get(n)):
                if part is not None and any(may_match(self.ev, a, part) for a in atoms):
                    return False
        return True

    def union(self, name: str, parts: list[RowSet]) -> RowSet:
        return union_rows(self.be, self.arity[name], parts)

    # --- shared phases ----------------------------------------------------------------

    def insert(self, s: Stratum, rederived: dict[str, RowSet], counters: bool) -> None:
        """INSERT of Algorithms 1 and 2 (lines 14-20, 39-50): seminaive insertion of
        the rederived facts, E⁺ and the consequences of lower-strata changes, with the
        counters incremented once per derivation when ``counters``."""
        st = self.state
        P, N = self.added(), self.removed()  # A \ D, D \ A
        if self._nothing_to_insert(s, rederived, P, N):
            self.stats.rounds += 1  # (the one round the loop would count, finding no Δ)
            return
        cand: dict[str, list[RowSet]] = {r: [] for r in s.relations}
        for r, rows in rederived.items():  # line 40: N_A := R
            cand[r].append(rows)
        for r in s.relations:  # line 41: E⁺ ∩ O^s
            ep = self.e_plus[r]
            if len(ep):
                cand[r].append(ep)
                if counters:
                    st.bump(r, ep, self.ones(ep), False, +1)
        for rules, rec in ((s.nonrecursive_rules, False), (s.recursive_rules, True)):
            if not rules:
                continue
            for r, (rows, cnt) in self.derive(rules, st.new, st.new, P, N).items():
                cand[r].append(rows)  # lines 41-44
                if counters:
                    st.bump(r, rows, cnt, rec, +1)
        rnd = 0
        while True:  # lines 45-50
            at_boundary(self, "insert", s, rnd, cand, counters)  # additions may join Δ
            rnd += 1
            delta = {r: d for r in s.relations
                     if cand[r] and len(d := st.not_in_new(r, self.union(r, cand[r])))}
            if not delta:
                break
            for r, d in delta.items():
                st.add(r, d)  # line 48
            self.stats.added += sum(len(d) for d in delta.values())
            if _last_round(self, s):  # no recursive rule: the next round finds nothing
                break
            cand = {r: [] for r in s.relations}
            heads = self.derive(s.recursive_rules, st.new, st.new,
                                {r: RunSet.of(d) for r, d in delta.items()})
            for r, (rows, cnt) in heads.items():  # lines 49-50
                cand[r].append(rows)
                if counters:
                    st.bump(r, rows, cnt, True, +1)

    def _nothing_to_insert(self, s: Stratum, rederived: dict[str, RowSet],
                           P: dict[str, RunSet], N: dict[str, RunSet]) -> bool:
        """Whether INSERT of stratum ``s`` has no candidate at all: nothing rederived, no
        E⁺ of its relations and no rule of it that reads ``P`` (A \\ D) positively or ``N``
        (D \\ A) under negation (the usual end of a small deletion's stratum).  Not taken
        under a boundary hook, which sees every round."""
        if self.boundary is not None or not touch.SHORTCUTS:
            return False
        if any(len(rows) for rows in rederived.values()) \
                or any(len(self.e_plus[r]) for r in s.relations):
            return False
        return not (touch.seeing(s.nonrecursive_rules, P, N)
                    or touch.seeing(s.recursive_rules, P, N))


# --- Counting (Gupta, Mumick and Subrahmanian 1993) -------------------------------------


def counting(u: Update) -> None:
    """Counting for non-recursive programs: every stratum's facts are deleted exactly
    when their (non-recursive) counter drops to zero, and added when it rises from zero.
    Only affected rule instances are considered."""
    st = u.state
    for s in u.strata:
        if s.aggregate is not None:
            update_aggregate(u, s)
            continue
        if s.recursive:
            raise ValueError("the Counting algorithm handles non-recursive programs only; "
                             f"stratum {s.index} ({', '.join(s.relations)}) is recursive")
        plan = _copy_plan(u, s)
        if plan is not None:  # (with its own test of idleness; Counting counts no rounds)
            _copying(u, s, plan, rounds=False)
            continue
        if u.idle(s):
            continue
        at_boundary(u, "start", s, 0)
        cand: dict[str, list[RowSet]] = {r: [] for r in s.relations}
        for r in s.relations:
            em, ep = u.e_minus[r], u.e_plus[r]
            if len(em):
                st.bump(r, em, u.ones(em), False, -1)
                cand[r].append(em)
            if len(ep):
                st.bump(r, ep, u.ones(ep), False, +1)
                cand[r].append(ep)
        P, N = u.removed(), u.added()
        for r, (rows, cnt) in u.derive(s.nonrecursive_rules, st.old, st.old, P, N).items():
            st.bump(r, rows, cnt, False, -1)
            cand[r].append(rows)
        for r, (rows, cnt) in u.derive(s.nonrecursive_rules, st.new, st.new,
                                       u.added(), u.removed()).items():
            st.bump(r, rows, cnt, False, +1)
            cand[r].append(rows)
        for r in s.relations:
            rows = u.union(r, cand[r])
            if not len(rows):
                continue
            in_i = st.rel[r].I.has(rows)
            old = rows.select(in_i)
            if len(old):
                gone = old.select(st.counter(r, old, False) == 0)
                st.overdelete(r, gone)
                u.stats.overdeleted += len(gone)
            fresh = rows.select(~in_i)
            st.add(r, fresh)
            u.stats.added += len(fresh)


# --- DRed (Algorithm 1) ------------------------------------------------------------------


def dred(u: Update) -> None:
    """DRed: overdelete, rederive one step by evaluating rules backwards, insert."""
    for s in u.strata:
        if s.aggregate is not None:
            update_aggregate(u, s)
            continue
        if u.idle(s):
            continue
        at_boundary(u, "start", s, 0)
        if not s.rules and u.boundary is None and touch.SHORTCUTS:
            _explicit_only(u, s)  # (E⁻ is never rederived: it is not in E \ E⁻)
            continue
        _dred_overdelete(u, s)
        rederived = _dred_rederive(u, s)  # line 4
        u.insert(s, rederived, counters=False)  # line 5


def _dred_overdelete(u: Update, s: Stratum) -> None:
    """Lines 7-13."""
    st = u.state
    cand = {r: [u.e_minus[r]] for r in s.relations}  # line 8
    for r, (rows, _) in u.derive(s.rules, st.old, st.old, u.removed(), u.added()).items():
        cand[r].append(rows)
    rnd = 0
    while True:
        at_boundary(u, "overdelete", s, rnd)
        _in_time(u, s, rnd)
        rnd += 1
        delta = {r: d for r in s.relations
                 if cand[r] and len(d := st.not_deleted(r, u.union(r, cand[r])))}  # line 10
        if not delta:
            break
        heads = u.derive(s.recursive_rules, st.mid, st.old_plus,
                         {r: RunSet.of(d) for r, d in delta.items()})  # line 12
        cand = {r: [] for r in s.relations}
        for r, (rows, _) in heads.items():
            cand[r].append(rows)
        for r, d in delta.items():
            st.overdelete(r, d)  # line 13
            u.stats.overdeleted += len(d)
        if u.overdelete_limit is not None and u.stats.overdeleted > u.overdelete_limit:
            raise TooLarge(f"it overdeleted more than {u.overdelete_limit:,} facts")


def _dred_rederive(u: Update, s: Stratum) -> dict[str, RowSet]:
    """Line 4: F ∈ D ∩ O^s is rederived if F ∈ E \\ E⁻ or some rule instance over
    ``I \\ (D \\ A)`` (negation over ``I ∪ A``) derives it."""
    st = u.state
    out: dict[str, RowSet] = {}
    for r in s.relations:
        d = st.rel[r].D.compact()
        if not len(d):
            continue
        hit = u.explicit[r].has(d) & ~u.e_minus[r].has(d)
        mark_rederivable(u.be, u.ev, [x for x in s.rules if x.head.relation == r], d, hit,
                         st.mid, st.old_plus, u.stats,
                         _planned_step(u) if u.planned_backward else None)
        out[r] = d.select(hit)
    return out


def _planned_step(u: Update) -> Any:
    """DRed's one-step rederivation through the backward planner
    (:func:`gpu_engine.backward_plan.one_step`) over ``I \\ (D \\ A)`` as run sets."""
    st = u.state
    mid: dict[str, RunSet] = {}

    def source(n: str) -> RunSet:
        if n not in mid:
            s = st.rel[n]
            mid[n] = s.I.without(s.gone.compact()) if len(s.gone) else s.I
        return mid[n]

    def step(rule: Rule, rows: RowSet) -> tuple[Any, int]:
        return one_step(u.ev, rule, rows, source, lambda n: st.rel[n].I, st.mid, st.old_plus)

    return step


# --- DRed^c (Algorithm 2) ----------------------------------------------------------------


def dred_c(u: Update) -> None:
    """DRed^c: counters replace backward rule evaluation."""
    st = u.state
    for s in u.strata:
        if s.aggregate is not None:
            update_aggregate(u, s)
            continue
        plan = _copy_plan(u, s)
        if plan is not None:  # (with its own test of idleness)
            _copying(u, s, plan)
            continue
        if u.idle(s):
            continue
        at_boundary(u, "start", s, 0)
        if not s.rules and u.boundary is None and touch.SHORTCUTS:
            _explicit_only(u, s)
            continue
        if s.index in u.modules:  # a stratum with TC/STC modules: paper 002 Algorithm 3
            from .modular import dredc_mod

            dredc_mod(u, s, u.modules[s.index])
            continue
        _dredc_overdelete(u, s)  # line 23
        rederived = {}
        heads = {rule.head.relation for rule in s.recursive_rules}
        for r in s.relations:  # line 24: R := {F ∈ D ∩ O^s | C_r[F] > 0}
            if r not in heads:  # no recursive rule derives r: C_r[F] = 0
                continue
            d = st.rel[r].D.compact()
            if len(d):
                rederived[r] = d.select(st.counter(r, d, True) > 0)
        u.insert(s, rederived, counters=True)  # line 25


def _dredc_overdelete(u: Update, s: Stratum) -> None:
    """Lines 27-38."""
    st = u.state
    cand: dict[str, list[RowSet]] = {r: [] for r in s.relations}
    for r in s.relations:  # line 29: E⁻ ∩ O^s
        em = u.e_minus[r]
        if len(em):
            st.bump(r, em, u.ones(em), False, -1)
            cand[r].append(em)
    P, N = u.removed(), u.added()  # D \ A, A \ D
    for rules, rec in ((s.nonrecursive_rules, False), (s.recursive_rules, True)):
        if not rules:
            continue
        for r, (rows, cnt) in u.derive(rules, st.old, st.old, P, N).items():  # 29-32
            st.bump(r, rows, cnt, rec, -1)
            cand[r].append(rows)
    rnd = 0
    while True:  # lines 33-38
        at_boundary(u, "overdelete", s, rnd)
        _in_time(u, s, rnd)
        rnd += 1
        delta: dict[str, RowSet] = {}
        for r in s.relations:
            if not cand[r]:
                continue
            nd = st.not_deleted(r, u.union(r, cand[r]))
            if len(nd):
                d = nd.select(st.counter(r, nd, False) == 0)  # line 34
                if len(d):
                    delta[r] = d
        if not delta:
            break
        if _last_round(u, s):  # no recursive rule: line 36 derives nothing
            for r, d in delta.items():
                st.overdelete(r, d)  # line 38
                u.stats.overdeleted += len(d)
            _in_time(u, s, rnd)  # (the next round's check)
            break
        heads = u.derive(s.recursive_rules, st.mid, st.old_plus,
                         {r: RunSet.of(d) for r, d in delta.items()})  # line 36
        cand = {r: [] for r in s.relations}
        for r, (rows, cnt) in heads.items():
            st.bump(r, rows, cnt, True, -1)  # line 37
            cand[r].append(rows)
        for r, d in delta.items():
            st.overdelete(r, d)  # line 38
            u.stats.overdeleted += len(d)


class CopyPlan(NamedTuple):
    """A stratum that copies facts, for one update (:func:`_copy_plan`)."""

    scan: ScanPlan
    src: RunSet | None  # D \ A or A \ D of the relation the rule reads (None: no change)
    deletes: bool  # src is D \ A


def _copy_plan(u: Update, s: Stratum) -> CopyPlan | None:
    """The scan plan and change of a stratum that copies facts, when this update lets
    DRed^c or Counting take :func:`_copying` for it (None: the general passes).

    The stratum: one relation ``r`` and one rule, a single positive atom ``T(...)`` whose
    facts the head determines (``ScanPlan.injective``: ``R(x, y) :- T(x, "p", y)``).  The
    update: no explicit fact of ``r`` before or after it, deletions from ``T`` or
    additions to ``T`` but not both (``D \\ A`` and ``A \\ D`` of ``T`` are final: its
    stratum is lower), and no boundary hook."""
    if len(s.rules) != 1 or s.recursive_rules or s.subsumptions or s.lookups \
            or not touch.SHORTCUTS or u.boundary is not None or s.index in u.modules:
        return None
    rule = s.rules[0]
    if len(rule.body) != 1 or not isinstance(rule.body[0], Atom) or not rule.head.args:
        return None  # (a nullary head: the general passes)
    plan = scan_plan(rule, u.ev.symbols)
    if plan is None or not plan.injective:
        return None
    st = u.state
    gone, new = st.gone_of.get(plan.relation), st.new_of.get(plan.relation)
    if gone is not None and new is not None:
        return None
    src = gone if gone is not None else new
    if src is not None and src.dead:  # (tombstones: the general evaluator)
        return None
    r = rule.head.relation
    e = u.explicit.get(r)
    if (e is not None and len(e)) or len(u.e_minus[r]) or len(u.e_plus[r]):
        return None
    made = dict.get(st.rel, r)  # (D and A of r: empty until this stratum changes them)
    if made is not None and (len(made.D) or len(made.A_old) or len(made.A_new)):
        return None
    return CopyPlan(plan, src, gone is not None)


def _copying(u: Update, s: Stratum, plan: CopyPlan, rounds: bool = True) -> None:
    """DRed^c (lines 23-25) or Counting for a stratum that copies facts
    (:func:`_copy_plan`; ``rounds``: count DRed^c's rounds).

    Every fact of ``r`` has exactly one derivation, ``C_nr = 1`` and ``C_r = 0``: the
    rule's one instance over a fact of ``T`` (no explicit fact, no other rule, no
    recursion), and two facts of ``T`` never give the same head.  So:

    * deletions from ``T``: line 34 overdeletes exactly the heads of the instances over
      ``D \\ A`` of ``T`` (lines 29-32); nothing is rederived (line 24: no recursive
      rule) and INSERT has no candidate (no E⁺, nothing rederived, no addition to ``T``,
      no negation).  Their counters are not decremented: after the commit the facts lie
      under tombstones, where counters mean nothing until the fact comes back and they
      are overwritten (``counters.append_counted``);
    * additions to ``T``: the overdeletion finds nothing, and INSERT (lines 41-48) adds
      the heads of the instances over ``A \\ D`` of ``T``, facts not in ``I`` (their one
      derivation is new) with ``C_nr = 1`` (``UpdateState.add_new``).

    The same sets, counters and statistics as the general passes, without their
    membership tests and counter look-ups."""
    st, stats = u.state, u.stats
    rule, src = s.rules[0], plan.src
    if src is None or not may_match(u.ev, rule.body[0], src):
        return  # idle (Update.idle's answer for this stratum)
    stats.rounds += rounds  # the overdeletion's first round (lines 33-34)
    _in_time(u, s, 0)
    outs = scan(plan.scan, src)
    assert outs is not None  # (no tombstones: _copy_plan)
    stats.derivations += sum(o.n for o in outs)
    r = rule.head.relation
    if len(outs) == 1 and outs[0].rows is not None:
        heads = outs[0].rows
    else:  # (instances over several runs: distinct heads, as the facts are)
        heads = union_rows(u.be, u.arity[r], [o.cols for o in outs])
    if plan.deletes:
        if len(heads):
            stats.rounds += rounds  # the round that finds Δ (_last_round)
            st.overdelete(r, heads)  # line 38
            stats.overdeleted += len(heads)
            _in_time(u, s, 1)
        stats.rounds += rounds  # INSERT's one round, which finds no candidate
        return
    stats.rounds += rounds  # INSERT's first round (lines 45-48)
    if len(heads):
        st.add_new(r, heads)  # line 48, with the counters of lines 41-44
        stats.added += len(heads)
        stats.rounds += rounds  # (_last_round)


def _last_round(u: Update, s: Stratum) -> bool:
    """Whether a round of a stratum without recursive rules that has just found its Δ
    ends the loop: the next round's candidates come from recursive rules only, so it
    would find none.  That round is counted (as its boundary would count it) and not
    run; not taken when a boundary hook watches the rounds."""
    if s.recursive_rules or u.boundary is not None or not touch.SHORTCUTS:
        return False
    u.stats.rounds += 1
    return True


def _explicit_only(u: Update, s: Stratum) -> None:
    """Algorithms 1 and 2 for a stratum without rules (relations of explicit facts only): every
    fact has ``C_nr = 1`` (it is in E) and ``C_r = 0``, so E⁻ is overdeleted and never
    rederived, and E⁺ (disjoint from E = I after line 1) is added; the commit gives such
    relations their counters from E, so none are looked up or changed here.  The same
    sets and statistics as the general passes, without their counter look-ups."""
    st = u.state
    u.stats.rounds += (2 if any(len(u.e_minus[r]) for r in s.relations) else 1) \
        + (2 if any(len(u.e_plus[r]) for r in s.relations) else 1)  # as the general loops
    for r in s.relations:
        em, ep = u.e_minus[r], u.e_plus[r]
        if len(em):
            st.overdelete(r, em)  # lines 29-38: C_nr[F] drops to 0
            u.stats.overdeleted += len(em)
        if len(ep):
            st.add(r, ep)  # lines 41-48
            u.stats.added += len(ep)
