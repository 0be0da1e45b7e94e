"""Test oracle: B/F and B/F^c (paper 000 Algorithm 3) with CHECK and SATURATE fact at a
time, as the host ran them before the batched version (``gpu_engine.backward_forward``).
``tests/test_bf_batched.py`` runs it in place of the batched ``bf`` and compares.

The set operations and rule passes that are not fact-at-a-time stay columnar on the
device: the affected consequences of deletions (lines 59-61 and 68), the forward
saturation of proved facts (line 85, one pass per proved batch) and insertion (lines
87-96, shared with DRed).  CHECK (lines 70-77) and the proved / checked / delayed sets
P, C, Y are host-side Python, as in the paper: each backward step binds a rule head to
one fact and evaluates the body over the device relations' join indexes.

Readings of the pseudo-code (the text of Algorithm 3 is ambiguous in three places):
* line 59 is Π_nr^s⟦I : D \\ A, A \\ D⟧ exactly as line 29 of Algorithm 2;
* SATURATE returns *true* once F is proved (line 83's "return f" would only force a
  useless backward step, which line 77 then cuts short);
* line 91 applies the recursive rules Π_r^s (with Π_nr^s the recursive rules would never
  see lower-strata insertions).
B/F without counters replaces the test ``C_nr[F] > 0`` of line 79 by "F is explicit and
not deleted, or a non-recursive rule derives F" evaluated backwards over
``I \\ (D \\ A)`` (negation over ``I ∪ A``), which is what the counter records.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from gpu_engine.affected import backward, rederivable
from gpu_engine.expr import const_value, term_vars
from gpu_engine.forward_algorithms import Update
from gpu_engine.ir import Atom, Rule, Var
from gpu_engine.rowset import RowSet
from gpu_engine.runs import RunSet
from gpu_engine.stratify import Stratum
from gpu_engine.views import View

Fact = tuple[str, tuple[int, ...]]


def bf(u: Update, with_counters: bool, observe: Any = None) -> None:
    """B/F (``with_counters=False``) or B/F^c over all strata (lines 51-56).
    ``observe(stratum, checked, proved)``, if given, sees each stratum's sets C and P
    (sets of (relation, row) pairs) after DELETEUNPROVED."""
    for s in u.strata:
        if u.idle(s):
            continue
        st = _Stratum(u, s, with_counters)
        st.delete_unproved()  # line 54
        if observe is not None:
            observe(s, set(st.C), set(st.P))
        u.insert(s, {}, counters=with_counters)  # line 55


class _Stratum:
    """DELETEUNPROVED, CHECK and SATURATE for one stratum (lines 53, 57-86)."""

    def __init__(self, u: Update, s: Stratum, with_counters: bool) -> None:
        self.u, self.s, self.counters = u, s, with_counters
        self.be = u.be
        self.in_s = set(s.relations)
        self.C: set[Fact] = set()  # checked
        self.P: set[Fact] = set()  # proved
        self.Y: set[Fact] = set()  # delayed: proved consequences not checked yet
        self.P_runs = {r: RunSet.empty(self.be, u.arity[r]) for r in s.relations}
        self.delta: dict[str, RunSet] = {}

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
            self.delta = {r: RunSet.empty(self.be, u.arity[r]) for r in self.s.relations}
            for r in self.s.relations:
                todo = st.not_deleted(r, u.union(r, cand[r]))
                for row in _tuples(todo):  # lines 64-66
                    f = (r, row)
                    self.check(f)
                    if f not in self.P:
                        self.delta[r] = self.delta[r].append(_rows(self.be, u.arity[r], [row]))
            delta = {r: d for r, d in self.delta.items() if len(d)}
            if not delta:
                break
            heads = u.derive(self.s.recursive_rules, st.mid, st.old_plus, delta)  # line 68
            cand = {r: [] for r in self.s.relations}
            for r, (rows, _) in heads.items():
                cand[r].append(rows)
            for r, d in delta.items():
                st.overdelete(r, d.compact())  # line 69
                u.stats.overdeleted += len(d)

    # --- lines 70-77 ---------------------------------------------------------------------

    def check(self, root: Fact) -> None:
        """CHECK, depth first with an explicit stack (derivation chains can be long)."""
        if root in self.C or self.saturate(root):
            return
        stack: list[tuple[Fact, Iterator[Fact]]] = [(root, self.premises(root))]
        while stack:
            f, premises = stack[-1]
            if f in self.P:  # line 77
                stack.pop()
                continue
            g = next(premises, None)
            if g is None:
                stack.pop()
                continue
            if g not in self.C and not self.saturate(g):  # line 76: CHECK(G)
                stack.append((g, self.premises(g)))

    def premises(self, f: Fact) -> Iterator[Fact]:
        """Lines 73-75: the body atoms of O^s of every instance r' of a recursive rule
        with h(r') = F over ``I \\ ((D ∪ Δ_D) \\ A)`` (negation over ``I ∪ A``)."""
        rel, row = f
        for rule in self.s.recursive_rules:
            if rule.head.relation != rel:
                continue
            atoms = [a for a in rule.body if isinstance(a, Atom)]
            mine = [a for a in atoms if a.relation in self.in_s]
            n, cols = self._instances(rule, row, mine, self._pos_check)
            for k in range(n):
                for a in mine:
                    yield a.relation, tuple(
                        int(cols[t.name][k]) if isinstance(t, Var)
                        else const_value(t, self.u.ev.symbols) for t in a.args)

    def _pos_check(self, name: str) -> View:
        st = self.u.state
        if name in self.in_s:
            d = self.delta.get(name)
            v = st.mid(name)
            return v.minus(d) if d is not None and len(d) else v
        return st.mid(name)

    def _instances(self, rule: Rule, row: tuple[int, ...], mine: list[Atom],
                   pos: Any) -> tuple[int, dict[str, np.ndarray]]:
        """The number of instances of ``rule`` whose head is ``row`` and the bindings of
        the variables of ``mine`` in them."""
        wanted = tuple(sorted({v for a in mine for t in a.args for v in term_vars(t)}))
        one = _rows(self.be, self.u.arity[rule.head.relation], [row])
        outs = backward(self.u.ev, rule, one, pos, self.u.state.old_plus, wanted)
        n = sum(o.n for o in outs)
        self.u.stats.backward += n
        if not n:
            return 0, {}
        return n, {v: np.concatenate([self.be.to_host(o.cols[i + 1]) for o in outs])
                   for i, v in enumerate(wanted)}

    # --- lines 77-86 ---------------------------------------------------------------------

    def saturate(self, f: Fact) -> bool:
        """SATURATE: mark F checked; if it holds non-recursively (or was delayed), prove
        it and propagate forward the consequences among checked facts."""
        self.C.add(f)  # line 78
        if not (f in self.Y or self.nonrecursively_holds(f)):  # line 79
            return False
        new: list[Fact] = [f]  # line 80
        while True:  # lines 81-85
            proved = [g for g in set(new) if g in self.C and g not in self.P]
            self.Y.update(g for g in new if g not in self.C)
            if not proved:
                return f in self.P
            self.P.update(proved)  # line 84
            by_rel: dict[str, list[tuple[int, ...]]] = {}
            for r, row in proved:
                by_rel.setdefault(r, []).append(row)
            delta = {r: RunSet.of(_rows(self.be, self.u.arity[r], rows))
                     for r, rows in by_rel.items()}
            for r, d in delta.items():
                self.P_runs[r] = self.P_runs[r].append(d.compact())
            heads = self.u.derive(self.s.recursive_rules, self._pos_saturate,
                                  self.u.state.old_plus, delta)  # line 85
            new = [(r, row) for r, (rows, _) in heads.items() for row in _tuples(rows)]

    def _pos_saturate(self, name: str) -> View:
        """``P ∪ (O^{<s} ∩ (I \\ (D \\ A)))``."""
        if name in self.in_s:
            return View.of(self.P_runs[name])
        return self.u.state.mid(name)

    def nonrecursively_holds(self, f: Fact) -> bool:
        """B/F^c: ``C_nr[F] > 0``.  B/F: F ∈ E \\ E⁻, or a non-recursive rule derives F
        (evaluated backwards)."""
        rel, row = f
        u = self.u
        one = _rows(self.be, u.arity[rel], [row])
        if self.counters:
            return bool(u.state.counter(rel, one, False)[0] > 0)
        if _has(u.explicit[rel], one) and not _has(u.e_minus[rel], one):
            return True
        for rule in self.s.nonrecursive_rules:
            if rule.head.relation == rel:
                hit, matched = rederivable(u.ev, rule, one, u.state.mid, u.state.old_plus)
                u.stats.backward += matched
                if bool(hit[0]):
                    return True
        return False


def _rows(be: Any, arity: int, rows: list[tuple[int, ...]]) -> RowSet:
    if arity == 0:
        return RowSet.from_columns(be, (), 0, n_rows=len(rows))
    arr = np.asarray(rows, dtype=np.int64).reshape(len(rows), arity)
    return RowSet.from_columns(be, tuple(be.asarray(arr[:, i]) for i in range(arity)), arity)


def _has(rs: RowSet, one: RowSet) -> bool:
    """Whether the single row of ``one`` is in ``rs``."""
    return bool(rs.has(one)[0])


def _tuples(rs: RowSet) -> list[tuple[int, ...]]:
    if rs.arity == 0:
        return [()] * len(rs)
    cols = [rs.be.to_host(c) for c in rs.cols]
    return list(zip(*(c.tolist() for c in cols)))
