"""B/F and B/F^c (paper 000 Algorithm 3; Motik et al. 2015, as summarised in paper 000 §5
and paper 001 §3): deletion by backward and forward chaining, whole frontiers at a time.

Every step is a columnar pass over a batch of facts; nothing runs per fact:

* the sets C (checked), P (proved) and Y (delayed) of a stratum are per-relation run sets
  (:class:`~gpu_engine.runs.RunSet`), added to by appending disjoint sorted runs;
* CHECK (lines 70-77) is a breadth-first search in steps.  A *level* is a batch of
  facts not checked yet; it is added to C and saturated as one batch (lines 78-79: its
  facts that are in Y or hold non-recursively start the forward propagation).  Its facts
  that are still not proved are *expanded*: every recursive rule is evaluated once with
  its head bound to all of them (:func:`~gpu_engine.affected.backward`, lines 73-74).
  The instances found are released gradually, as a depth-first search would visit them
  one after the other: the k-th instance of a fact (k = 0, 1, 2, ...) is released
  ``1 + SPREAD * floor(log2(k + 1))`` steps after the expansion (1, 1, 2, 4, 8, ...
  instances per release), and only while its head is not proved (line 77).  The body
  atoms of the current stratum of the instances released at a step, minus C, are the
  next level (lines 75-76).  CHECK ends when no instance is left to release;
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
  one proved F.  Here the facts of N_D are checked together and the instances of a fact
  are released in growing groups while the search below the earlier ones goes on, so
  some premises are checked that the depth-first order would skip (a fact's instances
  released in the step its proof is found), and others are skipped that it would check
  (those of an instance that the depth-first order visits before the one that proves F);
  with ``SPREAD = 0`` every instance is released at once (plain breadth first).  The
  order in which lines 64-66 visit N_D no longer matters.  Every fact is still checked
  at most once (lines 71, 78) and its instances are released only while it is not
  proved (line 77), and when CHECK ends every checked fact that is not proved has had
  all its instances released, as after a depth-first CHECK.
* **The version of line 74.** Instances are enumerated over ``I \\ (D \\ A)`` rather than
  ``I \\ ((D ∪ Δ_D) \\ A)``: Δ_D of the current round is only known when the round's
  CHECK is done.  The larger version only adds instances (more facts checked), never
  proofs: facts are proved by forward chaining from facts that hold (line 85).
* **What is proved.** After every CHECK, as after every fact-at-a-time CHECK, a checked
  fact is proved iff it follows from the stratum's facts of ``E \\ E⁻`` and the lower
  strata's facts of ``I \\ (D \\ A)`` (negation over ``I ∪ A``) (every unproved fact of C had all premises of all its
  instances checked, so a fact of C with a derivation tree of facts that hold is reached
  by the forward propagation from its leaves: paper 000's argument for Algorithm 3 needs
  no more than this closure).  So the facts of N_D \\ D proved, Δ_D, D,
  the deleted facts, the final materialisation and the counters C_nr are those of the
  fact-at-a-time version, and the facts checked by both versions are proved by both or
  by neither; ``UpdateStats.overdeleted``, ``rederived`` and ``added`` agree, while
  ``derivations`` and ``backward`` (rule instances considered) count the instances of
  the checks made, which differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_engine.kernels.backend import INDEX
from gpu_engine.kernels.sets import argsort_keys

from .affected import backward, rederivable
from .expr import const_value, term_vars
from .fdu import at_boundary
from .forward_algorithms import Update
from .ir import Atom, Var
from .rowset import RowSet
from .runs import RunSet
from .stratify import Stratum
from .views import View

Batch = dict[str, RowSet]  # per relation: sorted unique rows (nonempty)
SPREAD = 2  # steps between the releases of 1, 1, 2, 4, 8, ... instances of a fact


def bf(u: Update, with_counters: bool, observe: Any = None) -> None:
    """B/F (``with_counters=False``) or B/F^c over all strata (lines 51-56).
    ``observe(stratum, checked, proved)``, if given, sees each stratum's C and P (per
    relation run sets) after DELETEUNPROVED (for tests)."""
    from .aggregates import update_stratum

    for s in u.strata:
        if s.aggregate is not None:
            update_stratum(u, s)
            continue
        if u.idle(s):
            continue
        at_boundary(u, "start", s, 0)
        st = _Stratum(u, s, with_counters)
        st.delete_unproved()  # line 54
        if observe is not None:
            observe(s, st.C, st.P)
        u.insert(s, {}, counters=with_counters)  # line 55


@dataclass
class _Pending:
    """Instances of one recursive rule waiting to be released: their heads (``owner``,
    columns of relation ``head``) and the values of the variables of ``atoms``."""

    head: str
    owner: tuple[Any, ...]
    atoms: list[Atom]
    vals: dict[str, Any]
    n: int


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
        """CHECK of a batch of facts: breadth first with instances released gradually
        (see the module docstring)."""
        level = self._unchecked(facts)  # line 71
        pending: dict[int, list[_Pending]] = {}  # instances by the step that releases them
        step = 0
        while True:
            if level:
                for r, f in level.items():
                    self.C[r] = self.C[r].append(f)  # line 78
                self.saturate(level)  # lines 72, 79-86
                still = {r: o for r, f in level.items()
                         if len(o := f.select(~self.P[r].has(f)))}  # line 77
                self._expand(still, step, pending)  # lines 73-74
            if not pending:
                return
            step = max(step + 1, min(pending))
            level = self._unchecked(self._release(pending.pop(step)))  # lines 75-76

    def _unchecked(self, facts: Batch) -> Batch:
        return {r: n for r, f in facts.items() if len(n := self.C[r].new_rows(f))}

    def _expand(self, facts: Batch, step: int, pending: dict[int, list[_Pending]]) -> None:
        """Lines 73-74: every instance r' of a recursive rule with h(r') one of ``facts``,
        over ``I \\ (D \\ A)`` (negation over ``I ∪ A``), one backward evaluation per
        rule; the k-th instance of a fact (k = 0, 1, ...) is released at step
        ``step + 1 + floor(log2(k + 1))``."""
        u, xp = self.u, self.be.xp
        for rule, atoms, wanted in self.mine:
            rows = facts.get(rule.head.relation)
            if rows is None:
                continue
            outs = backward(u.ev, rule, rows, u.state.mid, u.state.old_plus, wanted)
            u.stats.backward += sum(o.count for o in outs)
            if not outs:
                continue
            cols = [xp.concatenate([o.cols[i] for o in outs]) if len(outs) > 1
                    else outs[0].cols[i] for i in range(len(wanted) + 1)]
            n = len(cols[0])
            if not atoms or n == 0:
                continue
            order = argsort_keys(self.be, cols[0])
            cols = [c[order] for c in cols]
            fact = cols[0]
            rank = xp.arange(n, dtype=INDEX) - xp.searchsorted(fact, fact, side="left")
            delay = SPREAD * xp.floor(xp.log2(rank + 1)).astype(INDEX)
            for d in self.be.to_host(xp.unique(delay)).tolist():
                sel = xp.flatnonzero(delay == d)
                owner = tuple(c[fact[sel]] for c in rows.cols)
                vals = {v: cols[i + 1][sel] for i, v in enumerate(wanted)}
                pending.setdefault(step + 1 + int(d), []).append(
                    _Pending(rule.head.relation, owner, atoms, vals, len(sel)))

    def _release(self, entries: list[_Pending]) -> Batch:
        """Line 75: the body atoms of O^s of released instances whose head is not
        proved yet (line 77)."""
        u, be = self.u, self.be
        xp = be.xp
        parts: dict[str, list[RowSet]] = {}
        for e in entries:
            keep = ~self.P[e.head].contains(e.owner, e.n)
            n = int(keep.sum())
            if n == 0:
                continue
            idx = None if n == e.n else xp.flatnonzero(keep)
            for a in e.atoms:
                acols = tuple((e.vals[t.name] if idx is None else e.vals[t.name][idx])
                              if isinstance(t, Var)
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
                d = n.select(in_c)
                d = d.select(~self.P[r].has(d)) if len(d) else d  # line 82
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
