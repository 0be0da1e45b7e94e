"""DRed≈ for deletions that reach no equality: DRed in normal form (paper 001 §3).

When no deleted fact can take a derivation from an equality (no equality is deleted and
no deleted row matches a body atom of a rule from which the equality relation is
reachable: :func:`gpu_engine.equality_maintenance._may_split`), no class splits, ρ stays
as it is, and the relations that feed the equality relation do not change.  The update is
then plain DRed (paper 000 Algorithm 1, :func:`gpu_engine.forward_algorithms.dred`) over
the rewritten relations with

* the rules normalised by ρ (every stratum: the facts of all strata are normal, including
  those evaluated before the merges as written),
* E⁻ in normal form: π(E⁻) less the facts π(E′) still holds (a written fact with another
  member of the same classes keeps its normal form explicit),
* "F ∈ E \\ E⁻" of the rederivation read as F ∈ π(E′), tested without normalising E′
  (:class:`gpu_engine.equality_explicit.ExplicitImage`),

so a small deletion runs through the plain engine's per-stratum passes and their
shortcuts (rules found through the relations they read, one-atom rules as filters,
strata without rules), and costs what it touches rather than the DRed≈ loop over every
rule.  The reflexive rows ``c≈c`` of a closure (axiom ≈4 computed at the end of Mat≈)
are then deleted for the constants that left every domain column, unless the row is
explicit or an equality rule still derives it in one step (DRed's rederivation of the
closure rows, as DRed≈ does through the ≈4 rules).

Insertions, class splits, and strata whose merged head columns are bound from unmerged
columns (their heads are normalised when derived) stay with DRed≈ proper.
"""

from __future__ import annotations

import os
from typing import Any

from gpu_engine.kernels.backend import INDEX

from . import equality_occurrences as occ
from . import forward_algorithms as F
from .affected import mark_rederivable
from .equality_explicit import Classes, ExplicitImage, gather
from .equality_maintenance import OverBudget, _backward, _may_split, _normal_rules
from .ir import Rule
from .rowset import RowSet
from .rule_eval import keep_counts
from .stats import UpdateStats
from .stratify import Stratum
from .update_state import UpdateState

# off with GPU_ENGINE_EQ_NORMAL_DRED=0: every such deletion runs DRed≈ proper (the tests
# compare both)
ENABLED = os.environ.get("GPU_ENGINE_EQ_NORMAL_DRED", "1") != "0"


def applies(engine: Any, e_minus: dict[str, RowSet], e_plus: dict[str, RowSet]) -> bool:
    """Whether the update is a deletion that reaches no equality, in a program whose
    heads are normal when derived (module docstring)."""
    if any(len(x) for x in e_plus.values()) or not any(len(x) for x in e_minus.values()):
        return False
    return structural(engine) and not _may_split(engine, e_minus)


def structural(engine: Any) -> bool:
    """Whether the program's heads are normal when derived (no merged head column bound
    from an unmerged one) and it has no aggregate: what DRed in normal form needs of the
    program, whatever the deletion."""
    return not engine._flow and not any(s.aggregate is not None or s.lookups
                                        for s in engine.strata)


def normal_strata(engine: Any, rho: Any) -> list[Stratum]:
    """The engine's strata with their written rules normalised by ``rho`` (kept on the
    engine per ρ; a normal rule equal to one built before is that object again, so what
    maintenance caches per rule stays valid across updates)."""
    hit = engine.__dict__.get("_dred_normal")
    if hit is not None and hit[0] is rho:
        return hit[1]
    memo: dict[Rule, Rule] = {} if hit is None else hit[2]
    out = []
    for s in engine.strata:
        rules, rec, nonrec = engine._original[s.index]
        every = list({id(r): r for r in (*rules, *rec, *nonrec)}.values())
        new = {id(r): memo.setdefault(n, n)
               for r, n in zip(every, _normal_rules(engine, every, rho))}
        out.append(Stratum(s.index, s.relations, [new[id(r)] for r in rules],
                           [new[id(r)] for r in rec], [new[id(r)] for r in nonrec],
                           s.subsumptions, s.aggregate, s.lookups))
    engine._dred_normal = (rho, out, memo)
    return out


def dred_normal(engine: Any, e_minus: dict[str, RowSet], new_e: dict[str, Any],
                stats: UpdateStats, limit: int | None = None) -> None:
    """DRed in normal form for E⁻ (E′ = ``new_e``); installs I′ (ρ is unchanged).  Raises
    :class:`~gpu_engine.equality_maintenance.OverBudget` (nothing installed) once more
    than ``limit`` facts are overdeleted."""
    be = engine.be
    eq = engine.equality
    rels = list(engine.program.relations)
    arity = {n: r.arity for n, r in engine.program.relations.items()}
    dom = {n: tuple(p) for n, p in eq.domain.items() if p}
    rho = engine.rho()
    members, offsets, sizes = engine.class_index()
    cl = Classes(rho, members, offsets, sizes)
    explicit: dict[str, Any] = {}
    em_n: dict[str, RowSet] = {}
    for n in rels:
        pos = dom.get(n, ())
        explicit[n] = ExplicitImage(be, new_e[n], pos, cl)
        em = e_minus[n]
        if len(em):
            em = RowSet.from_columns(be, gather(em.cols, pos, rho), arity[n])
            em = em.select(~explicit[n].has(em))  # π(E⁻) \ π(E′)
        em_n[n] = em
    stats.algorithm = "dred≈"
    state = UpdateState(be, engine.store, {}, 0)
    empty = {n: RowSet.empty(be, arity[n]) for n in rels}
    u = F.Update(engine.evaluator, state, normal_strata(engine, rho), explicit, em_n, empty,
                 arity, stats, overdelete_limit=limit, planned_backward=True)
    engine.evaluator.compact = keep_counts(be)
    try:
        F.dred(u)
    except F.TooLarge as exc:
        raise OverBudget(str(exc)) from None
    finally:
        engine.evaluator.compact = None
    removed = u.removed()
    stats.rederived = sum(len(s.A_old) for s in state.rel.values())  # |D ∩ A|
    before = dict(engine.store)
    store, _ = state.commit()
    done = None
    if eq.reflexive and not engine.reflexive_as_rules:
        done = _closure_rows(engine, before, store, removed, dom, cl, explicit[eq.relation],
                             stats)
    engine.store = {n: r.compacted() if r.worth_compacting() else r for n, r in store.items()}
    engine.explicit = new_e
    engine.counters = {}
    engine.module_state = {}
    engine.materialised = True
    if done is not None:  # the occurrence counts follow the installed I′ (nothing fails now)
        counts, vals, k = done
        counts[vals] -= k
        occ.remember(engine, engine.store, counts)
    stats.note = ("DRed≈ in normal form (no deleted fact reaches an equality: no class "
                  f"can split); {stats.backward:,} instances checked backwards")


def _closure_rows(engine: Any, before: dict[str, Any], store: dict[str, Any],
                  removed: dict[str, Any], dom: dict[str, tuple[int, ...]], cl: Classes,
                  explicit: ExplicitImage, stats: UpdateStats
                  ) -> tuple[Any, Any, Any] | None:
    """Delete ``c≈c`` from ``store`` for the constants of the removed facts that occur in
    no domain column of I′ any more, unless the row is explicit or an equality rule
    derives it in one step over I′ (a class of two or more members keeps its row: it did
    not split).  Returns the occurrence counts of I (``before``) with the removed values
    and their numbers, for the caller to apply once I′ is installed."""
    be, xp = engine.be, engine.be.xp
    eq = engine.equality.relation
    others = occ.counted(engine)
    vals = [run.cols[p] for n, rs in removed.items() if n in others
            for run in rs.runs for p in others[n]]
    if not vals:  # nothing to delete; counts kept on the engine stay valid for I′
        hit = occ.kept(engine, before)
        return None if hit is None else (hit, xp.zeros(0, dtype=INDEX), 0)
    counts = occ.occurrences(engine, before)
    u, k = xp.unique(xp.concatenate(vals), return_counts=True)
    c = u[(counts[u] == k) & (cl.sizes[u] == 1)]  # no occurrence left, singleton class
    rows = RowSet.from_columns(be, (c, c), 2)
    rows = rows.select(store[eq].has(rows)) if len(rows) else rows
    if len(rows):
        hit = explicit.has(rows)
        keep = dict(store)  # I′ less the rows in question (DRed's I \\ D)
        keep[eq] = store[eq].without(rows)
        s = next(s for s in normal_strata(engine, cl.rho) if s.index == engine.eq_stratum)
        ev = engine.evaluator
        mark_rederivable(be, ev, [r for r in s.rules if r.head.relation == eq], rows, hit,
                         None, None, stats,
                         lambda rule, rest: _backward(ev, rule, rest, keep, store.__getitem__))
        gone = rows.select(~hit)
        if len(gone):
            store[eq] = store[eq].without(gone)
            stats.overdeleted += len(gone)
    return counts, u, k
