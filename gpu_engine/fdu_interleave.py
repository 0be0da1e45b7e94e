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
their E⁺/E⁻ (the running update has not read them).  Strata that have begun take it in
order: an explicit-only stratum changes its facts; a finished stratum with rules whose
explicit facts or inputs changed gets the step above (closure over its applied instances,
rederivation, insertions) followed by its own seminaive fixpoint, and its net change
(retracted and not re-added, added and not present before) is the input change of the
strata after it, up to ``s``.  Refused (nothing changes; the queue then restarts or
waits): an aggregate, TC/STC module or subsumption stratum among the begun strata the
change reaches, a negation of a changed relation there, a boundary other than "start"
and "insert".

Termination: one interleaving step is a closure over the finite ``S₀`` plus one backward
step; the queue accepts at most ``max_interleaved`` steps and ``round_budget`` rounds per
update, after which arrivals wait, so every update ends after finitely many rounds (at
most its own rounds plus those of the interleaved changes).  Example 1's non-termination
("no overtaking") cannot occur because a deletion is closed before additions resume.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ir import Negation
from .rowset import RowSet, union_rows
from .runs import RunSet
from .state import Encoded


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
    st.note_change(name)


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
    phase's pending additions).  Returns False, changing nothing, when it cannot.

    Strata that have begun (those before ``s``, and ``s`` itself at an insertion boundary)
    take the change in order: a finished stratum whose explicit facts or whose inputs
    changed gets the same step as ``s`` (closure, rederivation, insertions) followed by its
    own seminaive fixpoint, and its net change is the next strata's input change."""
    if phase not in ("start", "insert") or u.new_explicit is None:
        return _refuse(u, f"a {phase} boundary takes no arrivals")
    counters = True  # the counters the update keeps (its level) are maintained, at any boundary
    if phase == "insert":
        why = _unsupported(u, s)
        if cand is None or why:
            return _refuse(u, f"the running stratum {s.index} {why or 'has no candidates'}")
    stratum_of = {r: t for t in u.strata for r in t.relations}
    hi = s.index if phase == "start" else s.index + 1  # strata below hi have begun
    later: dict[str, tuple[RowSet, RowSet]] = {}
    begun: dict[str, tuple[RowSet, RowSet]] = {}
    for name in dict.fromkeys((*ins, *dele)):
        t = stratum_of.get(name)
        if t is None:
            return _refuse(u, f"relation {name} is in no stratum")
        ne = u.new_explicit[name]
        ri = _rows(u, ins, name) if name in ins else RowSet.empty(u.be, u.arity[name])
        rd = _rows(u, dele, name) if name in dele else RowSet.empty(u.be, u.arity[name])
        rd = rd.select(ne.has(rd)) if len(rd) else rd  # rule 1(i): only real operations
        ri = ri.select(~ne.has(ri)) if len(ri) else ri
        if len(ri) or len(rd):
            (later if t.index >= hi else begun)[name] = (ri, rd)
    affected = _affected(u, begun, stratum_of, hi)
    if isinstance(affected, str):
        return _refuse(u, affected)
    if not (later or begun):
        return True
    _explicit(u, {**later, **begun})
    for name, (ri, rd) in later.items():  # not started: compose into its E⁺ / E⁻
        _compose_into(u, name, ri, rd)
    st = u.state
    reads = {n for t in affected for n in (*t.relations, *t.reads)}
    s0 = {n: st.new(n) for n in reads | set(begun) if n in st.rel}  # the state S₀
    net_del: dict[str, RowSet] = {}
    net_add: dict[str, RowSet] = {}
    for t in affected:  # in stratum order
        own = {n: c for n, c in begun.items() if stratum_of[n] is t}
        ldel = {n: d for n, d in net_del.items() if n in t.reads}
        ladd = {n: a for n, a in net_add.items() if n in t.reads}
        if not (own or ldel or ladd):
            continue
        running = t is s and phase == "insert"
        if not t.rules and not running:  # explicit facts only: the state is E
            for name, (ri, rd) in own.items():
                _retract(st, name, rd)
                if len(ri):
                    st.add(name, ri)
                net_del[name], net_add[name] = rd, ri
            continue
        c = cand if running else {r: [] for r in t.relations}
        assert c is not None
        X = _delete(u, t, s0, ldel, {n: rd for n, (_, rd) in own.items()}, c, counters)
        _insert(u, t, ladd, {n: ri for n, (ri, _) in own.items()}, c, counters)
        if running:
            continue  # the insertion phase continues from cand
        added = _fixpoint(u, t, c, counters)
        for r in t.relations:
            x, a = X.get(r), added.get(r)
            if x is not None and len(x):
                net_del[r] = _minus(x, a) if a is not None else x
            if a is not None and len(a):
                net_add[r] = _minus(a, x) if x is not None else a
    return True


def _refuse(u: Any, why: str) -> bool:
    """Refuse an interleaving step (nothing changed); the reason is kept for the queue."""
    u.fdu_refused = why
    return False


def _unsupported(u: Any, t: Any) -> str:
    """Why stratum ``t``, once begun, cannot take an interleaving step ("" if it can).

    * An aggregate is recomputed per group from its whole input, not maintained over the
      applied instances the closure follows (remedy (d) has no meaning for it).
    * A TC/STC module (DRed^c-MOD, paper 002) keeps module state beside the facts (X_R, the
      STC module's components) and no recursive counters; a step over rule instances would
      leave that state behind.
    * Subsumption deletes facts when a better one arrives: not monotone, so the closure's
      invariant (the state ⊆ mat(E_now)) does not carry over.
    Each of these strata takes the change when it has not begun (it is composed into its
    E⁺/E⁻ and its input change is read from the state), so the refusal concerns only
    strata already begun; the queue then restarts the update or lets the change wait."""
    if t.aggregate is not None:
        return "is an aggregate's (recomputed per group, not over applied instances)"
    if t.index in u.modules:
        return "is a TC/STC module (its module state is kept by DRed^c-MOD only)"
    if t.subsumptions:
        return "has subsumption (not monotone)"
    return ""


def _affected(u: Any, begun: dict[str, tuple[RowSet, RowSet]], stratum_of: dict[str, Any],
              hi: int) -> list[Any] | str:
    """The begun strata (index below ``hi``) the change reaches, in order, or the reason
    why one of them cannot take it (an aggregate, TC/STC modules, subsumption, a negation
    of a changed relation)."""
    changed = set(begun)
    out = []
    for t in sorted((t for t in u.strata if t.index < hi), key=lambda t: t.index):
        mine = changed & set(t.relations)
        if not (mine or changed & t.reads):
            continue
        why = _unsupported(u, t)
        if why:
            return f"stratum {t.index} ({', '.join(t.relations)}), done, {why}"
        neg = sorted({lit.atom.relation for rule in t.rules for lit in rule.body
                      if isinstance(lit, Negation) and lit.atom.relation in changed})
        if neg:
            return (f"stratum {t.index} ({', '.join(t.relations)}), done, negates the "
                    f"changed {', '.join(neg)}")
        changed |= set(t.relations)
        out.append(t)
    return out


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


def _delete(u: Any, s: Any, s0: dict[str, Any], lower: dict[str, RowSet],
            own: dict[str, RowSet], cand: dict[str, list[RowSet]],
            counters: bool) -> dict[str, RowSet]:
    """Deletions reaching stratum ``s``: ``lower`` (facts of earlier strata removed by this
    step, already retracted from the state; ``s0`` has the views from before it) and
    ``own`` (explicit facts of ``s`` deleted).  The closure ``X`` over applied instances
    (over ``S₀``), counters decremented once per instance, ``X`` retracted, then
    rederivation and cancellation of pending additions.  Returns ``X`` of ``s``."""
    from .affected import mark_rederivable

    st = u.state
    seeds: dict[str, RowSet] = {n: d for n, d in lower.items() if len(d)}
    check: dict[str, list[RowSet]] = {r: [] for r in s.relations}
    for name, rd in own.items():
        if not len(rd):
            continue
        _bump(u, name, rd, u.ones(rd), False, -1)  # the explicit derivation is gone
        check[name].append(rd)  # also when it is only pending in cand
        inside = rd.select(_in_new(st, name, rd))
        if len(inside):
            seeds[name] = inside
    if not any(check.values()) and not seeds:
        return {}
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
            nxt = rows.select(_in_new(st, r, rows))  # in S₀ (s's state is still S₀)
            if r in X and len(nxt):
                nxt = nxt.select(~X[r].has(nxt))
            if len(nxt):
                delta[r] = nxt
    out: dict[str, RowSet] = {}
    for r in s.relations:
        if r in X:
            out[r] = X[r].compact()
            _retract(st, r, out[r])
            u.stats.overdeleted += len(out[r])
    for r in s.relations:  # rederivation (remedy (b)) and cancellation (rule 2)
        touched = union_rows(u.be, u.arity[r], check[r])
        if not len(touched):
            continue
        hit = u.new_explicit[r].has(touched)
        mark_rederivable(u.be, u.ev, [x for x in s.rules if x.head.relation == r], touched,
                         hit, st.new, st.new, u.stats)
        pending = union_rows(u.be, u.arity[r], cand[r])
        kept = _minus(pending, touched)
        back = touched.select(hit)
        cand[r] = [x for x in (kept, back) if len(x)]
    return out


def _insert(u: Any, s: Any, lower: dict[str, RowSet], own: dict[str, RowSet],
            cand: dict[str, list[RowSet]], counters: bool) -> None:
    """Insertions reaching stratum ``s``: explicit facts of ``s`` join ``cand`` (c_nr + 1);
    ``lower`` (facts of earlier strata added by this step, already in the state) add
    their consequences in ``s`` to ``cand``, each instance counted once."""
    for name, ri in own.items():
        if len(ri):
            cand[name].append(ri)
            if counters:
                _bump(u, name, ri, u.ones(ri), False, +1)
    P = {n: RunSet.of(a) for n, a in lower.items() if len(a)}
    if not P:
        return
    for rules, rec in ((s.nonrecursive_rules, False), (s.recursive_rules, True)):
        for r, (rows, cnt) in u.derive(rules, u.state.new, u.state.new, P).items():
            cand[r].append(rows)
            if counters:
                _bump(u, r, rows, cnt, rec, +1)


def _fixpoint(u: Any, s: Any, cand: dict[str, list[RowSet]], counters: bool
              ) -> dict[str, RowSet]:
    """The seminaive insertion of a finished stratum ``s`` from ``cand`` (as
    ``Update.insert``'s loop, lines 45-50 of paper 000 Algorithm 2); returns the facts
    it added."""
    st = u.state
    added: dict[str, list[RowSet]] = {r: [] for r in s.relations}
    while True:
        delta = {r: d for r in s.relations
                 if len(d := st.not_in_new(r, u.union(r, cand[r])))}
        if not delta:
            break
        for r, d in delta.items():
            st.add(r, d)
            added[r].append(d)
        u.stats.added += sum(len(d) for d in delta.values())
        cand = {r: [] for r in s.relations}
        heads = u.derive(s.recursive_rules, st.new, st.new,
                         {r: RunSet.of(d) for r, d in delta.items()})
        for r, (rows, cnt) in heads.items():
            cand[r].append(rows)
            if counters:
                _bump(u, r, rows, cnt, True, +1)
    return {r: union_rows(u.be, u.arity[r], a) for r, a in added.items() if a}


__all__ = ["interleave"]
