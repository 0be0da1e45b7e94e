"""B/F and B/F^c (paper 000 Algorithm 3; Motik et al. 2015, as summarised in paper 000 §5
and paper 001 §3): deletion by backward and forward chaining, whole frontiers at a time.

Every step is a columnar pass over a batch of facts; nothing runs per fact:

* the sets C (checked), P (proved) and Y (delayed) of a stratum are per-relation run sets
  (:class:`~gpu_engine.runs.RunSet`), added to by appending disjoint sorted runs;
* CHECK (lines 70-77) is a breadth-first search: a *level* is a batch of facts not checked
  yet; the level is added to C and saturated as one batch (lines 78-79: its facts that are
  in Y or hold non-recursively start the forward propagation), then every recursive rule
  is evaluated once with its head bound to all facts of the level that are still not
  proved (:func:`~gpu_engine.affected.backward`, lines 73-74), and the body atoms of the
  current stratum of all these instances, minus C, are the next level (line 75);
* SATURATE's forward propagation (lines 80-85) is seminaive: each Δ_P is one pass
  Π_r^s⟦P ∪ (O^{<s} ∩ (I \\ (D \\ A))), I ∪ A : Δ_P⟧ over the whole batch;
* the non-recursive test of line 79 is one counter lookup for the batch (B/F^c), or, for
  B/F, membership in E \\ E⁻ and one backward evaluation per non-recursive rule with the
  head bound to the batch's remaining facts (:func:`~gpu_engine.affected.rederivable`);
* DELETEUNPROVED (lines 57-69) checks all of N_D \\ D of a round as one CHECK, and
  Δ_D is (N_D \\ D) \\ P.

Readings of the pseudo-code (the text of Algorithm 3 is ambiguous in three places, read as
the fact-at-a-time version did):

* line 59 is Π_nr^s⟦I : D \\ A, A \\ D⟧ exactly as line 29 of Algorithm 2;
* SATURATE returns *true* once F is proved (line 83's "return f" would only force a
  useless backward step, which line 77 then cuts short);
* line 91 applies the recursive rules Π_r^s (with Π_nr^s the recursive rules would never
  see lower-strata insertions).

B/F without counters replaces the test ``C_nr[F] > 0`` of line 79 by "F is explicit and
not deleted, or a non-recursive rule derives F" evaluated backwards over
``I \\ (D \\ A)`` (negation over ``I ∪ A``), which is what the counter records.

What batching changes, and what it keeps:

* **Which facts are checked.** Lines 64-66 check the facts of N_D one after the other
  and line 77 stops enumerating the instances of F (lines 73-76) as soon as F is proved,
  so a depth-first CHECK never checks the premises of F's later instances once an earlier
  one proved F.  A breadth-first level checks the premises of *all* instances of its
  unproved facts together, before any of them is saturated, so it may check facts that
  the depth-first order skips (and the order in which lines 64-66 visit N_D no longer
  matters).  Every fact that is checked is still checked once (lines 71, 78), and a fact
  is expanded backwards only while it is not proved, as line 77 requires.
* **The version of line 74.** Instances are enumerated over ``I \\ (D \\ A)`` rather than
  ``I \\ ((D ∪ Δ_D) \\ A)``: Δ_D of the current round is only known when the round's
  CHECK is done.  The larger version only adds instances (more facts checked), never
  proofs: facts are proved by forward chaining from facts that hold (line 85).
* **What is proved.** After every CHECK, as after every fact-at-a-time CHECK, a checked
  fact is proved iff it holds in the materialisation of ``E \\ E⁻`` over the new lower
  strata without insertions (every unproved fact of C had all premises of all its
  instances checked, so a fact of C with a derivation tree of facts that hold is reached
  by the forward propagation from its leaves).  So the facts of N_D \\ D proved, Δ_D, D,
  the deleted facts, the final materialisation and the counters C_nr are those of the
  fact-at-a-time version, and the facts checked by both versions are proved by both or
  by neither; ``UpdateStats.overdeleted``, ``rederived`` and ``added`` agree, while
  ``derivations`` and ``backward`` (rule instances considered) count the instances of
  the checks made, which differ.
"""

from __future__ import annotations

from typing import Any

from kernels.backend import INDEX

from .affected import backward, rederivable
from .expr import const_value, term_vars
from .forward_algorithms import Update
from .ir import Atom, Var
from .rowset import RowSet
from .runs import RunSet
from .stratify import Stratum
from .views import View

Batch = dict[str, RowSet]  # per relation: sorted unique rows (nonempty)


def bf(u: Update, with_counters: bool, observe: Any = None) -> None:
    """B/F (``with_counters=False``) or B/F^c over all strata (lines 51-56).
    ``observe(stratum, checked, proved)``, if given, sees each stratum's C and P (per
    relation run sets) after DELETEUNPROVED (for tests)."""
    for s in u.strata:
        if u.idle(s):
            continue
        st = _Stratum(u, s, with_counters)
        st.delete_unproved()  # line 54
        if observe is not None:
            observe(s, st.C, st.P)
        u.insert(s, {}, counters=with_counters)  # line 55


class _Stratum:
    """DELETEUNPROVED, CHECK and SATURATE for one stratum (lines 53, 57-86), batched."""

    def __init__(self, u: Update, s: Stratum, with_counters: bool) -> None:
        self.u, self.s, self.counters = u, s, with_counters
        self.be = u.be
        self.in_s = set(s.relations)
        empty = {r: RunSet.empty(self.be, u.arity[r]) for r in s.relations}
        self.C: dict[str, RunSet] = dict(empty)  # checked
        self.P: dict[str, RunSet] = dict(empty)  # proved
        self.Y: dict[str, RunSet] = dict(empty)  # delayed: proved, not checked yet
        # per recursive rule: its body atoms of the stratum and their variables (line 75)
        self.mine = []
        for rule in s.recursive_rules:
            atoms = [a for a in rule.body if isinstance(a, Atom) and a.relation in self.in_s]
            wanted = tuple(sorted({v for a in atoms for t in a.args for v in term_vars(t)}))
            self.mine.append((rule, atoms, wanted))

    # --- lines 57-69 ---------------------------------------------------------------------

    def delete_unproved(self) -> None:
        u, st = self.u, self.u.state
        cand: dict[str, list[RowSet]] = {r: [u.e_minus[r]] for r in self.s.relations}
        if self.counters:
            for r in self.s.relations:
                em = u.e_minus[r]
                st.bump(r, em, u.ones(em), False, -1)  # line 60
        P, N = u.removed(), u.added()
        for rules, rec in ((self.s.nonrecursive_rules, False), (self.s.recursive_rules, True)):
            for r, (rows, cnt) in u.derive(rules, st.old, st.old, P, N).items():  # 59, 61
                cand[r].append(rows)
                if self.counters and not rec:
                    st.bump(r, rows, cnt, False, -1)
        while True:  # lines 62-69
            todo = {r: t for r in self.s.relations
                    if len(t := st.not_deleted(r, u.union(r, cand[r])))}  # line 64
            self.check(todo)  # line 65, for all of N_D \ D at once
            delta = {r: d for r, t in todo.items()
                     if len(d := t.select(~self.P[r].has(t)))}  # line 66
            if not delta:
                break
            heads = u.derive(self.s.recursive_rules, st.mid, st.old_plus,
                             {r: RunSet.of(d) for r, d in delta.items()})  # line 68
            cand = {r: [] for r in self.s.relations}
            for r, (rows, _) in heads.items():
                cand[r].append(rows)
            for r, d in delta.items():
                st.overdelete(r, d)  # line 69
                u.stats.overdeleted += len(d)

    # --- lines 70-77 ---------------------------------------------------------------------

    def check(self, facts: Batch) -> None:
        """CHECK of a batch of facts, breadth first (see the module docstring)."""
        level = self._unchecked(facts)  # line 71
        while level:
            for r, f in level.items():
                self.C[r] = self.C[r].append(f)  # line 78
            self.saturate(level)  # lines 72, 79-86
            still = {r: o for r, f in level.items()
                     if len(o := f.select(~self.P[r].has(f)))}  # line 77
            if not still:
                return
            level = self._unchecked(self.premises(still))  # lines 73-76

    def _unchecked(self, facts: Batch) -> Batch:
        return {r: n for r, f in facts.items() if len(n := self.C[r].new_rows(f))}

    def premises(self, facts: Batch) -> Batch:
        """Lines 73-75: the body atoms of O^s of every instance r' of a recursive rule with
        h(r') one of ``facts``, over ``I \\ (D \\ A)`` (negation over ``I ∪ A``)."""
        u, be = self.u, self.be
        xp = be.xp
        parts: dict[str, list[RowSet]] = {}
        for rule, atoms, wanted in self.mine:
            rows = facts.get(rule.head.relation)
            if rows is None:
                continue
            outs = backward(u.ev, rule, rows, u.state.mid, u.state.old_plus, wanted)
            n = sum(o.n for o in outs)
            u.stats.backward += sum(o.count for o in outs)
            if not n:
                continue
            cols = {v: xp.concatenate([o.cols[i + 1] for o in outs]) if len(outs) > 1
                    else outs[0].cols[i + 1] for i, v in enumerate(wanted)}
            for a in atoms:
                acols = tuple(cols[t.name] if isinstance(t, Var)
                              else xp.full(n, const_value(t, u.ev.symbols), dtype=INDEX)
                              for t in a.args)
                parts.setdefault(a.relation, []).append(
                    RowSet.from_columns(be, acols, len(a.args), n_rows=n))
        return {r: g for r, p in parts.items() if len(g := u.union(r, p))}

    # --- lines 77-86 ---------------------------------------------------------------------

    def saturate(self, level: Batch) -> None:
        """SATURATE of a batch of facts just added to C: those in Y or holding
        non-recursively (line 79) are proved, and the consequences propagate forward
        among checked facts (lines 80-85); the others go to Y (line 82)."""
        new: Batch = {}
        for r, f in level.items():
            hit = self.Y[r].has(f)
            if not bool(hit.all()):
                idx = self.be.xp.flatnonzero(~hit)
                hit[idx[self.nonrecursively_holds(r, f.select(~hit))]] = True
            if bool(hit.any()):
                new[r] = f.select(hit)  # line 80
        while new:  # lines 81-85
            delta: dict[str, RunSet] = {}
            for r, n in new.items():
                in_c = self.C[r].has(n)
                d = n.select(in_c & ~self.P[r].has(n))  # line 82
                if len(d):
                    delta[r] = RunSet.of(d)
                y = self.Y[r].new_rows(n.select(~in_c))
                if len(y):
                    self.Y[r] = self.Y[r].append(y)
            if not delta:  # line 83
                return
            for r, d in delta.items():  # line 84
                self.P[r] = self.P[r].append(d.runs[0])
            heads = self.u.derive(self.s.recursive_rules, self._pos_saturate,
                                  self.u.state.old_plus, delta)  # line 85
            new = {r: rows for r, (rows, _) in heads.items() if len(rows)}

    def _pos_saturate(self, name: str) -> View:
        """``P ∪ (O^{<s} ∩ (I \\ (D \\ A)))``."""
        if name in self.in_s:
            return View.of(self.P[name])
        return self.u.state.mid(name)

    def nonrecursively_holds(self, rel: str, rows: RowSet) -> Any:
        """Mask over ``rows``: B/F^c: ``C_nr[F] > 0``.  B/F: F ∈ E \\ E⁻, or a
        non-recursive rule derives F (evaluated backwards)."""
        u = self.u
        if self.counters:
            return u.state.counter(rel, rows, False) > 0
        hit = u.explicit[rel].has(rows) & ~u.e_minus[rel].has(rows)
        for rule in self.s.nonrecursive_rules:
            if rule.head.relation != rel or bool(hit.all()):
                continue
            idx = self.be.xp.flatnonzero(~hit)
            got, matched = rederivable(u.ev, rule, rows.select(~hit), u.state.mid,
                                       u.state.old_plus)
            u.stats.backward += matched
            hit[idx[got]] = True
        return hit
