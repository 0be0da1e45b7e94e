"""Incremental maintenance with equality by rewriting: DRed≈ (paper 001 §3, bulk reading).

Paper 001 gives B/F≈ (Algorithms 1–7) and, as the bulk alternative the brief sketches
(``papers-001-003-004.md`` §1.4 "DRed≈"), a DRed that overdeletes through ρ and splits
the classes whose merges lost a derivation.  This module implements that DRed≈ over the
rewritten relations of an :class:`~gpu_engine.equality.EqualityEngine`; every pass is a
columnar rule evaluation, the control is per round.

1. **Overdeletion in normal form** (seminaive, the program has no negation): ΔD starts
   as π(E⁻); every rule instance with one body atom in ΔD and the others in I derives a
   head that joins D.  Rules are normalised by the old ρ.  The rounds run stratum by
   stratum, as paper 000's DRed (Algorithm 1) does: first, all at once, the relations of
   the strata up to the equality's that reach the equality relation (block 0, where
   classes split), then the other relations of those strata (block 1), then each stratum
   above in order.  Past block 0, a candidate that holds no exploded class holds in I′,
   stays out of D, and so do the consequences that only it would have overdeleted, when
   it is the normal form of a fact of E′ holding no leaver (step 2), or has a one-step
   derivation over the lower blocks' I \\ D (final by then; a rule whose body reads only
   lower blocks, not the equality, with the same normal form under ρ′ as under ρ).  No
   rule from these relations reaches an equality, so a fact's normal form is all that
   counts of it (in block 0 the member a fact holds decides which merges it justifies:
   ``key(g, k)`` deleted, ``key(h, k)`` kept).  This is the rederivation of step 3 moved
   before the propagation, where it stops DRed's overdelete-then-rederive cascade.
2. **Explosion.**  When an instance of a rule whose head is an equality ``same(s, t)``
   with ``s`` and ``t`` not the same term is overdeleted, its head normalises to
   ``same(c, c)``; if ``c``'s class has two or more members the merge may have lost its
   justification.  The same for a deleted explicit equality ``same(a, b)``, a ≠ b.
   Reflexive derivations (``same(x, x) :- ...``) never split a class.  Equalities certain
   in I′ are collected (:func:`_components`: the explicit equalities of E′, and the
   equality rules as written over facts of E′); the members they connect to the
   representative ``c`` stay, the others (the *leavers*) stand for themselves.  A class
   that keeps every member is whole.  One that loses leavers is *split*: the normal forms
   of the leavers' explicit facts join ΔD, and ``c``'s other rows stay.  Why this is
   sound: the certain equalities are taken over E′ less every fact holding a leaver
   (:func:`_leavers`, a fixpoint; classes judged before later leavers are judged again
   when block 0 reaches its fixpoint), call it E₁.  In the materialisation of E₁ no
   leaver occurs in a domain column (no rule takes a merged column from an unmerged one,
   no leaver is a rule constant: else the class explodes), and the rest of the class is
   certainly one class, so ρ is right for E₁ on every constant that occurs: this step is
   DRed from E to E₁ with nothing split, and the leavers' facts of E′ are then inserted
   (step 3 (a)) under ρ′.  When no other member stays with ``c`` itself, ``c`` leaves
   instead (:func:`_stayers`): the largest component of the other members, over E′ less
   the facts holding a leaver or ``c``, stays, anchored at its least member ``c′``, and
   the rest leave.  The argument is the same with the stayers named ``c`` through the
   overdeletion (a bijection on the names that occur in the materialisation of E₁);
   afterwards the rows of I \\ D and D holding ``c`` are renamed to ``c′``, the name
   under the min-id policy (no row of I holds ``c′``, a member).  A stayer that is a
   rule constant changes the rule's normal form, which step 3 (c) evaluates in full.
   A class explodes instead (each member stands for itself, γ(d) = d, paper lines 9–11
   in bulk, and every fact of I with ``c`` in a domain column joins ΔD) when a leaver
   is a rule constant, a rule takes a merged column from an unmerged one, or fewer than
   two members stay together (the leavers' facts are about all of its rows then, and
   insertion may skip the relations without facts in D).  The loop runs to a fixpoint.
3. **Rederivation.**  ρ' is ρ with the leavers and the exploded members reset to
   themselves, and the stayers of a class whose representative left mapped to their
   anchor; I \\ D is normal under both (no fact of it holds an exploded
   representative or a leaver), once renamed.  Into Δ go (a) the explicit facts of E' = (E \\ E⁻) ∪ E⁺
   whose old normal form is in D or that hold a leaver or a member of an exploded class,
   normalised by ρ'; (b) the facts of D with a
   one-step derivation over I \\ D (rules normalised by ρ', evaluated backwards with the
   head bound, :func:`gpu_engine.affected.rederivable`); (c) every instance over I \\ D
   of the rules whose constants ρ' normalises differently from ρ.
4. **Insertion** continues Mat≈ from prev = I \\ D and Δ: seminaive rounds with the
   equality engine's merge step after each (``EqualityEngine._merge``: the components of
   the re-derived equalities merge exploded members again, outdated rows are rewritten,
   rules whose constants changed are evaluated once in full).  Mixed updates: deletions
   first, then E⁺ (brief pitfall 8) — E⁺ simply joins Δ under ρ'.

Reflexive rows ``same(c, c)`` (axiom ≈4) computed at the end of Mat≈ (when no rule reads
the equality relation) are overdeleted through the reflexivity rules and recomputed by
the same closure at the end, as the brief's sketch says ("recomputed rather than
propagated").

The result equals Remat≈ under the min-id representative policy: ρ of the final state
is the components of the final equalities, and the rows are the normal forms.

Programs with negation, aggregates, subsumption or choice are maintained by Remat≈
(reported in ``UpdateStats.note``).  ``auto`` (the default for equality programs) runs
DRed≈ with a budget: when overdeletion runs longer than :data:`BF_TIME` of the last
materialisation's time, or D grows beyond :data:`BUDGET_TIMED` of I (:data:`BUDGET`
without a time budget; :data:`BUDGET_SPLIT` once classes of more than
:data:`SPLIT_MEMBERS` members exploded; or the deletions are more than
:data:`LARGE_UPDATE` of a large E) it rematerialises instead, so an update costs about a
Remat≈ at worst.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import numpy as np

from gpu_engine.kernels.backend import INDEX
from gpu_engine.kernels.components import connected_components
from gpu_engine.kernels.join import expand

from . import equality_occurrences as occ
from . import touch, twin
from .affected import affected
from .backward_plan import one_step
from .engine import _atoms
from .equality import flows_in, map_constants, reflexive_rules, star_edges
from .equality_expand import shrink_classes, split_classes
from .equality_explicit import Classes, gather, members_in
from .expr import const_value
from .give_up import after_give_up, skips
from .ir import Atom, Compare, Const, Location, Negation, Rule, Var
from .plan import Role, delta_variants
from .rowset import RowSet, union_rows
from .runs import RunSet
from .state import Encoded
from .stats import RuleStats, UpdateStats
from .views import View

ALGORITHMS = ("auto", "remat", "dred_eq", "bf_eq")
# overdeletion stratum by stratum above the equality's strata, keeping out of D the facts
# a one-step derivation over the strata below proves (False: every rule at once)
STRATA = True
# a class whose lost merge certain equalities still justify for all but some of its
# members splits off those members only (False: it explodes, every member alone)
PARTIAL = True

BUDGET = 0.04  # auto: DRed≈ gives up once |D| exceeds this fraction of |I| ...
# ... or this one when its time is bounded too (BF_TIME): what a deleted row costs varies
# too much for a size to predict the time (per row of D, 4-6x a Remat≈ row on OWL 2 RL
# dup, 1,000 deletions, up to 280x on sameas 600k), while the time budget measures it:
# overdeletion is most of DRed≈'s time (rederivation and insertion took 0.3-1.3x its time
# on sameas, LUBM and OWL 2 RL dup), so overdeletion within BF_TIME ends within about
# 2 x BF_TIME of a materialisation; past this size DRed≈ cannot win
BUDGET_TIMED = 0.15
BUDGET_SPLIT = 0.01  # ... this fraction once classes of more than SPLIT_MEMBERS members
# in all exploded (re-merging them costs Mat≈ rounds; small ones cost little: OWL 2 RL
# dup, 100 deletions exploding a 2-member class, DRed≈ 0.13 s, Remat≈ 0.62 s)
LARGE_UPDATE = 0.1  # auto: deletions beyond this fraction of |E| rematerialise at once
LARGE_E = 1000  # ... when E has at least this many facts (below, DRed≈ costs little anyway)
BF_BUDGET = 0.03  # auto: B/F≈ gives up once it checks more than this fraction of |I|
BF_TIME = 0.35  # ... or runs longer than this share of the last materialisation's time
BF_MIN_SECONDS = 0.01  # ... but never less than this
# auto: a deletion touching classes of two or more members runs DRed≈ when none has
# more than this many members (exploding them costs little: LUBM(10) with duplicates,
# 10 e-mail deletions, 2-member classes: DRed≈ 0.07 s, B/F≈ 0.20 s; 1,000 deletions touch
# more than 64 members in all, and B/F≈ ran out of time there), or when the large ones
# lose at most this many members in all to DRed≈'s partial split (the synthetic
# benchmark's classes of hundreds, one member leaving each: DRed≈ 0.05-0.07 s, B/F≈
# 0.46 s); else B/F≈, which checks the facts of a large class rather than deleting and
# rederiving all of them
SPLIT_MEMBERS = 64
# ... or at most this share of those classes' members (partial splits cost what the
# leavers' facts touch; a large share leaving means the classes hang on derived
# equalities, which DRed≈ deletes and re-merges and B/F≈ proves)
LEAVE_SHARE = 0.25
# auto: after B/F≈ or DRed≈ gave up, this many deletions at least as large rematerialise
# at once.  sameas 60k, ten deletions of 1,000 facts in a row, where DRed≈ stops at its
# budget every time: 1.42 s in all with none, 1.23 s with 1, 1.03 s with 3; but on sameas
# 600k, where DRed≈ is 3x faster than Remat≈ and stops only by chance, each one skipped
# costs a Remat≈ (0.7-1.5 s) in place of a DRed≈ (0.25-0.33 s), so one
RETRY_AFTER = 1
# auto on a GPU engine: deletions go to the host twin only when BF_TIME of the device's
# Remat≈ is at least this long, the least a host update takes (DRed≈, 100 deletions:
# 0.02-0.03 s on sameas 60k and LUBM(10) dup on the 2-core CPU; 0.084 s on sameas 600k on
# the H200 machine's host, where the device rematerialised in 0.052 s and auto, trying the
# twin first, took 0.135 s); below, the device rematerialises at once
TWIN_MIN_SECONDS = 0.02


def _choose(engine: Any, e_minus: dict[str, RowSet], deleted: int,
            new_e: dict[str, RunSet]) -> tuple[str, str]:
    """``auto``'s choice for a deletion of ``deleted`` explicit facts: (algorithm, note).

    Many deletions (more than :data:`LARGE_UPDATE` of a large E) rematerialise.  A
    deletion that cannot reach an equality (:func:`_may_split`) runs DRed≈.  One that
    may, and touches a class of two or more members or deletes an equality, may split
    classes: when one of those classes has more than :data:`SPLIT_MEMBERS` members and
    they would lose more than that many members in all and more than
    :data:`LEAVE_SHARE` of their members (:func:`_few_leave`), B/F≈
    checks what each split costs and stops past its budget (:data:`BF_BUDGET` of I,
    :data:`BF_TIME` of the last materialisation's time); one that touches only
    singleton classes or small ones, or large ones that few members leave, runs DRed≈
    (bulk overdeletion, split and rederivation, with its own budget).  Either falls back
    to Remat≈."""
    n_e = sum(len(e) for e in engine.explicit.values())
    if n_e >= LARGE_E and deleted > LARGE_UPDATE * n_e:
        return "remat", (f"Remat≈ (auto): {deleted:,} deletions are more than "
                         f"{LARGE_UPDATE:.0%} of the {n_e:,} explicit facts")
    if not deleted or not _may_split(engine, e_minus):
        return "dred_eq", ""
    eq = engine.equality
    rho = engine.rho()
    xp = engine.be.xp
    sizes = engine.class_index()[2]  # per representative id (kept per ρ)
    reps = [rho[c] for name, em in e_minus.items() if len(em)
            for p in (range(2) if name == eq.relation else eq.domain.get(name, ()))
            for c in (em.cols[p],)]
    if not reps:
        return "dred_eq", ""
    r = xp.unique(xp.concatenate(reps))
    r = r[sizes[r] > 1]
    if not len(r):  # only singleton classes: nothing to split
        return "dred_eq", ""
    if int(sizes[r].max()) <= SPLIT_MEMBERS:  # small classes: DRed≈ explodes them in
        return "dred_eq", ""  # bulk (many of them too: LUBM(10) dup, 1,000 deletions)
    if _few_leave(engine, r[sizes[r] > SPLIT_MEMBERS], new_e):
        return "dred_eq", ""
    return "bf_eq", ""


def _lately(engine: Any, run: str, deleted: int, note: str) -> tuple[str, str]:
    """``auto``'s choice ``run`` for a deletion of ``deleted`` facts, or Remat≈ when that
    algorithm (B/F≈ or DRed≈) gave up on a deletion at most as large lately: its time would
    likely be lost again (after the Remat≈ it fell back to, the join indexes and
    occurrence counts it used are gone), so the next :data:`RETRY_AFTER` such deletions
    (doubled by each give-up in a row: ``give_up``) rematerialise at once and the one
    after tries again.  Smaller deletions, and insertions, try at once; an attempt that
    succeeds clears the record."""
    rec = engine.eq_gave_up
    what = {"dred_eq": "DRed≈", "bf_eq": "B/F≈"}.get(run, run)
    skip, engine.eq_gave_up = skips(rec, what, deleted)
    return ("remat", f"Remat≈ (auto): {rec.what} {rec.note()}") if skip else (run, note)


def _remat_on_device(engine: Any, alg: str, delete: Encoded) -> str:
    """``auto`` on a GPU engine: why the device rematerialises a deletion at once rather
    than send it to its host twin ("" to send it).  When the twin's time budget
    (:data:`BF_TIME` of the device's Remat≈) is below what any host update takes
    (:data:`TWIN_MIN_SECONDS`), trying it would only add to a Remat≈; when the twin gave
    up lately on a deletion at most as large (:func:`_lately`), its state would be copied
    to the host for nothing."""
    deleted = sum(n for _, n in delete.values())
    if alg != "auto" or not deleted:
        return ""
    last = engine.materialise_seconds
    if last is not None and BF_TIME * last < TWIN_MIN_SECONDS:
        return (f"Remat≈ (auto): the device rematerialises in about {last:.3f} s, less "
                "than a host update's time budget allows")
    t = engine._twin
    gave = None if t is None else t.host.eq_gave_up
    if gave is None:
        return ""
    run, note = _lately(t.host, gave.what, deleted, "")
    return note if run == "remat" else ""


def _few_leave(engine: Any, reps: Any, new_e: dict[str, RunSet]) -> bool:
    """Whether the large classes of ``reps`` would lose at most :data:`SPLIT_MEMBERS`
    members in all, or :data:`LEAVE_SHARE` of their members, to DRed≈'s partial split
    (:func:`_stayers` over E′; none of them a rule constant), so that DRed≈ deletes only
    what those members' facts touch."""
    partial, ids = _split_setting(engine, engine.rules)
    if not partial:
        return False
    eq = engine.equality
    dom = {n: p for n, p in eq.domain.items() if p}
    eq_rules = [r for r in engine.rules if _merges(eq.relation, r)]
    rho = engine.rho()
    classes = Classes(rho, *engine.class_index())
    _, m, keep, _ = _stayers(engine, reps, classes, new_e, eq_rules, dom,
                             engine.be.xp.zeros(len(rho), dtype=bool), reps)
    out = m[~keep]
    return (len(out) <= max(SPLIT_MEMBERS, LEAVE_SHARE * len(m))
            and not bool(np.isin(engine.be.to_host(out), ids).any()))


def _merges(eq: str, rule: Rule) -> bool:
    """Whether ``rule`` derives equalities whose terms differ as written (normalised
    constants may coincide, as ``same("e", "g")`` under e, g ↦ g): its lost instances
    may split a class."""
    return rule.head.relation == eq and rule.head.args[0] != rule.head.args[1]


def _split_setting(engine: Any, rules: list[Rule]) -> tuple[bool, np.ndarray]:
    """Whether DRed≈ may split a class partially under ``rules`` (:data:`PARTIAL`, and no
    rule takes a merged column from an unmerged one), and the dictionary ids of their
    domain constants (a leaver among them explodes its class)."""
    facts = [_rule_facts(engine, r) for r in rules]
    ids = [f.ids for f in facts if f.ids is not None]
    return (PARTIAL and not any(f.flows for f in facts),
            np.concatenate(ids) if ids else np.zeros(0, np.int64))


def _time_left(last: float, t0: float) -> float:
    """auto's time budget for B/F≈ or DRed≈: :data:`BF_TIME` of the last materialisation
    less what the update has spent since ``t0``, so that a fallback to Remat≈ costs at
    most that share more; never less than :data:`BF_MIN_SECONDS`."""
    return max(BF_TIME * last - (time.perf_counter() - t0), BF_MIN_SECONDS)


def _may_split(engine: Any, e_minus: dict[str, RowSet]) -> bool:
    """Whether deleting ``e_minus`` may take a derivation from an equality fact, so that
    a class may split (:func:`reaching`).  When none can, DRed≈ keeps every class and
    has nothing to explode (LUBM without e-mail deletions: 2.4× faster than B/F≈ there)."""
    return any(bool(m.any()) for m in reaching(engine, e_minus).values())


def reaching(engine: Any, e_minus: dict[str, RowSet]) -> dict[str, Any]:
    """Per relation with deletions, a mask over its rows of ``e_minus``: which may take
    a derivation from an equality fact.  Every deleted equality may; another row may
    when it matches a body atom (constants compared through ρ) of a rule whose head
    reaches the equality relation through the rules."""
    eq = engine.equality
    xp = engine.be.xp
    out = {n: xp.zeros(len(em), dtype=bool) for n, em in e_minus.items() if len(em)}
    if eq.relation in out:
        out[eq.relation][:] = True
    feeds = _feeds(engine)
    rho = engine.rho()
    syms = engine.evaluator.symbols
    for r in engine.rules:
        if r.head.relation not in feeds:
            continue
        for a in _atoms(r):
            em = e_minus.get(a.relation)
            if em is None or not len(em) or a.relation == eq.relation:
                continue
            dom = eq.domain.get(a.relation, ())
            ok = xp.ones(len(em), dtype=bool)
            for q, t in enumerate(a.args):
                if isinstance(t, Const):
                    v = const_value(t, syms)
                    col = em.cols[q]
                    if q in dom and 0 <= v < len(rho):
                        ok &= rho[xp.minimum(col, len(rho) - 1)] == rho[v]
                    else:
                        ok &= col == v
            out[a.relation] |= ok
    return out


class OverBudget(Exception):
    """DRed≈ overdeleted more than its budget: the caller rematerialises."""


def unsupported(engine: Any) -> str:
    """Why DRed≈ cannot maintain ``engine``'s program ('' when it can)."""
    p = engine.program
    if any(isinstance(lit, Negation) for r in engine.rules for lit in r.body):
        return "negation"
    if p.aggregates:
        return "aggregates"
    if p.subsumptions:
        return "subsumption"
    if any(rel.choice for rel in p.relations.values()):
        return "choice-domain"
    if getattr(engine, "order_dependent", None):
        return " and ".join(engine.order_dependent)
    return ""


def apply_update(engine: Any, insert: Encoded, delete: Encoded,
                 algorithm: str | None = None) -> UpdateStats:
    """Apply E⁻ = ``delete``, E⁺ = ``insert`` to an equality engine with ``algorithm``
    (``auto`` when None, ``bf_eq``, ``dred_eq``, ``remat``); called by
    :func:`gpu_engine.maintenance.apply_update`."""
    from .maintenance import _rows

    t0 = time.perf_counter()
    eq = engine.equality
    alg = algorithm or "auto"
    if alg not in ALGORITHMS:
        raise ValueError(f"the {alg} algorithm cannot maintain a program with the equality "
                         f"relation '{eq.relation}' (counters mean nothing after a merge): "
                         "use remat (Remat≈), dred_eq (DRed≈), bf_eq (B/F≈) or auto")
    if twin.wanted(engine, insert, delete, alg, 0):  # a small change on a GPU
        why = _remat_on_device(engine, alg, delete)
        try:
            if why:
                raise twin.RematOnDevice(why)
            stats = engine.twin().run(lambda host: apply_update(host, insert, delete, algorithm))
        except twin.RematOnDevice as exc:  # the host's state as it was: Remat≈ on the device
            stats = apply_update(engine, insert, delete, "remat")
            stats.note = str(exc) if why else f"{exc} (on the device, the host twin's choice)"
        stats.seconds = time.perf_counter() - t0
        return stats
    stats = UpdateStats(algorithm=alg, device=engine.be.name)
    saved = engine.state.snapshot()
    saved_rho = engine.rho()

    def give_up(what: str, exc: Exception) -> str:
        """auto's fallback: the state as it was, and Remat≈ to run (the next
        :data:`RETRY_AFTER` deletions as large rematerialise at once)."""
        engine.eq_gave_up = after_give_up(engine.eq_gave_up, what, stats.deleted, RETRY_AFTER)
        engine.state = saved
        engine.set_rho(saved_rho)
        stats.note = f"Remat≈ (auto): {what} stopped, {exc}"
        return "remat"

    def in_normal_form(em: dict[str, RowSet], e: dict[str, RunSet], auto: bool
                       ) -> OverBudget | None:
        """DRed in normal form for ``em`` (E′ = ``e``; under auto with DRed≈'s budget);
        the exception when it stopped (the statistics as they were)."""
        from .equality_dred import dred_normal

        n_i = sum(len(engine.store[n]) for n in engine.program.relations)
        before = dataclasses.replace(stats)
        try:
            dred_normal(engine, em, e, stats, max(int(BUDGET * n_i), LARGE_E) if auto else None)
        except OverBudget as exc:
            stats.__dict__.update(before.__dict__)
            return exc
        return None

    try:
        e_plus = _rows(engine, insert)
        e_minus = _rows(engine, delete)
        new_e = dict(engine.explicit)
        for name, e in engine.explicit.items():  # E⁻ := (E⁻ ∩ E) \ E⁺, E⁺ := E⁺ \ E
            em, ep = e_minus[name], e_plus[name]
            if len(em):
                em = em.select(e.has(em))
                if len(ep) and len(em):
                    em = em.select(~ep.has(em))
            if len(ep):
                ep = ep.select(~e.has(ep))
            e_minus[name], e_plus[name] = em, ep
            if len(em) or len(ep):
                ne = e.without(em) if len(em) else e
                ne = ne.append(ep) if len(ep) else ne
                new_e[name] = ne.compacted() if ne.worth_compacting() else ne
        stats.deleted = sum(len(x) for x in e_minus.values())
        stats.inserted = sum(len(x) for x in e_plus.values())
        why = unsupported(engine)
        if alg == "bf_eq" and not why:
            from .equality_bf import unsupported as bf_unsupported

            why = bf_unsupported(engine)
        run = alg
        if alg != "remat" and why:
            run = "remat"
            stats.note = (f"Remat≈: {'B/F≈' if alg == 'bf_eq' else 'DRed≈'} does not "
                          f"maintain programs with {why}")
        elif alg == "auto":
            run, stats.note = _choose(engine, e_minus, stats.deleted, new_e)
            run, stats.note = _lately(engine, run, stats.deleted, stats.note)
        if run == "bf_eq" and stats.deleted:
            from .equality_bf import OverBudget as BFOverBudget
            from .equality_bf import bf_eq

            n_i = sum(len(engine.store[n]) for n in engine.program.relations)
            last = engine.materialise_seconds
            try:
                bf_eq(engine, e_minus, new_e, stats,
                      max(int(BF_BUDGET * n_i), LARGE_E) if alg == "auto" else None,
                      _time_left(last, t0) if alg == "auto" and last
                      else None)
            except BFOverBudget as exc:
                run = give_up("B/F≈", exc)
            else:
                run = "b/f≈"
                if stats.inserted:  # mixed: Mat≈ continues with E⁺ under π′ (pitfall 8)
                    stats.derivations += engine.continue_insert(e_plus)
                    stats.note += "; then Mat≈ continued with the insertions"
        if run != "remat" and not stats.deleted and engine.can_continue():
            engine.explicit = new_e  # insertions only: Mat≈ continues (paper 001 §1)
            stats.derivations = engine.continue_insert(e_plus)
            stats.algorithm = "mat≈"
            stats.note = "insertions continued the rewritten materialisation (Mat≈)"
            run = "mat≈"
        if run == "dred_eq" and not stats.inserted:
            from . import equality_dred

            if equality_dred.ENABLED and equality_dred.applies(engine, e_minus, e_plus):
                stop = in_normal_form(e_minus, new_e, alg == "auto")
                run = "dred≈" if stop is None else give_up("DRed≈", stop)
        if run not in ("remat", "mat≈", "b/f≈", "dred≈"):
            try:
                last = engine.materialise_seconds
                timed = alg == "auto" and bool(last)
                dred_eq(engine, e_minus, e_plus, new_e, stats,
                        (BUDGET_TIMED if timed else BUDGET) if alg == "auto" else None,
                        _time_left(last, t0) if timed else None)
            except OverBudget as exc:
                run = give_up("DRed≈", exc)
                stats.overdeleted = 0
        if run == "remat":
            if getattr(engine, "is_twin", False):  # the device rematerialises, not the host
                raise twin.RematOnDevice(stats.note or "Remat≈: rematerialised by rewriting")
            engine.explicit = new_e
            m = engine.materialise()
            stats.derivations = m.derivations
            stats.algorithm = "remat≈"
            if not stats.note:
                stats.note = "Remat≈: rematerialised by rewriting"
    except BaseException:
        engine.state = saved
        engine.set_rho(saved_rho)
        raise
    if run not in ("remat", "mat≈"):  # DRed≈ or B/F≈ ran: the rules as Remat≈ leaves them
        engine.renormalise_rules()
        if alg == "auto" and stats.deleted:
            engine.eq_gave_up = None  # it ran to its end (_lately)
    engine._device_changed()
    stats.facts = sum(len(r) for n, r in engine.store.items() if not n.startswith("@"))
    stats.seconds = time.perf_counter() - t0
    return stats


# --- DRed≈ --------------------------------------------------------------------------------


def _normal_rules(engine: Any, rules: list[Rule], rho: Any) -> list[Rule]:
    """``rules`` with their domain constants normalised by ``rho`` (rules without
    constants returned as they are).  Per rule, its constants' ids and the normal forms
    met so far, by their representatives, are kept on the engine (:func:`_rule_facts`).
    A list of rules met before pays one gather of all their constants' representatives,
    and returns the rules of the last call again where those did not change (an update
    seldom merges or splits the class of a constant written in a rule)."""
    key = tuple(id(r) for r in rules)
    memo = engine.__dict__.setdefault("_normal_batches", {})
    batch = memo.get(key)
    if batch is None or any(a is not b for a, b in zip(batch.rules, rules)):
        if len(memo) > 16:
            memo.clear()
        facts = [_rule_facts(engine, r) for r in rules]
        ids = [f.ids for f in facts if f.ids is not None]
        batch = memo[key] = _Batch(tuple(rules), facts,
                                   np.concatenate(ids) if ids else np.zeros(0, np.int64))
    reps = batch.ids.copy()
    inside = batch.ids < len(rho)
    if inside.any():
        reps[inside] = engine.be.to_host(rho[engine.be.xp.asarray(batch.ids[inside])])
    if batch.reps is not None and np.array_equal(reps, batch.reps):
        return list(batch.out)
    out, at = [], 0
    for r, f in zip(rules, batch.facts):
        if f.ids is None:
            out.append(r)
            continue
        mine = reps[at:at + len(f.ids)]
        at += len(f.ids)
        out.append(_normal_rule(engine, r, f, mine))
    batch.reps, batch.out = reps, out
    return list(out)


@dataclasses.dataclass
class _Batch:
    """A list of rules met by :func:`_normal_rules`: their facts, their constants' ids
    (concatenated in rule order), and the representatives and rules of the last call."""

    rules: tuple[Rule, ...]
    facts: list[_RuleFacts]
    ids: np.ndarray
    reps: np.ndarray | None = None
    out: list[Rule] = dataclasses.field(default_factory=list)


def _normal_rule(engine: Any, r: Rule, facts: _RuleFacts, reps: np.ndarray) -> Rule:
    """``r`` with its domain constants (``facts.values``) replaced by the symbols of
    ``reps`` (their representatives' ids), from the rule's memo of normal forms."""
    key = reps.tobytes()
    hit = facts.normal.get(key)
    if hit is None:
        if len(facts.normal) > 64:
            facts.normal.clear()
        names = dict(zip(facts.values, engine.symbols.decode_many(reps)))
        hit = facts.normal[key] = map_constants(
            r, engine.equality.domain, lambda v, names=names: names.get(v, v))[0]
    return hit


@dataclasses.dataclass
class _RuleFacts:
    """What DRed≈ and B/F≈ read of a rule every update: its domain constants (values and
    dictionary ids; None: it has none), whether a merged head column may take an
    unmerged value (:func:`gpu_engine.equality.flows_in`), and its normal forms met so
    far, by the bytes of its constants' representatives; and whether each of its
    instances over a materialisation derives a fact of it (``closed``: no choice-domain
    head, no aggregate), so that an overdeletion needs no membership test of its heads."""

    rule: Rule
    values: list[Any]
    ids: np.ndarray | None
    flows: bool
    normal: dict[bytes, Rule]
    closed: bool


def _rule_facts(engine: Any, rule: Rule) -> _RuleFacts:
    memo = engine.__dict__.setdefault("_rule_facts", {})
    hit = memo.get(id(rule))
    if hit is not None and hit.rule is rule:
        return hit
    dom = engine.equality.domain
    values: list[Any] = []
    if _has_const(rule):
        map_constants(rule, dom, lambda v: values.append(v) or v)
        values = list(dict.fromkeys(values))
    ids = (np.array([engine.symbols.encode(str(v)) for v in values], dtype=np.int64)
           if values else None)
    rel = engine.program.relations.get(rule.head.relation)
    closed = (rel is not None and not rel.choice
              and all(isinstance(lit, (Atom, Negation, Compare)) for lit in rule.body))
    hit = _RuleFacts(rule, values, ids, flows_in(rule, {n: p for n, p in dom.items() if p}),
                     {}, closed)
    if len(memo) > 4096:
        memo.clear()
    memo[id(rule)] = hit
    return hit


def _has_const(rule: Rule) -> bool:
    lits = (rule.head, *rule.body)
    return any(isinstance(t, Const) for lit in lits for t in getattr(lit, "args", ())) or any(
        isinstance(lit, Compare) for lit in rule.body)


def _rows_of(be: Any, cols: tuple[Any, ...], arity: int) -> RowSet:
    return RowSet.from_columns(be, tuple(cols), arity)


def _outputs(be: Any, arity: int, outs: list[Any]) -> RowSet:
    """Distinct head rows of rule outputs."""
    cols = _output_cols(be, arity, outs)
    if cols is None:
        return RowSet.empty(be, arity)
    return RowSet.from_columns(be, cols, arity, n_rows=None if arity else 1)


def _output_cols(be: Any, arity: int, outs: list[Any]) -> tuple[Any, ...] | None:
    """Head rows of rule outputs as columns (duplicates kept; None when there are none,
    ``()`` for a nullary head)."""
    outs = [o for o in outs if o.n]
    if not outs:
        return None
    return tuple(be.xp.concatenate([o.cols[i][:o.n] for o in outs]) for i in range(arity))


def _backward(ev: Any, rule: Rule, facts: RowSet, keep: dict[str, RunSet], rows_of: Any,
              forward: bool = False) -> tuple[Any, int]:
    """Which ``facts`` (rows of the head relation) have an instance of ``rule`` over
    ``keep``: DRed's one-step rederivation by the planner shared with B/F≈
    (:func:`gpu_engine.backward_plan.one_step`: head bound, body atoms joined one at a
    time, smallest estimated fan-out first; with ``forward``, forwards from the distinct
    values that bind the first atom when the estimate says many facts share them); and
    the number of instances matched."""
    return one_step(ev, rule, facts, keep.__getitem__, rows_of, keep.__getitem__,
                    keep.__getitem__, forward=forward)


def _closure(engine: Any, added: list[dict[str, RunSet]], dom: dict[str, tuple[int, ...]]
             ) -> None:
    """Reflexive rows ``same(c, c)`` for the representatives in the domain columns of the
    rows the insertion added (the others' rows were kept or rederived backwards): the
    incremental form of ``EqualityEngine._reflexive_closure``."""
    xp = engine.be.xp
    vals = [run.cols[p] for dl in added for n, pos in dom.items() for run in dl[n].runs
            for p in pos]
    if not vals:
        return
    rho = engine.rho()
    c = xp.unique(xp.concatenate(vals))
    c = c[rho[c] == c]
    eq = engine.equality.relation
    d = RowSet.from_columns(engine.be, (c, c), 2)
    engine.store[eq] = engine.store[eq].append(engine.store[eq].new_rows(d))


def _components(engine: Any, reps: Any, classes: Classes, new_e: dict[str, RunSet],
                eq_rules: list[Rule], dom: dict[str, tuple[int, ...]],
                avoid: Any | None = None, anchors: Any | None = None
                ) -> tuple[Any, Any, Any, Any]:
    """For the classes of ``reps``: their members ``m`` (grouped by class, ``which``), a
    mask over them, whether equalities certain in I′ connect the member to its class's
    anchor (``anchors``, one member per class; the representative by default), and the
    members' component labels (equal labels: connected).  Certain: the explicit
    equalities of E′, and the heads of the equality rules (as written) over facts of E′
    (as written) that hold a member where the rule's head variables sit (other atoms
    read all of E′); with ``avoid`` (a mask over the ids) only over facts of E′ that hold
    no flagged id in a domain column.  E′ ⊆ I′ and an instance over E′ is one over I′,
    so these are equalities of I′."""
    anchors = reps if anchors is None else anchors
    be, xp = engine.be, engine.be.xp
    which, at = expand(be, classes.offsets[reps], classes.sizes[reps])
    m = classes.members[at]  # grouped by class (``which``)
    ms = xp.sort(m)
    flag = xp.zeros(len(classes.rho), dtype=bool)
    flag[m] = True

    def clean(rel: str, rows: RowSet) -> RowSet:
        """``rows`` without those holding a flagged id in a domain column."""
        if avoid is None or not len(rows):
            return rows
        bad = xp.zeros(len(rows), dtype=bool)
        for p in dom.get(rel, ()):
            bad |= avoid[rows.cols[p]]
        return rows.select(~bad) if bool(bad.any()) else rows

    src: list[Any] = []
    dst: list[Any] = []
    eq = engine.equality.relation
    e = new_e.get(eq)
    if e is not None and len(e):
        got = clean(eq, e.rows_with((0, 1), ms, flag=flag))
        src.append(got.cols[0])
        dst.append(got.cols[1])
    gone = None if avoid is None else xp.flatnonzero(avoid).astype(INDEX)
    for r in eq_rules:
        fp = engine._functional.get(id(r))
        if fp is not None and fp in dom.get(_atoms(r)[0].relation, ()):
            # same(y1, y2) :- R(x̄, y1), R(x̄, y2): a star per group x̄ connects what the
            # group's n² heads connect (EqualityEngine._star)
            a = _atoms(r)[0]
            e = new_e.get(a.relation)
            if e is not None and len(e):
                rows = engine._select_consts(a, clean(a.relation,
                                                      e.rows_with((fp,), ms, flag=flag)))
                if len(rows):
                    (s_, d_), _ = star_edges(be, a, fp, rows, rows)
                    src.append(s_)
                    dst.append(d_)
            continue
        head = {t.name for t in r.head.args if isinstance(t, Var)}
        sources: list[Any] = []
        for a in (lit for lit in r.body if isinstance(lit, Atom)):
            e = new_e.get(a.relation)
            if e is None or not len(e):
                break
            pos = tuple(p for p, t in enumerate(a.args) if isinstance(t, Var)
                        and t.name in head and p in dom.get(a.relation, ()))
            if pos:
                sources.append(RunSet.of(clean(a.relation, e.rows_with(pos, ms, flag=flag))))
            elif gone is not None and dom.get(a.relation):
                bad = e.rows_with(dom[a.relation], gone, flag=avoid)
                sources.append(e.without(bad) if len(bad) else e)
            else:
                sources.append(e)
        else:
            for o in engine.evaluator.evaluate(r, sources, {}):
                if o.n:
                    src.append(o.cols[0][:o.n])
                    dst.append(o.cols[1][:o.n])
    if not src:
        return which, m, m == anchors[which], m
    s_, d_ = xp.concatenate(src), xp.concatenate(dst)
    ls = xp.minimum(xp.searchsorted(ms, s_), len(ms) - 1)
    ld = xp.minimum(xp.searchsorted(ms, d_), len(ms) - 1)
    ok = (ms[ls] == s_) & (ms[ld] == d_)
    label = connected_components(be, ls[ok], ld[ok], len(ms))
    lab = label[xp.searchsorted(ms, m)]
    return which, m, lab == label[xp.searchsorted(ms, anchors)][which], lab


def _leavers(engine: Any, reps: Any, classes: Classes, new_e: dict[str, RunSet],
             eq_rules: list[Rule], dom: dict[str, tuple[int, ...]], leaver: Any,
             anchors: Any | None = None) -> tuple[Any, Any, Any]:
    """:func:`_components` for the classes of ``reps`` (connected to ``anchors``) over
    the facts of E′ that hold no leaver: neither one of ``leaver`` (a mask over the ids,
    left unchanged) nor a member this call finds unconnected to its anchor (a fixpoint:
    leavers only grow).  So the equalities that keep the rest of each class together are
    certain in the materialisation of E′ less every fact holding a leaver, where leavers
    occur in no domain column (module docstring, step 2)."""
    avoid = leaver if bool(leaver.any()) else None
    while True:
        which, m, keep, _ = _components(engine, reps, classes, new_e, eq_rules, dom, avoid,
                                        anchors)
        out = m[~keep]
        if not len(out) or (avoid is not None and bool(avoid[out].all())):
            return which, m, keep
        avoid = leaver.copy() if avoid is None or avoid is leaver else avoid
        avoid[out] = True


def _stayers(engine: Any, reps: Any, classes: Classes, new_e: dict[str, RunSet],
             eq_rules: list[Rule], dom: dict[str, tuple[int, ...]], leaver: Any,
             anchors: Any) -> tuple[Any, Any, Any, Any]:
    """:func:`_leavers` for the classes of ``reps`` anchored at ``anchors``, where a
    class whose anchor would stay alone (no other member connected to it) is anchored
    instead at the least member of the largest component of its other members, found
    over E′ less the facts holding a leaver or the old anchor (the representative
    leaves, and the members that stay together are renamed after that member: module
    docstring, step 2).  Returns ``which``, ``m``, ``keep`` and the anchors used."""
    be, xp = engine.be, engine.be.xp
    which, m, keep = _leavers(engine, reps, classes, new_e, eq_rules, dom, leaver, anchors)
    solo = be.bincount(which[keep], len(reps)) < 2
    if not bool(solo.any()):
        return which, m, keep, anchors
    at = xp.flatnonzero(solo)
    mask = leaver.copy()
    mask[anchors[at]] = True
    w, mm, _, lab = _components(engine, reps[at], classes, new_e, eq_rules, dom, mask,
                                anchors[at])
    other = (mm != anchors[at][w]) & ~mask[mm]  # the candidates: no leaver, not the anchor
    if not bool(other.any()):
        return which, m, keep, anchors
    w, mm, lab = w[other], mm[other], lab[other]
    # per class, its candidates by (component size descending, id): the first anchors it
    _, inv, cnt = xp.unique(w.astype(xp.int64) * (len(m) + 1) + lab, return_inverse=True,
                            return_counts=True)
    size = cnt[inv.ravel()]
    order = xp.argsort(mm, kind="stable")
    order = order[xp.argsort(-size[order], kind="stable")]
    order = order[xp.argsort(w[order], kind="stable")]
    ws = w[order]
    first = xp.concatenate([xp.ones(1, dtype=bool), ws[1:] != ws[:-1]])
    at = at[ws[first]]  # the classes re-anchored, and their new anchors
    anchors = anchors.copy()
    anchors[at] = mm[order][first]
    w2, m2, k2 = _leavers(engine, reps[at], classes, new_e, eq_rules, dom, mask, anchors[at])
    redo = xp.zeros(len(reps), dtype=bool)
    redo[at] = True
    rest = ~redo[which]
    return (xp.concatenate([which[rest], at[w2]]), xp.concatenate([m[rest], m2]),
            xp.concatenate([keep[rest], k2]), anchors)


def _od_blocks(engine: Any, rels: list[str], rules: list[Rule]
               ) -> tuple[list[tuple[str, ...]], dict[str, int], dict[int, list[int]],
                          dict[int, int]]:
    """DRed≈'s overdeletion order: block 0 holds the relations of the strata up to the
    equality's (and relations in no stratum) that reach the equality relation through the
    rules (:func:`_feeds`), where classes explode; block 1 the other relations of those
    strata (they read none of block 0's relations but block 0's own, and derive no
    equality: once block 0 is done, ρ′ is fixed); then one block per stratum above, in
    the engine's order.  With it, per block, the positions in ``rules`` of the rules
    that may prove its facts (:func:`_provers`: a head in the block, every body atom over
    a lower block and not over the equality relation), fewer body atoms first, and the
    facts each such rule has proved in earlier updates (by position; read to try the
    rules that proved most first).  Kept on the engine per list of strata and rules."""
    hit = engine.__dict__.get("_od_blocks")
    if (hit is not None and hit[0] is engine.strata and hit[1] is engine.rules
            and hit[2] == STRATA):
        return hit[3], hit[4], hit[5], hit[6]
    upper = [tuple(s.relations) for s in engine.strata
             if STRATA and s.index > engine.eq_stratum]
    above = {n for b in upper for n in b}
    feeds = _feeds(engine) if STRATA else set(rels)
    blocks = [tuple(n for n in rels if n not in above and n in feeds),
              tuple(n for n in rels if n not in above and n not in feeds), *upper]
    block_of = {n: k for k, b in enumerate(blocks) for n in b}
    eq = engine.equality.relation
    provers: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(rules):
        k = block_of.get(r.head.relation, 0)
        if k and all(isinstance(lit, Atom) and lit.relation != eq
                     and block_of.get(lit.relation, k) < k
                     for lit in r.body if not isinstance(lit, Compare)):
            provers[k].append(i)
    for ps in provers.values():
        ps.sort(key=lambda i: len(rules[i].body))
    proved: dict[int, int] = {}
    engine._od_blocks = (engine.strata, engine.rules, STRATA, blocks, block_of, dict(provers),
                         proved)
    return blocks, block_of, dict(provers), proved


def _feeds(engine: Any) -> set[str]:
    """The relations that reach the equality relation through the rules (it included):
    only their facts' members, not just their normal forms, decide which merges hold."""
    feeds = {engine.equality.relation}
    grew = True
    while grew:
        grew = False
        for r in engine.rules:
            if r.head.relation in feeds:
                for a in _atoms(r):
                    if a.relation not in feeds:
                        feeds.add(a.relation)
                        grew = True
    return feeds


class _Kept:
    """I \\ D by relation (``kept[n]``), each built when first read and again once D
    changed."""

    def __init__(self, store: dict[str, RunSet], D: dict[str, RowSet]) -> None:
        self.store, self.D = store, D
        self.of: dict[str, tuple[RowSet, RunSet]] = {}  # relation -> (D[n] read, I \ D)

    def __getitem__(self, n: str) -> RunSet:
        d = self.D[n]
        hit = self.of.get(n)
        if hit is None or hit[0] is not d:
            hit = self.of[n] = (d, self.store[n].without(d) if len(d) else self.store[n])
        return hit[1]


def _provers(at: list[int], od_norm: list[Rule], new_norm: list[Rule], facts: dict,
             proved: dict[int, int]) -> dict[str, list[tuple[int, Rule]]]:
    """The rules that prove a fact of a stratum block survives the update, by head
    relation: those at positions ``at`` (:func:`_od_blocks`: body over lower blocks, final
    once the block is reached) whose heads are normal when derived and whose normal form
    is the same under ρ′ as under ρ, with their positions, in their normal form under ρ;
    those that ``proved`` most facts before first (a fact needs one proof)."""
    out: dict[str, list[tuple[int, Rule]]] = {}
    for i in sorted(at, key=lambda i: -proved.get(i, 0)):  # stable: then fewer atoms
        old, new = od_norm[i], new_norm[i]
        if facts[id(old)].flows or (old is not new and old != new):
            continue
        out.setdefault(old.head.relation, []).append((i, old))
    return out


def dred_eq(engine: Any, e_minus: dict[str, RowSet], e_plus: dict[str, RowSet],
            new_e: dict[str, RunSet], stats: UpdateStats, budget: float | None,
            seconds: float | None = None) -> None:
    """DRed≈ (module docstring, steps 1–4); installs the new materialisation and ρ.
    Raises :class:`OverBudget` (nothing changed) when ``budget`` is exceeded, or when
    overdeletion runs longer than ``seconds`` (checked per round).  Once overdeletion
    ends, D is within the size budget and DRed≈ runs to its end: rederivation and
    insertion cost what D touches, and giving up there would pay a whole Remat≈ on top
    of the work done (and leave the next update's join indexes and occurrence counts to
    be built again: a stream of class-splitting deletions rematerialised every time)."""
    deadline = None if seconds is None else time.perf_counter() + seconds
    be, xp = engine.be, engine.be.xp
    ev = engine.evaluator
    eq = engine.equality
    dom = {n: p for n, p in eq.domain.items() if p}
    rels = list(engine.program.relations)
    arity = {n: r.arity for n, r in engine.program.relations.items()}
    rho = engine.rho()
    old_store = {n: engine.store[n] for n in rels}
    n_i = sum(len(old_store[n]) for n in rels)
    stats.algorithm = "dred≈"
    rules = list(engine.rules)
    od_rules = list(rules)
    if eq.reflexive and not engine.reflexive_as_rules:  # closure rows: deleted through ≈4
        if "_reflexive_rules" not in engine.__dict__:  # the same objects every update
            engine._reflexive_rules = reflexive_rules(eq, arity)
        od_rules += engine._reflexive_rules
    # --- 1. overdeletion in normal form, with explosions ----------------------------------
    od_norm = _normal_rules(engine, od_rules, rho)
    facts = {id(n): _rule_facts(engine, r) for r, n in zip(od_rules, od_norm)}
    classes = Classes(rho, *engine.class_index())
    sizes = classes.sizes
    exploded = xp.zeros(len(rho), dtype=bool)
    whole = xp.zeros(len(rho), dtype=bool)  # classes that equalities over E′ keep whole
    eq_heads = {id(n) for r, n in zip(od_rules, od_norm) if _merges(eq.relation, r)}
    eq_rules = [r for r in od_rules if _merges(eq.relation, r)]
    D: dict[str, RowSet] = {n: RowSet.empty(be, arity[n]) for n in rels}
    delta: dict[str, list[RowSet]] = {n: [] for n in rels}

    lazy: dict[str, Any] = {}  # ρ′ and the rules under it, once the explosions are over

    # a class whose lost merge certain equalities still justify for all but some members
    # (the leavers) keeps the rest: only the leavers stand for themselves (step 2);
    # not when a rule normalises an unmerged value into a merged column (a leaver could
    # come back there), a leaver is a rule constant, or the representative stays alone
    partial, ids = _split_setting(engine, od_rules)
    const = xp.zeros(len(rho), dtype=bool)
    ids = xp.asarray(ids)
    const[ids[ids < len(rho)]] = True
    split = xp.zeros(len(rho), dtype=bool)  # classes that lost leavers, by representative
    leaver = xp.zeros(len(rho), dtype=bool)  # members that left them
    stale = [False]  # leavers joined after some class was found whole or split
    # per representative, the member its class's stayers are named after in ρ′ (built
    # when a representative first leaves its class; itself otherwise)
    anchor: list[Any] = [None]

    def explode(reps: Any, recheck: bool = False) -> None:
        """Classes of ``reps`` lost a merge: found whole, split (their leavers' explicit
        facts join ΔD) or exploded (all their rows join ΔD); ``recheck``: classes found
        whole or split before, judged again over E′ less the facts of later leavers."""
        if not len(reps):
            return
        reps = xp.unique(reps)
        if recheck:
            reps = reps[~exploded[reps]]
        else:
            reps = reps[(sizes[reps] > 1) & ~exploded[reps] & ~whole[reps] & ~split[reps]]
        if not len(reps):
            return
        before = bool(whole.any() or split.any())
        was = reps if anchor[0] is None else anchor[0][reps]
        if partial:  # a representative left alone hands its class to another member
            which, m, keep, anc = _stayers(engine, reps, classes, new_e, eq_rules, dom,
                                           leaver, was)
        else:
            which, m, keep = _leavers(engine, reps, classes, new_e, eq_rules, dom, leaver)
            anc = was
        gone = ~keep
        lost = be.bincount(which[gone], len(reps)) > 0
        # explode when a leaver is a rule constant, or no member stays with the anchor
        # (the leavers' facts are about all of the class's rows then)
        alone = be.bincount(which[keep], len(reps)) < 2
        bad = lost & ((be.bincount(which[gone & const[m]], len(reps)) > 0) | alone
                      if partial else True)
        whole[reps] = ~lost
        split[reps[lost & ~bad]] = True
        moved = lost & ~bad & (anc != was)
        if bool(moved.any()):  # the stayers are renamed after their new anchor (step 2)
            assert not lazy, "a class renamed after ρ′ was fixed"
            if anchor[0] is None:
                anchor[0] = xp.arange(len(rho), dtype=INDEX)
            anchor[0][reps[moved]] = anc[moved]
        new = m[gone & ~bad[which] & ~leaver[m]]
        if len(new):
            assert not lazy, "a class split after ρ′ was fixed"
            stale[0] = stale[0] or before
            leaver[new] = True
            new = xp.sort(new)
            flag = xp.zeros(len(rho), dtype=bool)
            flag[new] = True
            for n, pos in dom.items():  # the normal forms of the leavers' explicit facts
                e = engine.explicit.get(n)
                got = e.rows_with(pos, new, flag=flag) if e is not None and len(e) else ()
                if len(got):
                    delta[n].append(_rows_of(be, gather(got.cols, pos, rho), arity[n]))
                    pending[0] += len(got)
        reps = reps[bad]
        if len(reps):
            assert not lazy, "a class exploded after ρ′ was fixed"
            exploded[reps] = True
            blown[0] += int(sizes[reps].sum())
            flag = xp.zeros(len(rho), dtype=bool)  # read along later columns without index
            flag[reps] = True
            for n, pos in dom.items():  # the rows holding them, through column indexes
                got = old_store[n].rows_with(pos, reps, flag=flag)
                if len(got):
                    delta[n].append(got)
                    pending[0] += len(got)
        check(pending[0])

    pending = [0]  # rows an explosion put in ΔD (checked against the budget at once)
    blown = [0]  # members of the exploded classes (past SPLIT_MEMBERS: BUDGET_SPLIT)

    def check(extra: int) -> None:
        if deadline is not None and time.perf_counter() > deadline:
            raise OverBudget(f"it ran longer than {seconds:.2f} s (its time budget)")
        if budget is None:
            return
        b = min(budget, BUDGET_SPLIT) if blown[0] > SPLIT_MEMBERS else budget
        if overdeleted + extra > max(b * n_i, LARGE_E):
            raise OverBudget(f"it overdeleted {overdeleted + extra:,} of {n_i:,} facts "
                             f"(budget {b:.0%}"
                             f"{' with classes exploded' if b < budget else ''})")

    overdeleted = 0
    for n in rels:
        em = e_minus[n]
        if not len(em):
            continue
        delta[n].append(_rows_of(be, gather(em.cols, dom.get(n, ()), rho), arity[n]))
        if n == eq.relation:  # a deleted explicit equality a ≈ b, a ≠ b
            a, b = em.cols
            explode(rho[a[a != b]])
    views = {n: View.of(old_store[n]) for n in rels}
    version = views.__getitem__
    blocks, block_of, at, proved = _od_blocks(engine, rels, rules)
    keep = _Kept(old_store, D)

    def after_explosions() -> dict[str, Any]:
        if not lazy:
            lazy["x_reps"] = x_reps = xp.flatnonzero(exploded).astype(INDEX)
            lazy["x_members"] = x_members = classes.members[
                expand(be, classes.offsets[x_reps], sizes[x_reps])[1]]
            lazy["s_reps"] = xp.flatnonzero(split & ~exploded).astype(INDEX)
            lv = xp.flatnonzero(leaver).astype(INDEX) if len(lazy["s_reps"]) else x_reps[:0]
            lazy["leavers"] = lv = lv[~exploded[rho[lv]]]
            rho2 = rho
            if len(x_members) or len(lv):
                rho2 = rho.copy()
                rho2[x_members] = x_members
                rho2[lv] = lv
            lazy["rename"] = None
            if anchor[0] is not None:  # classes whose representative left: the stayers
                old = lazy["s_reps"]  # take the anchor's name, and so do their rows
                old = old[anchor[0][old] != old]
                if len(old):
                    st = classes.members[expand(be, classes.offsets[old], sizes[old])[1]]
                    st = st[~leaver[st]]
                    rho2[st] = anchor[0][rho[st]]
                    ren = rho2.copy()
                    ren[old] = anchor[0][old]
                    lazy["rename"] = (old, ren)
            lazy["rho2"] = rho2
            lazy["new_norm"] = _normal_rules(engine, rules, rho2)
            lazy["provers"] = {}
        return lazy

    def written(n: str, d: RowSet) -> Any:
        """Which rows of ``d`` (normal under ρ and ρ′) are the normal form of a fact of E′
        that holds no leaver: they hold in I′ as they are."""
        e, pos = new_e[n], dom.get(n, ())
        if not pos:
            return e.has(d)
        cand = members_in(be, e, d, pos, classes)
        if cand is None or not len(cand):
            return xp.zeros(len(d), dtype=bool)
        if len(after_explosions()["leavers"]):
            out = xp.zeros(len(cand), dtype=bool)
            for p in pos:
                out |= leaver[cand.cols[p]]
            cand = cand.select(~out)
        return _rows_of(be, gather(cand.cols, pos, rho), arity[n]).contains(d.cols)

    def survivors(k: int, dd: dict[str, RowSet]) -> dict[str, RowSet]:
        """ΔD of block ``k`` (past block 0: ρ′ is fixed) less the facts that are the
        normal form of a fact of E′ holding no leaver, or have a one-step derivation over
        the lower blocks' I \\ D (final: no explosion happens past block 0).  Neither
        block reaches the equality relation, so a fact's normal form is all that counts."""
        lz = after_explosions()
        provers = lz["provers"].get(k)
        if provers is None:
            provers = lz["provers"][k] = _provers(at.get(k, ()), od_norm, lz["new_norm"],
                                                  facts, proved)
        out = {}
        for n, d in dd.items():
            ps = provers.get(n, ())
            if ps or len(new_e[n]):
                pos = dom.get(n, ())
                free = xp.ones(len(d), dtype=bool)
                for p in pos:  # rows holding an exploded class are renormalised: they go
                    free &= ~exploded[d.cols[p]]
                rest = xp.flatnonzero(free)
                held = None
                if len(new_e[n]) and len(rest):
                    hit = written(n, d.take(rest))
                    if bool(hit.any()):
                        held = xp.zeros(len(d), dtype=bool)
                        held[rest[hit]] = True
                        rest = rest[~hit]
                for i, rule in ps:
                    if not len(rest):
                        break
                    hit, matched = _backward(ev, rule, d.take(rest), keep,
                                             old_store.__getitem__, forward=True)
                    stats.backward += matched
                    if bool(hit.any()):
                        proved[i] = proved.get(i, 0) + int(hit.sum())
                        if held is None:
                            held = xp.zeros(len(d), dtype=bool)
                        held[rest[hit]] = True
                        rest = rest[~hit]
                if held is not None:
                    kept[0] += int(held.sum())
                    d = d.select(~held)
            if len(d):
                out[n] = d
        return out

    kept = [0]  # facts a one-step check kept out of D
    while True:
        pend = [block_of[n] for n in rels if delta[n]]
        if stale[0] and (not pend or min(pend)):  # block 0 at its fixpoint: classes
            stale[0] = False  # found whole or split before later leavers, judged again
            explode(xp.flatnonzero((whole | split) & ~exploded), recheck=True)
            continue
        if not pend:
            break
        k = min(pend)  # the lowest stratum block first (paper 000 Algorithm 1's order)
        dd: dict[str, RowSet] = {}
        for n in blocks[k]:
            if delta[n]:
                d = union_rows(be, arity[n], delta[n])
                delta[n] = []
                d = d.select(~D[n].contains(d.cols)) if len(D[n]) and len(d) else d
                if len(d):
                    dd[n] = d
        if k and dd:
            dd = survivors(k, dd)
        if not dd:
            continue
        for n, d in dd.items():
            D[n] = D[n].merge(d) if len(D[n]) else d
            overdeleted += len(d)
        pending[0] = 0
        check(0)
        ddr = {n: RunSet.of(d) for n, d in dd.items()}
        # Π⟦I : ΔD⟧ of the rules reading ΔD (found through the relations they read; a
        # one-atom rule is a filter of ΔD: gpu_engine.affected)
        for rule in touch.seeing(od_norm, ddr, None):
            outs = affected(ev, rule, version, version, ddr)
            if not outs:
                continue
            stats.derivations += sum(o.count for o in outs)
            hn = rule.head.relation
            h = _output_cols(be, arity[hn], outs)
            if h is None:
                continue
            if facts[id(rule)].flows:  # unmerged values in merged columns
                h = gather(h, dom[hn], rho)
            closed = facts[id(rule)].closed  # I is a model of the rule: no test against I
            if not arity[hn]:
                if not closed and not len(old_store[hn]):
                    continue
                h = _outputs(be, 0, outs)
            elif not closed:
                h = tuple(c[old_store[hn].contains(h, len(h[0]))] for c in h)
                if not len(h[0]):
                    continue
            delta[hn].append(h)
            if id(rule) in eq_heads:
                assert block_of[hn] == 0, "an equality derived above its block"
                explode(h[0])
    stats.overdeleted = overdeleted
    # --- 2. ρ' and I \ D -------------------------------------------------------------------
    # the members of exploded classes become their own representatives
    lz = after_explosions()
    x_reps, x_members, rho2 = lz["x_reps"], lz["x_members"], lz["rho2"]
    s_reps, leavers = lz["s_reps"], lz["leavers"]
    gone = None
    if len(leavers):  # the leavers of split classes (not exploded since), as a mask
        gone = xp.zeros(len(rho), dtype=bool)
        gone[leavers] = True
    keep = {n: keep[n] for n in rels}
    Dn = D  # D named as in ρ′ (the same but for renamed classes)
    if lz["rename"] is not None:  # the rows of I \ D and D that hold a representative
        old, ren = lz["rename"]  # that left stand for the stayers: they take its name
        flag = xp.zeros(len(rho), dtype=bool)
        flag[old] = True
        Dn = dict(D)
        for n, pos in dom.items():
            got = keep[n].rows_with(pos, old, flag=flag)
            if len(got):  # the anchors occur in no row of I (members, not representatives)
                keep[n] = keep[n].without(got).append(
                    _rows_of(be, gather(got.cols, pos, ren), arity[n]))
            if len(D[n]):
                hit = xp.zeros(len(D[n]), dtype=bool)
                for p in pos:
                    hit |= flag[D[n].cols[p]]
                if bool(hit.any()):
                    Dn[n] = D[n].select(~hit).merge(
                        _rows_of(be, gather(D[n].select(hit).cols, pos, ren), arity[n]))
    # --- 3. rederivation --------------------------------------------------------------------
    parts: dict[str, list[RowSet]] = {n: [] for n in rels}
    for n in rels:  # (a) explicit facts whose normal form is doubtful, and E⁺
        pos = dom.get(n, ())
        e = new_e[n]
        if len(e) and len(D[n]):
            # F^π ∩ E′ for F ∈ D (a written fact with a member of an exploded class has its
            # normal form in D: the explosion deleted every row holding the class)
            if not pos:
                cand = D[n].select(e.has(D[n]))
            else:
                cand = members_in(be, e, D[n], pos, classes)
            if cand is not None and len(cand):
                parts[n].append(_rows_of(be, gather(cand.cols, pos, rho2), arity[n]))
        if len(e_plus[n]):
            parts[n].append(_rows_of(be, gather(e_plus[n].cols, pos, rho2), arity[n]))
        if len(leavers) and pos and len(e):  # a leaver's facts: a normal form of the
            got = e.rows_with(pos, leavers, flag=gone)  # split class may have been kept
            if len(got):
                parts[n].append(_rows_of(be, gather(got.cols, pos, rho2), arity[n]))
    new_norm = lz["new_norm"]
    old_norm = od_norm[:len(rules)]
    todo = dict(Dn)  # the facts of D no rule has rederived yet: (b) checks only these
    # rules with fewer body atoms first: their look-ups are cheaper, and what they
    # rederive is not checked again by the joins
    for rule, old in sorted(zip(new_norm, old_norm), key=lambda ro: len(ro[0].body)):
        h = rule.head.relation
        flows = facts[id(old)].flows
        if rule != old or (flows and len(D[h])):
            # (c) constants normalised differently: every instance over I \ D; a rule
            # whose merged head column is bound from an unmerged one cannot be evaluated
            # backwards from normal heads, so it runs forwards too (heads through ρ')
            atoms = _atoms(rule)
            if atoms:
                outs = ev.evaluate(rule, [keep[a.relation] for a in atoms], {})
                got = _outputs(be, arity[h], outs)
                if flows and len(got):
                    got = _rows_of(be, gather(got.cols, dom[h], rho2), arity[h])
                parts[h].append(got)
            if flows:
                continue
        if len(todo[h]):  # (b) one-step rederivation of D's facts
            hit, matched = _backward(ev, rule, todo[h], keep, old_store.__getitem__)
            stats.backward += matched
            if bool(hit.any()):
                parts[h].append(todo[h].select(hit))
                todo[h] = todo[h].select(~hit)
    counts = None  # occurrences in I \ D (equality_occurrences), when computed
    if len(od_rules) > len(rules) and len(D[eq.relation]):  # (b) for the ≈4 closure rows
        cand = Dn[eq.relation]
        # an exploded class's representative is in no row of I \ D (the explosion took
        # them all): its row goes, and the closure of the insertion re-adds the rows of
        # the members that come back
        cand = cand.select((cand.cols[0] == cand.cols[1]) & ~exploded[cand.cols[0]])
        if len(cand):  # c≈c holds on when c occurs in a domain column of I \ D
            counts = occ.add_rows(engine, occ.occurrences(engine, old_store),
                                  [{n: D[n] for n in occ.counted(engine)}], -1)
            if lz["rename"] is not None:  # a renamed class's occurrences: its anchor's
                old, ren = lz["rename"]
                counts[ren[old]] = counts[old]
                counts[old] = 0
            parts[eq.relation].append(cand.select(counts[cand.cols[0]] > 0))
    # --- 4. insertion: Mat≈ continued from I \ D ----------------------------------------------
    engine.set_rho(rho2)
    if (len(x_reps) or len(s_reps)) and len(engine.rho()) == len(rho2):
        # ρ′'s class index from ρ's (built afresh only if the insertion merges), split in
        # place: ρ's index is read no more (the engine's cache of it is replaced at once;
        # a failed update restores ρ, whose index is then built again): no copy of two
        # arrays the size of the dictionary per update
        index = (classes.members, classes.offsets, sizes)
        if len(x_reps):
            index = split_classes(be, index, x_reps, in_place=True)
        if len(s_reps):
            index = shrink_classes(be, index, s_reps, leaver, in_place=True,
                                   anchors=None if anchor[0] is None else anchor[0][s_reps])
        engine.keep_class_index(engine.rho(), index)
    store: dict[str, RunSet] = {}
    start: dict[str, RunSet] = {}
    nothing = {n: RunSet.empty(be, arity[n]) for n in rels}  # immutable: shared by rounds
    for n in rels:
        d = union_rows(be, arity[n], parts[n])
        d = keep[n].new_rows(d) if len(d) else d
        store[n] = keep[n].append(d) if len(d) else keep[n]
        start[n] = RunSet.of(d) if len(d) else nothing[n]
    engine.store = store
    stratum = SimpleNamespace(relations=rels)
    rstats: dict[int, RuleStats] = defaultdict(lambda: RuleStats("dred≈", Location()))
    engine.evaluator.compact = engine._compact
    engine._compact_floor = {}
    for k in ("merge_rounds", "merged_constants"):  # an engine opened from a store
        engine.eq_stats.setdefault(k, 0)
    if not engine.eq_stats["merge_rounds"] and bool(
            (rho2 != xp.arange(len(rho2), dtype=INDEX)).any()):
        engine.eq_stats["merge_rounds"] = 1  # ρ' is not the identity: _absorb normalises
    removed: list[tuple[Any, ...]] = []  # rows of I \ D and of Δs the merges rewrite
    engine.merge_removed = removed if counts is not None else None
    # A deletion without insertions derives only facts of D again: I is closed under the
    # rules, and an instance over rows of I′ (under ρ′, whose classes only split ρ's, or
    # re-merge pieces of them) has an image under ρ that is an instance over I, so its
    # head is in I; a head holding a member of an exploded class has its image holding
    # the representative, a row the explosion put in D.  The rules of a relation with no
    # fact in D derive nothing new, and the rounds skip them.  Not with leavers: a
    # leaver's row is new while its image (the split class's) may have stayed out of D.
    settled = frozenset() if any(len(e_plus[n]) for n in rels) or len(leavers) else (
        frozenset(n for n in rels if not len(D[n])))
    try:
        prev, dl, cur, full = engine._merge(stratum, dict(keep), start, rules, new_norm,
                                           rstats)
        added = [dl]
        while any(len(dl[n]) for n in rels) or full:
            outputs: dict[str, list[Any]] = {n: [] for n in rels}
            versions = {Role.DELTA: dl, Role.OLD: prev, Role.NEW: engine.store}
            changed = {n for n in rels if len(dl[n])}
            pick = cur
            if touch.SHORTCUTS:  # the rules reading Δ (through touch's index), and `full`
                pick = touch.seeing(cur, {n: dl[n] for n in changed}, None)
                if full:
                    seen = {id(r) for r in pick}
                    pick = [r for r in cur if id(r) in full or id(r) in seen]
            for rule in pick:
                if rule.head.relation in settled:
                    continue
                atoms = _atoms(rule)
                fp = engine._functional.get(id(rule))
                if fp is not None:  # Mat≈'s star per group (gpu_engine.equality)
                    if id(rule) in full or atoms[0].relation in changed:
                        engine._star(rule, fp, dl, full, outputs, rstats)
                    continue
                if id(rule) in full:
                    engine._fire(rule, [prev[a.relation] for a in atoms], outputs, rstats)
                for p, roles in delta_variants(atoms, changed.__contains__):
                    sources = [versions[role][a.relation] for a, role in zip(atoms, roles)]
                    engine._fire(rule, sources, outputs, rstats, dl[atoms[p].relation])
            prev = {n: engine.store[n] for n in rels}
            dl = {n: RunSet.of(engine._absorb(n, outputs[n], recursive=True)) if outputs[n]
                  else nothing[n] for n in rels}
            prev, dl, cur, full = engine._merge(stratum, prev, dl, rules, cur, rstats)
            added.append(dl)
    finally:
        engine.evaluator.compact = None
        engine.merge_removed = None
    stats.derivations += sum(r.derivations for r in rstats.values())
    if eq.reflexive and not engine.reflexive_as_rules:
        _closure(engine, added, dom)
    final = {n: engine.store[n].compacted() if engine.store[n].worth_compacting()
             else engine.store[n] for n in rels}
    engine.store = final
    if counts is not None:  # I′ is I \ D, plus the rows the insertion added, less the
        # rows its merges rewrote (their rewritten forms are among the rows added)
        counts = occ.add_rows(engine, counts, added, 1)
        occ.remember(engine, final, occ.add_values(engine, counts,
                                                   [c for cols in removed for c in cols], -1))
    rederived = 0
    rho_f = engine.rho()
    for n in rels:
        if len(Dn[n]):
            d, pos = Dn[n], dom.get(n, ())
            if pos and rho_f is not rho:  # D's normal forms under the final ρ
                cols = gather(d.cols, pos, rho_f)
                if any(bool((cols[p] != d.cols[p]).any()) for p in pos):
                    d = _rows_of(be, cols, arity[n])
            rederived += int(final[n].has(d).sum())
    stats.rederived = rederived
    stats.added = max(0, sum(len(final[n]) for n in rels) - (n_i - overdeleted) - rederived)
    engine.explicit = new_e
    engine.counters = {}
    engine.module_state = {}
    engine.materialised = True
    nx = len(x_reps)
    done = []
    if nx:
        done.append(f"exploded {nx:,} classes ({len(x_members):,} members)")
    if len(s_reps):
        moved = 0 if lz["rename"] is None else len(lz["rename"][0])
        done.append(f"{len(s_reps):,} classes split off {len(leavers):,} members (the rest "
                    "held by certain equalities" + (
                        f"; {moved:,} renamed after a member, their representative gone)"
                        if moved else ")"))
    stats.note = (f"DRed≈: {'; '.join(done) if done else 'no class split'}; "
                  f"{stats.backward:,} instances checked backwards")
    if kept[0]:
        stats.note += (f"; {kept[0]:,} facts kept out of D (a one-step derivation over "
                       "the strata below)")
