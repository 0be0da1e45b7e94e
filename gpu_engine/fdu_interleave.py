"""The interleaved mode of fully dynamic updates (paper 004 §2 Algorithm 1, §3 remedies).

A later update ``U_j`` (insertions *and* deletions) joins the running update ``U_i`` at one
of its round boundaries instead of waiting for it to finish.  :func:`interleave` is the
engine side; ``host/update_queue.py``'s ``interleave`` policy calls it with everything
pending, composed in order (:func:`gpu_engine.fdu.compose`).

Mapping of Algorithm 1 onto rounds (brief §3.4: one computation step = one round).  At a
boundary of the insertion phase of stratum ``s`` the state is ``S₀`` (the facts executed
so far: ``(I \\ D) ∪ A`` of :class:`~gpu_engine.update_state.UpdateState`) and the pending
additions ``cand`` (the operations add(F) ∈ O not yet executed: the next Δ).

* Rule 1(i), explicit operations: the arriving change, normalised against the current E
  (deleting a fact that is not explicit, or inserting one that is, is no operation).
* Rule 2, cancellation with order transparency: the arriving change is newer than every
  operation of the running update, so it wins; a pending add(F) whose support the
  deletion removed is dropped from ``cand`` (or kept when F is still explicit or derivable).
* Rule 1(ii-b), implicit deletions, with remedy (c), the timestamp restriction: del(A) is
  joined only with facts introduced before the deletion was executed.  The facts born
  before the boundary are exactly ``S₀`` (those in ``cand`` are not executed yet), so the
  per-fact epoch filter of the overdeletion joins is the view ``S₀``: the closure
  ``X`` evaluates Π⟦S₀ \\ X, S₀ : Δ_X⟧ round by round (seminaive over deletions, every
  instance with a body fact in ``X`` once).  No epoch column has to be stored because the
  closure runs to its fixpoint inside the boundary, before any further addition executes.
* Remedy (d), applied-instance tracking: the instances over ``S₀`` are exactly those the
  running insertion has applied (seminaive invariant: an instance is applied in the round
  its last body fact was added), so propagating only over them propagates only over
  derivations that were performed (Ex. 3: C derived by D → C alone keeps C).  With
  counters, each such instance is decremented exactly once (c_nr for non-recursive
  rules, c_r for recursive ones), which is what the counters counted (Ex. 4: no second
  derivation of C is counted).
* Remedy (a), origin tags for recursion: a fact that re-derives itself through a cycle
  is caught because the deletion closure reaches every fact of ``S₀`` derived (through
  applied instances) from a deleted one before any addition continues ("deletion
  overtakes addition", outcome 1 of Ex. 1), and the pending additions of the cycle are
  cancelled; the origin of a fact is the applied instance that derived it, so no tag
  column is needed.  This reading is recorded in docs/ARCHITECTURE.md.
* Remedy (b), DRed's rederivation: a fact of ``X`` (or a touched pending addition) stays
  when it is explicit in the new E or has an instance over ``S₀ \\ X`` (one backward step,
  paper 000 Algorithm 1 line 4); it re-enters ``cand`` and the insertion continues.
* Rule 1(ii-a), implicit additions of the arriving insertions: they join ``cand`` (facts of
  ``s``) or the state of their explicit-only relation, whose consequences in ``s`` are
  Π⟦new, new : P⟧ with P the new rows, counted once.

Invariant kept at every boundary (so the insertion continues seminaively): every fact of
the state is in mat(E_current) (soundness: by induction on the round a fact was executed,
each has an applied instance over older facts, and the closure removes every fact one of
whose applied instances lost a body fact unless it is rederived), and every instance over
the state has its head in the state or in ``cand`` and is counted once.  Hence when the
insertion ends the state equals mat(E_n), the same as strictly consecutive application.

Where the change touches relations whose strata are not started yet, it is composed into
their E⁺/E⁻ (the running update has not read them).  Refused (nothing changes; the queue
then restarts or waits): a relation of a finished stratum that has rules, an aggregate or
module stratum, a finished stratum (other than the relation's own) that reads a changed
relation, negation or subsumption in ``s`` over a changed relation, a boundary other than
"start" and "insert".

Termination: one interleaving step is a closure over the finite ``S₀`` plus one backward
step; the queue accepts at most ``max_interleaved`` steps and ``round_budget`` rounds per
update, after which arrivals wait, so every update ends after finitely many rounds (at
most its own rounds plus those of the interleaved changes).  Example 1's non-termination
("no overtaking") cannot occur because a deletion is closed before additions resume.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fdu import Encoded
from .ir import Negation
from .rowset import RowSet, union_rows
from .runs import RunSet


def _rows(u: Any, enc: Encoded, name: str) -> RowSet:
    cols, n = enc[name]
    k = u.arity[name]
    if k == 0:
        return RowSet.from_columns(u.be, (), 0, n_rows=1 if n else 0)
    dev = tuple(u.be.asarray(np.asarray(c, dtype=np.int64).reshape(-1)[:n]) for c in cols)
    return RowSet.from_columns(u.be, dev, k, n_rows=n)


def _minus(a: RowSet, b: RowSet) -> RowSet:
    return a.select(~b.has(a)) if len(a) and len(b) else a


def _in_new(st: Any, name: str, rows: RowSet) -> Any:
    """Mask over ``rows``: which are in ``(I \\ D) ∪ A``."""
    s = st.rel[name]
    n = len(rows)
    in_i = s.I.has(rows)
    return (in_i & ~s.gone.contains(rows.cols, n)) | (~in_i & s.A_new.contains(rows.cols, n))


def _retract(st: Any, name: str, rows: RowSet) -> None:
    """Remove ``rows`` (facts of the current state) from ``(I \\ D) ∪ A``."""
    if not len(rows):
        return
    s = st.rel[name]
    st.touched.add(name)
    in_i = s.I.has(rows)
    old, fresh = rows.select(in_i), rows.select(~in_i)
    if len(old):
        s.D = s.D.append(s.D.new_rows(old))
        if len(s.A_old):
            s.A_old = RunSet.of(_minus(s.A_old.compact(), old))
        s.gone = s.gone.append(old)
    if len(fresh):
        s.A_new = RunSet.of(_minus(s.A_new.compact(), fresh))


def _bump(u: Any, name: str, rows: RowSet, cnt: Any, recursive: bool, sign: int) -> None:
    """Counter change of any facts (of ``I`` or new): decrements of new facts go to the
    log of new facts, which the commit sums per row still present."""
    st = u.state
    if st.level < (2 if recursive else 1) or not len(rows):
        return
    if sign > 0:
        st.bump(name, rows, cnt, recursive, sign)
        return
    in_i = st.rel[name].I.has(rows)
    if bool(in_i.any()):
        st.bump(name, rows.select(in_i), cnt[in_i], recursive, -1)
    if not bool(in_i.all()):
        out = ~in_i
        st.rel[name].new_log.append((rows.select(out), -cnt[out], recursive))


def interleave(u: Any, s: Any, phase: str, ins: Encoded, dele: Encoded,
               cand: dict[str, list[RowSet]] | None, counters: bool) -> bool:
    """Join the change (``ins``, ``dele``; newer than the running update) to update ``u``
    at a boundary of stratum ``s`` (``phase`` "start" or "insert"; ``cand``: the insertion
    phase's pending additions).  Returns False, changing nothing, when it cannot."""
    if phase not in ("start", "insert") or u.new_explicit is None:
        return False
    if phase == "insert" and (cand is None or s.aggregate is not None or s.subsumptions
                              or s.index in u.modules):
        return False
    stratum_of = {r: t for t in u.strata for r in t.relations}
    hi = s.index if phase == "start" else s.index + 1  # strata below hi have begun
    later: dict[str, tuple[RowSet, RowSet]] = {}
    lower: dict[str, tuple[RowSet, RowSet]] = {}
    own: dict[str, tuple[RowSet, RowSet]] = {}
    for name in dict.fromkeys((*ins, *dele)):
        t = stratum_of.get(name)
        if t is None:
            return False
        ne = u.new_explicit[name]
        ri = _rows(u, ins, name) if name in ins else RowSet.empty(u.be, u.arity[name])
        rd = _rows(u, dele, name) if name in dele else RowSet.empty(u.be, u.arity[name])
        rd = rd.select(ne.has(rd)) if len(rd) else rd  # rule 1(i): only real operations
        ri = ri.select(~ne.has(ri)) if len(ri) else ri
        if not (len(ri) or len(rd)):
            continue
        if t.index >= hi:
            later[name] = (ri, rd)
            continue
        if t.index == s.index:
            if t.aggregate is not None:
                return False
            own[name] = (ri, rd)
        elif t.rules or t.aggregate is not None or t.index in u.modules:
            return False  # a finished stratum with rules would have to be redone
        else:
            lower[name] = (ri, rd)
        for t2 in u.strata:  # finished strata that read it: they would have to be redone
            if t.index < t2.index < hi and name in t2.reads and t2 is not s:
                return False
        if t.index < s.index and phase == "insert" and any(
                isinstance(lit, Negation) and lit.atom.relation == name
                for rule in s.rules for lit in rule.body):
            return False
    if not (later or lower or own):
        return True
    _explicit(u, {**later, **lower, **own})
    for name, (ri, rd) in later.items():  # not started: compose into its E⁺ / E⁻
        _compose_into(u, name, ri, rd)
    if phase == "start":  # s has not started either: lower changes only enter the state
        for name, (ri, rd) in lower.items():
            _retract(u.state, name, rd)
            if len(ri):
                u.state.add(name, ri)
        return True
    assert cand is not None
    _delete(u, s, lower, own, cand, counters)
    _insert(u, s, lower, own, cand, counters)
    return True


def _explicit(u: Any, changes: dict[str, tuple[RowSet, RowSet]]) -> None:
    """E := (E \\ E⁻_j) ∪ E⁺_j (the arriving change is newer than the running one)."""
    for name, (ri, rd) in changes.items():
        ne = u.new_explicit[name]
        if len(rd):
            ne = ne.without(rd) if u.arity[name] else RunSet.empty(u.be, 0)
        if len(ri):
            ne = ne.append(ri)
        u.new_explicit[name] = ne.compacted() if ne.worth_compacting() else ne
        u.stats.deleted += len(rd)
        u.stats.inserted += len(ri)


def _compose_into(u: Any, name: str, ri: RowSet, rd: RowSet) -> None:
    """E⁺/E⁻ of a relation whose stratum has not started, after the arriving change:
    E⁻ := (E⁻ ∪ (E⁻_j ∩ E_0)) \\ E⁺_j and E⁺ := (E⁺ \\ E⁻_j) ∪ (E⁺_j \\ E_0)."""
    e0 = u.explicit[name]
    k = u.arity[name]
    em, ep = u.e_minus[name], u.e_plus[name]
    if len(rd):
        em = union_rows(u.be, k, [em, rd.select(e0.has(rd))])
        ep = _minus(ep, rd)
    if len(ri):
        em = _minus(em, ri)
        ep = union_rows(u.be, k, [ep, ri.select(~e0.has(ri))])
    u.e_minus[name], u.e_plus[name] = em, ep


def _delete(u: Any, s: Any, lower: dict[str, tuple[RowSet, RowSet]],
            own: dict[str, tuple[RowSet, RowSet]], cand: dict[str, list[RowSet]],
            counters: bool) -> None:
    """The deletions of the arriving change at an insertion boundary of ``s``: the
    closure ``X`` over applied instances (over ``S₀``), counters decremented once per
    instance, ``X`` retracted, then rederivation and cancellation of pending additions."""
    from .affected import rederivable

    st = u.state
    seeds: dict[str, RowSet] = {}
    check: dict[str, list[RowSet]] = {r: [] for r in s.relations}
    for name, (_, rd) in lower.items():
        if len(rd):
            seeds[name] = rd
    for name, (_, rd) in own.items():
        if not len(rd):
            continue
        _bump(u, name, rd, u.ones(rd), False, -1)  # the explicit derivation is gone
        check[name].append(rd)  # also when it is only pending in cand
        inside = rd.select(_in_new(st, name, rd))
        if len(inside):
            seeds[name] = inside
    if not any(check.values()) and not seeds:
        return
    s0 = {n: st.new(n) for n in {*seeds, *s.relations, *s.reads} if n in st.rel}
    X: dict[str, RunSet] = {}
    delta = seeds
    while delta:  # Π⟦S₀ \ X, S₀ : Δ⟧ round by round (remedy (c): only facts of S₀)
        def pos(n: str, X: dict[str, RunSet] = X) -> Any:
            v = s0.get(n)
            if v is None:
                return st.new(n)
            x = X.get(n)
            return v.minus(x) if x is not None and len(x) else v

        P = {n: RunSet.of(d) for n, d in delta.items()}
        heads: dict[str, list[RowSet]] = {}
        for rules, rec in ((s.nonrecursive_rules, False), (s.recursive_rules, True)):
            for r, (rows, cnt) in u.derive(rules, pos, st.new, P).items():
                heads.setdefault(r, []).append(rows)
                if counters:
                    _bump(u, r, rows, cnt, rec, -1)  # remedy (d): applied instances only
        for n, d in delta.items():
            X[n] = X[n].append(d) if n in X else RunSet.of(d)
        delta = {}
        for r, parts in heads.items():
            rows = union_rows(u.be, u.arity[r], parts)
            check[r].append(rows)
            nxt = rows.select(_in_new(st, r, rows))  # in S₀ (the state is still S₀)
            if r in X and len(nxt):
                nxt = nxt.select(~X[r].has(nxt))
            if len(nxt):
                delta[r] = nxt
    for n, x in X.items():
        _retract(st, n, x.compact())
        if n in s.relations:
            u.stats.overdeleted += len(x)
    for r in s.relations:  # rederivation (remedy (b)) and cancellation (rule 2)
        touched = union_rows(u.be, u.arity[r], check[r])
        if not len(touched):
            continue
        hit = u.new_explicit[r].has(touched)
        for rule in s.rules:
            if rule.head.relation != r or bool(hit.all()):
                continue
            open_ = touched.select(~hit)
            got, matched = rederivable(u.ev, rule, open_, st.new, st.new)
            u.stats.backward += matched
            hit[u.be.xp.flatnonzero(~hit)[got]] = True
        pending = union_rows(u.be, u.arity[r], cand[r])
        kept = _minus(pending, touched)
        back = touched.select(hit)
        cand[r] = [x for x in (kept, back) if len(x)]


def _insert(u: Any, s: Any, lower: dict[str, tuple[RowSet, RowSet]],
            own: dict[str, tuple[RowSet, RowSet]], cand: dict[str, list[RowSet]],
            counters: bool) -> None:
    """The insertions of the arriving change at an insertion boundary of ``s``: explicit
    facts of ``s`` join ``cand`` (c_nr + 1); new facts of explicit-only relations join
    the state and their consequences in ``s`` join ``cand``, each instance counted once."""
    st = u.state
    for name, (ri, _) in own.items():
        if len(ri):
            cand[name].append(ri)
            if counters:
                _bump(u, name, ri, u.ones(ri), False, +1)
    P: dict[str, RunSet] = {}
    for name, (ri, _) in lower.items():
        if len(ri):
            st.add(name, ri)
            P[name] = RunSet.of(ri)
    if not P:
        return
    for rules, rec in ((s.nonrecursive_rules, False), (s.recursive_rules, True)):
        for r, (rows, cnt) in u.derive(rules, st.new, st.new, P).items():
            cand[r].append(rows)
            if counters:
                _bump(u, r, rows, cnt, rec, +1)


__all__ = ["interleave"]
