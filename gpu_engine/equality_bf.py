"""B/F≈: incremental deletion with equality by rewriting (paper 001 §3, Algorithms 1–7),
batched: every set is a per-relation run set and every pass a columnar step over a
frontier of facts.

The sets and the mapping of the paper (its "global temporary variables"), per relation:

* ``D`` doubtful facts and ``O`` its processed part (π-normal rows of I);
* ``C`` checked facts (π-normal rows of I) and ``S`` the disproved ones;
* ``PV`` = V \\ P̂: the proved facts already processed and up to date (γ-normal); the
  paper's P \\ P̂ once saturate is done, since every unprocessed fact of P is processed
  in the same call (line 41);
* ``Y`` delayed facts (proved, their π-image not checked yet);
* ``γ`` one int64 array over the dictionary (identity at the start, line 2), merged by
  connected components (smallest id) as Mat≈ does; ``Γ`` the rules normalised by γ.

What is per fact in the paper is per frontier here:

* **Algorithm 1 (lines 5–16)** runs in rounds: the doubtful facts not processed yet are
  checked together (line 6, one batched ``checkProvability``), line 7 scans the facts
  checked since the last scan (incremental, brief pitfall 2), and the facts of the round
  that are not all proved propagate together (lines 9–15: a query per domain column for
  the facts containing a split class's constant; one seminaive variant per body atom for
  π(Π).matchBody over ``I \\ O``); those facts join O (line 16, inside the ``if`` of
  line 8, as the paper indents it: see the readings below).
* **Algorithm 4** is a breadth-first search in levels, as the batched B/F of
  :mod:`gpu_engine.backward_forward`: a level joins C (line 22) and is saturated
  (line 23); its facts not all proved (line 24) are expanded: lines 25–28 (all facts of
  ``I \\ S`` with ``c`` in a domain column, by a query per domain column), lines 29–31
  (``c≈c`` for the non-singleton classes of the fact not in S) and lines 32–35 (each
  rule of π(Π) evaluated backwards with its head bound to all of them over ``I \\ S``;
  heads of rules whose merged head column is bound by an unmerged body column are bound
  to every member of the class, since the rule's head is normalised only when it is
  derived).  The facts found are released one level later, the k-th instance of a fact
  ``SPREAD·floor(log2(k+1))`` levels later, and only while its head is not all proved
  (lines 28, 31, 35).
* **Algorithm 5 (saturate)** takes the level just checked: lines 37–39 (the reflexivity
  shortcut: ``γ(d)≈γ(d)`` for every member ``d`` of a checked ``c≈c`` occurring in E′),
  line 40 (``F^π ∩ (E′ ∪ Y)`` by expanding F to the members of its classes when that is
  small, else by normalising E′ through π and testing membership: the brief's E_norm),
  then lines 41–50 as seminaive rounds over P: a round's facts are normalised by γ
  (lines 43–44; outdated ones are P̂), its non-reflexive equalities merge γ (line 45,
  Algorithm 6: outdated rows of PV are rewritten, lines 53–54; rules of Γ whose body
  constants changed are evaluated once in full over PV, lines 55–58), reflexive rows are
  proved for the domain values (line 47), and every rule of Γ is evaluated with one body
  atom in the round's facts (seminaive variants replace the ≠ annotations of line 49:
  atoms before it read the old PV, after it the new one, so each instance is considered
  once, Theorem 1.2).  ``prove`` (Algorithm 7) is one membership test of π(heads) in C.
* **allProved / allDisproved** (Algorithm 3) never enumerate F^π: per domain column the
  distinct γ-images of the class, R_i = {γ(d) | π(d) = F_i} (a CSR index over the members
  of non-singleton classes, rebuilt when γ changes), and γ(F^π) = R_1 × … × R_k is tested
  against PV (brief pitfall 5).
* **Algorithm 2** at the end: π′ = γ on the classes whose ``c≈c`` was checked, π
  elsewhere (γ is checked to be the identity there: brief pitfall 6); I′ = (I \\ D) ∪
  π′(PV) (delete first, then add).

Readings of ambiguous lines (brief §1.4):

* line 12 belongs to the ``if`` of line 8, beside line 9; so does line 16 (O.add(F)),
  as the paper indents it (one level deeper than line 8, like line 13).  The brief's
  pitfall 1 suggests putting it outside; then a doubtful fact that is still proved
  enters O, and an instance joining it with a doubtful fact disproved later is never
  considered in line 14 (``[I \\ O]``), so its head is neither made doubtful nor
  deleted (found by the fuzz campaign: a rule ``r0(v) :- r0("a"), r2(v, w)`` whose
  ``r2`` fact was doubtful but held, while ``r0("a")`` lost its class);
* line 38's voc(E) is the domain values of E′ = E \\ E⁻ (after line 4's deletions);
* lines 12, 25–28, 37–39 and 47 are the reflexivity axioms (≈4): they run when the
  equality is reflexive and its reflexive rows are computed as a closure; when a rule
  reads the relation, ≈4 is a set of ordinary rules of Π (so lines 32–35 and 48–50
  cover them), and a hand-written equality without reflexivity has none;
* voc(F) in lines 9–12 and 29 is the values of F's domain columns (the congruence only
  replaces there);
* π(Π) of lines 13 and 32 is the original rules normalised by the old π (rule
  constants of a class that splits are changed back by the final ρ at the next
  normalisation, brief pitfall 7);
* mixed updates: B/F≈ for E⁻, then Mat≈ continues with E⁺ under π′ (pitfall 8).

Programs B/F≈ does not take (negation, aggregates, order-dependent features, functor
terms in body atoms) are maintained by Remat≈ (``equality_maintenance``).
"""

from __future__ import annotations

import time
from typing import Any

from gpu_engine.kernels.backend import INDEX
from gpu_engine.kernels.components import connected_components
from gpu_engine.kernels.join import expand
from gpu_engine.kernels.sets import argsort_keys, unique_keys

from .affected import backward
from .backward_plan import join_backward, supported
from .engine import _atoms
from .equality import domain_vars, flows_in, functional_pattern, star_edges
from .equality_explicit import Classes, members_in
from .equality_maintenance import _normal_rules
from .expr import const_value, term_vars
from .ir import Atom, Compare, Const, Rule, Var
from .plan import Role, delta_variants
from .rowset import RowSet
from .runs import RunSet
from .stats import UpdateStats

SPREAD = 2  # levels between the releases of 1, 1, 2, 4, ... backward instances of a fact
ROUTE_MAX = 1 << 16  # frontiers up to this size are routed to rules by their constants

Batch = dict[str, RowSet]


def _occurrences(run: RowSet, p: int) -> Any:
    """How often each constant occurs in column ``p`` of ``run`` (a bincount cached on
    the run beside its join indexes)."""
    key = ("occurrences", p)
    hit = run._indexes.get(key)
    if hit is None:
        hit = run.be.bincount(run.cols[p])
        run._indexes[key] = hit
    return hit


class OverBudget(Exception):
    """B/F≈ checked more facts than its budget allows (``auto`` then rematerialises)."""


def unsupported(engine: Any) -> str:
    """Why B/F≈ cannot maintain ``engine``'s program ('' when it can): besides what
    DRed≈ refuses, functor terms inside body atoms (backward instances need values)."""
    from .equality_maintenance import unsupported as dred_unsupported

    why = dred_unsupported(engine)
    if why:
        return why
    for r in engine.rules:
        for a in _atoms(r):
            if any(not isinstance(t, Var) and term_vars(t) for t in a.args):
                return "functor terms in body atoms"
    return ""


class BFEq:
    """One run of B/F≈ over an :class:`~gpu_engine.equality.EqualityEngine`
    (module docstring); :meth:`run` installs the new materialisation and ρ."""

    def __init__(self, engine: Any, e_minus: dict[str, RowSet], new_e: dict[str, RunSet],
                 stats: UpdateStats, budget: int | None = None,
                 seconds: float | None = None) -> None:
        self.engine, self.stats, self.budget = engine, stats, budget
        self.deadline = None if seconds is None else time.perf_counter() + seconds
        self.seconds = seconds
        self.be = be = engine.be
        self.xp = xp = be.xp
        self.ev = engine.evaluator
        eq = engine.equality
        self.eq = eq.relation
        self.dom = {n: tuple(p) for n, p in eq.domain.items() if p}
        self.rels = list(engine.program.relations)
        self.arity = {n: r.arity for n, r in engine.program.relations.items()}
        self.rho = engine.rho()  # π
        self.n_ids = len(self.rho)
        self.ids = xp.arange(self.n_ids, dtype=INDEX)
        self.I = {n: engine.store[n] for n in self.rels}
        self.E = new_e  # E′
        self.e_minus = e_minus
        self.refl4 = eq.reflexive and not engine.reflexive_as_rules
        self.rules = list(engine.rules)  # Π in written form
        self.norm = _normal_rules(engine, self.rules, self.rho)  # π(Π)
        self.flow = [self._flow_positions(r) for r in self.norm]
        self.members, self.offsets, self.sizes = engine.class_index()
        self.classes = Classes(self.rho, self.members, self.offsets, self.sizes)
        multi = self.sizes[self.rho] > 1
        self.multi = self.ids[multi]  # members of non-singleton classes
        self.gamma = self.ids.copy()  # line 2
        self.Gamma = list(self.rules)  # line 2: Γ := Π
        self.functional = [functional_pattern(r, self.eq) for r in self.rules]
        self.by_rel: dict[str, list[int]] = {}
        for i, r in enumerate(self.rules):
            for n in {a.relation for a in _atoms(r)}:
                self.by_rel.setdefault(n, []).append(i)
        self._r_count: Any | None = None  # |R_i| per representative (_rcount)
        # per γ label c, whether c≈c is in P \ P̂ (line 47 proves c≈c only for the others)
        self.refl_proved = xp.zeros(self.n_ids, dtype=bool)
        self._pv_img: dict[str, tuple[RunSet, RowSet, Any]] = {}
        self._minus_cache: dict[Any, tuple[RunSet, RunSet]] = {}
        self._consts: dict[Atom, tuple[tuple[int, int], ...]] = {}
        self._rconsts: tuple[Any, Any] | None = None
        empty = {n: RunSet.empty(be, self.arity[n]) for n in self.rels}
        self.D, self.O, self.C, self.S = dict(empty), dict(empty), dict(empty), dict(empty)
        self.PV, self.Y = dict(empty), dict(empty)
        self.recent: list[Batch] = []  # checked since the last line-7 scan
        # rules without body atoms hold unconditionally: their heads are proved facts
        # whose π-images are not checked yet, i.e. delayed (Y), as E′ is read by line 40
        for r in self.rules:
            if not _atoms(r):
                h = r.head.relation
                got = self._outputs(h, self.ev.evaluate(r, [], {}))
                if len(got):
                    self._add(self.Y, h, got)
        self.n_checked = 0

    def in_voc_e(self, d: Any) -> Any:
        """Mask over the constants ``d``: whether each occurs in voc(E′) (brief pitfall 4:
        E after line 4, tombstones subtracted).  The occurrence counts of each run's
        column are computed once and cached on the run (runs are immutable), so an update
        pays for the constants it asks about and for the runs that are new, not for E."""
        xp = self.xp
        total = xp.zeros(len(d), dtype=INDEX)
        for n, pos in self.dom.items():
            for sets, sign in ((self.E[n].runs, 1), (self.E[n].dead, -1)):
                for run in sets:
                    for p in pos:
                        count = _occurrences(run, p)
                        inside = d < len(count)
                        total[inside] += sign * count[d[inside]]
        return total > 0

    # --- helpers -------------------------------------------------------------------------

    def _flow_positions(self, rule: Rule) -> tuple[int, ...]:
        """Head domain positions whose variable no merged body column binds."""
        if not flows_in(rule, self.dom):
            return ()
        body = domain_vars(Rule(Atom("", ()), rule.body), self.dom)
        return tuple(p for p in self.dom.get(rule.head.relation, ())
                     if isinstance(rule.head.args[p], Var)
                     and rule.head.args[p].name not in body)  # type: ignore[union-attr]

    def _gather(self, n: str, cols: tuple[Any, ...], arr: Any) -> tuple[Any, ...]:
        pos = self.dom.get(n, ())
        return tuple(arr[c] if i in pos else c for i, c in enumerate(cols))

    def _rows(self, n: str, cols: tuple[Any, ...], count: int) -> RowSet:
        return RowSet.from_columns(self.be, tuple(cols), self.arity[n], n_rows=count)

    def _union(self, n: str, parts: list[RowSet]) -> RowSet:
        parts = [p for p in parts if len(p)]
        if not parts:
            return RowSet.empty(self.be, self.arity[n])
        if len(parts) == 1:
            return parts[0]
        if self.arity[n] == 0:
            return RowSet.from_columns(self.be, (), 0, n_rows=1)
        xp = self.xp
        return RowSet.from_columns(self.be, tuple(xp.concatenate([p.cols[i] for p in parts])
                                                  for i in range(self.arity[n])),
                                   self.arity[n])

    def _outputs(self, n: str, outs: list[Any]) -> RowSet:
        outs = [o for o in outs if o.n]
        if not outs:
            return RowSet.empty(self.be, self.arity[n])
        if self.arity[n] == 0:
            return RowSet.from_columns(self.be, (), 0, n_rows=1)
        xp = self.xp
        return RowSet.from_columns(self.be, tuple(
            xp.concatenate([o.cols[i][:o.n] for o in outs]) for i in range(self.arity[n])),
            self.arity[n])

    def _minus(self, rs: RunSet, rows: RowSet) -> RowSet:
        return rows.select(~rs.contains(rows.cols, len(rows))) if len(rs) and len(rows) \
            else rows

    def _add(self, sets: dict[str, RunSet], n: str, rows: RowSet) -> RowSet:
        """Add ``rows`` to ``sets[n]``; returns the rows that were new."""
        new = self._minus(sets[n], rows)
        if len(new):
            sets[n] = sets[n].append(new)
        return new

    def _may_hold(self, seen: dict[Any, Any], atom: Atom, rows: Any) -> bool:
        """False when some constant of ``atom`` occurs in no row of ``rows`` (a small
        frontier: a rule whose atom cannot match it is skipped).  The distinct values of
        each column are read to the host once per frontier (``seen``), so that routing a
        frontier to the rules costs a set look-up per rule and constant, not an array
        pass per rule (LUBM: 72 rules read ``TE`` with a constant predicate)."""
        if self.be.is_gpu:  # each look-up would be a synchronisation
            return True
        consts = self._consts.get(atom)
        if consts is None:
            consts = tuple((q, const_value(t, self.ev.symbols)) for q, t in enumerate(atom.args)
                           if isinstance(t, Const))
            self._consts[atom] = consts
        for q, v in consts:
            key = (id(rows), q)
            vals = seen.get(key)
            if vals is None:
                col = rows.compact().cols[q] if isinstance(rows, RunSet) else rows.cols[q]
                vals = set(self.be.to_host(_unique(self.be, col)).tolist()) \
                    if len(col) <= ROUTE_MAX else ()
                seen[key] = (rows, vals)
            else:
                vals = vals[1]
            if vals != () and v not in vals:
                return False
        return True

    def _containing(self, vals: Any, source: Any) -> Batch:
        """Every fact of ``source(n)`` with one of the values ``vals`` in a domain column
        (lines 10 and 26), found per run of the relation through the run's join index on
        the column (the first column's, or a later one a join left cached: a look-up per
        value), else by a flag over the dictionary gathered along the column
        (:meth:`RunSet.positions_with`; building an index on a later column would sort the
        run).  With a budget, the facts found are counted per relation, the largest
        first, and :class:`OverBudget` is raised before they are materialised when they
        would take the checked facts past it."""
        if not len(vals):
            return {}
        vals = _unique(self.be, vals)
        flag = self.xp.zeros(max(self.n_ids, int(vals[-1]) + 1), dtype=bool)
        flag[vals] = True
        total = 0
        found: dict[str, list[tuple[RowSet, Any]]] = {}
        for n in sorted(self.dom, key=lambda r: -len(self.I[r])):
            src = source(n)
            if not len(src):
                continue
            hits = src.positions_with(self.dom[n], vals, flag)
            if hits:
                total += sum(len(at) for _, at in hits)
                found[n] = hits
            if self.budget is not None and self.n_checked + total > self.budget:
                raise OverBudget(f"{len(vals):,} classes are split or not proved, and "
                                 f"{total:,}+ facts holding them would be checked too "
                                 f"(budget {self.budget:,})")
        out: Batch = {}
        for n, hits in found.items():
            u = self._union(n, [run.take(at) for run, at in hits])
            dead = source(n).dead
            if dead and len(u):
                u = u.select(~source(n)._in_dead(u.cols, len(u)))
            if len(u):
                out[n] = u
        return out

    # --- Algorithm 3 ---------------------------------------------------------------------

    def _rcount(self) -> Any:
        """Per representative of a non-singleton class, the number of distinct γ values of
        its members (|R_i| of Algorithm 3), for the current γ.  γ refines π and each γ
        class is labelled by a member that γ fixes (its smallest id, ``_rewrite``), so
        the count is the class's size less its members that γ moves: counted once from
        those members, then kept by ``_rewrite`` (a label merged away takes one off its
        class's count)."""
        if self._r_count is None:
            xp = self.xp
            moved = xp.flatnonzero(self.gamma != self.ids)
            cnt = self.sizes.copy()
            if len(moved):
                reps, k = xp.unique(self.rho[moved], return_counts=True)
                cnt[reps] -= k.astype(cnt.dtype, copy=False)
            self._r_count = cnt
        return self._r_count

    def _pv_image(self, n: str) -> tuple[RowSet, Any]:
        """π(P \\ P̂) of relation ``n`` with, per row, how many facts of P \\ P̂ it is
        the π-image of (cached per version of PV)."""
        pv = self.PV[n]
        hit = self._pv_img.get(n)
        if hit is not None and hit[0] is pv:
            return hit[1], hit[2]
        rows = pv.compact()
        img, cnt = RowSet.from_columns(self.be, self._gather(n, rows.cols, self.rho),
                                       self.arity[n], n_rows=len(rows), return_counts=True)
        self._pv_img[n] = (pv, img, cnt)
        return img, cnt

    def proved(self, n: str, rows: RowSet) -> tuple[Any, Any]:
        """(allProved, any proved) masks over ``rows`` (π-normal facts; Algorithm 3, the
        first also requiring F ∉ S), without enumerating γ(F^π): P \\ P̂ is γ-normal and
        γ refines π, so the facts of P \\ P̂ in γ(F^π) are those whose π-image is F, and
        γ(F^π) = R_1 × … × R_k has Π|R_i| facts (R_i: the distinct γ of F_i's class)."""
        xp = self.xp
        k = len(rows)
        if k == 0:
            z = xp.zeros(0, dtype=bool)
            return z, z
        pos = self.dom.get(n, ())
        if not pos:
            allp = anyp = self.PV[n].contains(rows.cols, k)
        else:
            img, cnt = self._pv_image(n)
            have = xp.zeros(k, dtype=INDEX)
            if len(img):
                m = img.contains(rows.cols)
                idx = xp.flatnonzero(m)
                if len(idx):
                    have[idx] = cnt[img.positions(tuple(c[idx] for c in rows.cols))]
            rc = self._rcount()
            need = xp.ones(k, dtype=INDEX)
            for p in pos:
                v = rows.cols[p]
                need = need * xp.where(self.sizes[v] > 1, rc[v], 1)
            allp, anyp = have == need, have > 0
        if len(self.S[n]):
            allp = allp & ~self.S[n].contains(rows.cols, k)
        return allp, anyp

    def _not_all_proved(self, batch: Batch) -> Batch:
        out = {}
        for n, rows in batch.items():
            allp, _ = self.proved(n, rows)
            if not bool(allp.all()):
                out[n] = rows.select(~allp)
        return out

    # --- Algorithm 1 ---------------------------------------------------------------------

    def run(self) -> None:
        """Lines 1–17, then Algorithm 2."""
        xp = self.xp
        frontier: Batch = {}
        for n in self.rels:  # lines 3-4 (E.delete done by the caller: E′)
            em = self.e_minus[n]
            if len(em):
                d = self._rows(n, self._gather(n, em.cols, self.rho), len(em))
                d = d.select(self.I[n].contains(d.cols, len(d)))
                if len(d):
                    frontier[n] = self._add(self.D, n, d)
        while frontier:  # line 5
            self.check(frontier)  # line 6
            self.scan_disproved()  # line 7
            todo = self._not_all_proved(frontier)  # line 8
            cand: dict[str, list[RowSet]] = {}
            eqr = todo.get(self.eq)
            if eqr is not None and len(eqr):  # lines 9-11
                a, b = eqr.cols
                c = a[(a == b) & (self.sizes[a] > 1)]
                found = self._containing(c, self._i_minus_o)
                if self.budget is not None and self.n_checked + sum(
                        len(g) for g in found.values()) > self.budget:
                    raise OverBudget(f"{len(c):,} classes split, and their facts would "
                                     f"be checked too (budget {self.budget:,})")
                for n, g in found.items():
                    cand.setdefault(n, []).append(g)
            if self.refl4:  # line 12
                vals = [rows.cols[p] for n, rows in todo.items() for p in self.dom.get(n, ())]
                if vals:
                    c = _unique(self.be, xp.concatenate(vals))
                    cand.setdefault(self.eq, []).append(RowSet.from_columns(self.be, (c, c), 2))
            for n, g in self.match_body(todo).items():  # lines 13-15
                cand.setdefault(n, []).append(g)
            for n, rows in todo.items():  # line 16, inside line 8's block
                self._add(self.O, n, rows)
            frontier = {}
            for n, parts in cand.items():
                u = self._union(n, parts)
                u = u.select(self.I[n].contains(u.cols, len(u))) if len(u) else u
                new = self._add(self.D, n, u)
                if len(new):
                    frontier[n] = new
            waiting = sum(len(x) for x in frontier.values())
            if self.budget is not None and self.n_checked + waiting > self.budget:
                raise OverBudget(f"{waiting:,} more doubtful facts would be checked "
                                 f"(budget {self.budget:,})")
            self._on_time()
        self.propagate_changes()  # line 17

    def _on_time(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise OverBudget(f"it ran longer than {self.seconds:.2f} s (its time budget)")

    def _i_minus_o(self, n: str) -> RunSet:
        return self._i_minus(n, self.O[n])

    def _i_minus_s(self, n: str) -> RunSet:
        return self._i_minus(n, self.S[n])

    def _i_minus(self, n: str, x: RunSet) -> RunSet:
        """I \\ x (x ⊆ I) as tombstones on I's runs, cached per version of x."""
        if not len(x):
            return self.I[n]
        hit = self._minus_cache.get((n, id(x)))
        if hit is not None and hit[0] is x:
            return hit[1]
        out = self.I[n].without(x.compact())
        self._minus_cache[(n, id(x))] = (x, out)
        return out

    def match_body(self, todo: Batch) -> Batch:
        """Lines 13–15: heads of π(Π) instances with a body atom in ``todo``, the other
        atoms in ``I \\ O``, normalised by π."""
        out: dict[str, list[RowSet]] = {}
        if not todo:
            return {}
        dd = {n: RunSet.of(r) for n, r in todo.items()}
        rest = {n: self._i_minus_o(n) for n in self.rels}
        seen: dict[Any, Any] = {}
        for rule in self.norm:
            atoms = _atoms(rule)
            outs = []
            for i, a in enumerate(atoms):
                if a.relation not in dd or not self._may_hold(seen, a, todo[a.relation]):
                    continue
                sources = [dd[b.relation] if j == i else rest[b.relation]
                           for j, b in enumerate(atoms)]
                got = self.ev.evaluate(rule, sources, {}, delta=dd[a.relation])
                self.stats.derivations += sum(o.count for o in got)
                outs.extend(got)
            if outs:
                h = rule.head.relation
                rows = self._outputs(h, outs)
                rows = self._rows(h, self._gather(h, rows.cols, self.rho), len(rows))
                out.setdefault(h, []).append(rows)
        return {n: self._union(n, p) for n, p in out.items()}

    def scan_disproved(self) -> None:
        """Line 7, incrementally: the facts checked since the last scan with no member
        of γ(G^π) proved join S (their status is final at the top level)."""
        recent, self.recent = self.recent, []
        for batch in recent:
            for n, rows in batch.items():
                _, anyp = self.proved(n, rows)
                if not bool(anyp.all()):
                    self._add(self.S, n, rows.select(~anyp))

    # --- Algorithm 4 ---------------------------------------------------------------------

    def check(self, facts: Batch) -> None:
        """checkProvability of a batch: breadth first in levels (module docstring)."""
        level = self._unchecked(facts)
        pending: dict[int, list[tuple[str, tuple[Any, ...], list[tuple[str, tuple]]]]] = {}
        step = 0
        while True:
            if level:
                for n, f in level.items():  # line 22
                    self.C[n] = self.C[n].append(f)
                    self.n_checked += len(f)
                self.recent.append(level)
                if self.budget is not None and self.n_checked > self.budget:
                    raise OverBudget(f"it checked more than {self.budget:,} facts")
                self._on_time()
                self.saturate(level)  # line 23
                still = self._not_all_proved(level)  # line 24
                self.expand(still, step, pending)  # lines 25-35
            if not pending:
                return
            step = max(step + 1, min(pending))
            level = self._unchecked(self._release(pending.pop(step)))

    def _unchecked(self, facts: Batch) -> Batch:
        """The facts not checked yet, with (lines 29–31 ahead of time) ``c≈c`` for the
        non-singleton classes of their domain values not in S: a fact with such a value
        is all proved only once γ merges the class again, so it would ask for them one
        level later anyway."""
        out = {n: r for n, f in facts.items() if len(r := self._minus(self.C[n], f))}
        vals = [r.cols[p] for n, r in out.items() for p in self.dom.get(n, ())]
        if vals:
            v = self.xp.concatenate(vals)
            v = _unique(self.be, v[self.sizes[v] > 1])
            if len(v):
                cc = RowSet.from_columns(self.be, (v, v), 2)
                cc = self._minus(self.S[self.eq], self._minus(self.C[self.eq], cc))
                if len(cc):
                    cur = out.get(self.eq)
                    out[self.eq] = cc if cur is None else self._union(self.eq, [cur, cc])
        return out

    def expand(self, still: Batch, step: int, pending: dict[int, list[Any]]) -> None:
        """Lines 25–35 for the facts of ``still`` (not all proved): the facts to check,
        as entries (owner relation, owner rows, [(relation, rows)]) by release step."""
        xp = self.xp
        now = pending.setdefault(step + 1, [])
        eqr = still.get(self.eq)
        if self.refl4 and eqr is not None and len(eqr):  # lines 25-28
            # released after the first instances of lines 29-35 (the order of the
            # premises is free; a class is usually proved by its equalities' premises,
            # and every fact with c would be checked first otherwise)
            # the facts with c are looked up at the release, for the c≈c still unproved
            a, b = eqr.cols
            c = a[a == b]
            if len(c):
                pending.setdefault(step + 1 + SPREAD, []).append((self.eq, (c, c), None))
        for n, rows in still.items():  # lines 29-31
            for p in self.dom.get(n, ()):
                v = rows.cols[p]
                ok = self.sizes[v] > 1
                if len(self.S[self.eq]):
                    ok &= ~self.S[self.eq].contains((v, v), len(v))
                sel = xp.flatnonzero(ok)
                if len(sel):
                    v = v[sel]
                    now.append((n, tuple(col[sel] for col in rows.cols),
                                [(self.eq, (v, v))]))
        seen: dict[Any, Any] = {}
        for rule, fpos in zip(self.norm, self.flow):  # lines 32-35
            h = rule.head.relation
            rows = still.get(h)
            if rows is None or not len(rows) or not self._may_hold(seen, rule.head, rows):
                continue
            heads = rows
            if fpos:  # bound to every member of the class at those positions
                cols = list(rows.cols)
                for p in fpos:
                    v = cols[p]
                    idx, at = expand(self.be, self.offsets[v], self.sizes[v])
                    cols = [col[idx] for col in cols]
                    cols[p] = self.members[at]
                heads = self._rows(h, tuple(cols), len(cols[0]) if cols else 1)
            atoms = _atoms(rule)
            wanted = tuple(sorted({v for a in atoms for t in a.args for v in term_vars(t)}))
            cols = self._instances(rule, heads, wanted)
            k = len(cols[0]) if cols else 0
            self.stats.backward += k
            self.stats.derivations += k
            if not k or not atoms:
                continue
            order = argsort_keys(self.be, cols[0])
            cols = [c[order] for c in cols]
            fact = cols[0]
            m = len(fact)
            rank = xp.arange(m, dtype=INDEX) - xp.searchsorted(fact, fact, side="left")
            delay = SPREAD * xp.floor(xp.log2(rank + 1)).astype(INDEX)
            owner_all = self._gather(h, tuple(c[fact] for c in heads.cols), self.rho)
            vals = dict(zip(wanted, cols[1:]))
            for d in self.be.to_host(_unique(self.be, delay)).tolist():
                sel = xp.flatnonzero(delay == d)
                body = []
                for a in atoms:
                    acols = tuple(vals[t.name][sel] if isinstance(t, Var)
                                  else xp.full(len(sel), const_value(t, self.ev.symbols),
                                               dtype=INDEX) for t in a.args)
                    body.append((a.relation, acols))
                pending.setdefault(step + 1 + int(d), []).append(
                    (h, tuple(c[sel] for c in owner_all), body))

    def _instances(self, rule: Rule, heads: RowSet, wanted: tuple[str, ...]) -> list[Any]:
        """Lines 32–33: the instances of ``rule`` over ``I \\ S`` whose head is one of
        ``heads``: columns (index into ``heads``, then the values of ``wanted``), by the
        backward planner shared with DRed≈ (:func:`gpu_engine.backward_plan.join_backward`:
        head bound, body atoms joined one at a time, smallest estimated fan-out first)."""
        xp = self.xp
        if not supported(rule):  # a head functor: the evaluator's own backward query
            outs = backward(self.ev, rule, heads, self._i_minus_s, self._i_minus_s, wanted)
            outs = [o for o in outs if o.n]
            if not outs:
                return []
            return [xp.concatenate([o.cols[i][:o.n] for o in outs])
                    for i in range(len(wanted) + 1)]
        b = join_backward(self.ev, rule, heads, self._i_minus_s, self.I.__getitem__, wanted)
        if b is None:
            return []
        return [b.cols["#fact"], *(b.cols[v] for v in wanted)]

    def _release(self, entries: list[Any]) -> Batch:
        """Facts of the released entries whose owner is not all proved (lines 28, 31,
        35), as a batch of π-normal facts of I; the owners' status is computed once per
        relation for all entries."""
        xp = self.xp
        deferred = [e for e in entries if e[2] is None]
        entries = [e for e in entries if e[2] is not None]
        if deferred:  # lines 25-28 for the c≈c not proved yet
            cc = self._union(self.eq, [RowSet.from_columns(self.be, o, 2)
                                       for _, o, _ in deferred])
            allp, _ = self.proved(self.eq, cc)
            c = cc.cols[0][~allp]
            if len(c):
                found = self._containing(c, self._i_minus_s)
                if self.budget is not None and self.n_checked + sum(
                        len(g) for g in found.values()) > self.budget:
                    raise OverBudget(f"{len(c):,} classes are not proved, and their facts "
                                     f"would be checked too (budget {self.budget:,})")
                for n, g in found.items():
                    for p in self.dom[n]:
                        sel = xp.flatnonzero(_isin(xp, g.cols[p], c))
                        if len(sel):
                            v = g.cols[p][sel]
                            entries.append((self.eq, (v, v),
                                            [(n, tuple(col[sel] for col in g.cols))]))
        owners: dict[str, list[tuple[tuple[Any, ...], int]]] = {}
        for owner_rel, owner, body in entries:
            m = len(body[0][1][0]) if body and body[0][1] else 1
            owners.setdefault(owner_rel, []).append((owner, m))
        done: dict[str, RowSet] = {}
        for n, parts in owners.items():  # one sort per relation, not per entry
            u = self._concat(n, parts)
            allp, _ = self.proved(n, u)
            done[n] = u.select(allp)
        bodies: dict[str, list[tuple[tuple[Any, ...], int]]] = {}
        for owner_rel, owner, body in entries:
            m = len(body[0][1][0]) if body and body[0][1] else 1
            d = done[owner_rel]
            if not len(d):
                keep = None
            elif self.arity[owner_rel] == 0:
                continue
            else:
                keep = ~d.contains(owner)
                if not bool(keep.any()):
                    continue
            sel = None if keep is None or bool(keep.all()) else xp.flatnonzero(keep)
            k = m if sel is None else len(sel)
            for n, cols in body:
                cols = cols if sel is None else tuple(c[sel] for c in cols)
                bodies.setdefault(n, []).append((cols, k))
        out = {}
        for n, p in bodies.items():
            u = self._concat(n, p)
            u = u.select(self.I[n].contains(u.cols, len(u))) if len(u) else u
            if len(u):
                out[n] = u
        return out

    def _concat(self, n: str, parts: list[tuple[tuple[Any, ...], int]]) -> RowSet:
        """The distinct rows of column tuples (each with its row count) of relation
        ``n``, sorted once."""
        total = sum(k for _, k in parts)
        if self.arity[n] == 0 or len(parts) == 1:
            return self._rows(n, parts[0][0] if self.arity[n] else (), total)
        xp = self.xp
        return self._rows(n, tuple(xp.concatenate([c[i] for c, _ in parts])
                                   for i in range(self.arity[n])), total)

    # --- Algorithm 5 ---------------------------------------------------------------------

    def saturate(self, level: Batch) -> None:
        """Lines 36–40 for a level just checked, then the forward closure (41–58)."""
        cand: dict[str, list[RowSet]] = {}
        eqr = level.get(self.eq)
        if self.refl4 and eqr is not None and len(eqr):  # lines 37-39
            a, b = eqr.cols
            c = a[a == b]
            if len(c):
                idx, at = expand(self.be, self.offsets[c], self.sizes[c])
                d = self.members[at]
                d = d[self.in_voc_e(d)]
                if len(d):
                    g = self.gamma[d]
                    cand.setdefault(self.eq, []).append(RowSet.from_columns(self.be, (g, g), 2))
        for n, rows in level.items():  # line 40
            for g in (self._explicit_members(n, rows), self._delayed_members(n, rows)):
                if g is not None and len(g):
                    cand.setdefault(n, []).append(
                        self._rows(n, self._gather(n, g.cols, self.gamma), len(g)))
        self.forward(cand)

    def _explicit_members(self, n: str, rows: RowSet) -> RowSet | None:
        """F^π ∩ E′ for the facts F of ``rows`` (:func:`equality_explicit.members_in`: a
        membership test, an expansion to the members of the classes, or E′'s index)."""
        return members_in(self.be, self.E[n], rows, self.dom.get(n, ()), self.classes)

    def _delayed_members(self, n: str, rows: RowSet) -> RowSet | None:
        """F^π ∩ Y for the facts F of ``rows``."""
        y = self.Y[n]
        if not len(y):
            return None
        yr = y.compact()
        hit = rows.contains(self._gather(n, yr.cols, self.rho)) if self.arity[n] else \
            self.xp.ones(len(yr), dtype=bool)
        return yr.select(hit)

    def forward(self, cand: dict[str, list[RowSet]]) -> None:
        """Lines 41–58 as seminaive rounds over P (module docstring)."""
        xp = self.xp
        full: list[Rule] = []
        while cand or full:
            self._on_time()
            delta: Batch = {}
            for n, parts in cand.items():  # lines 42-44: γ-normal, not processed
                u = self._union(n, parts)
                if self.dom.get(n) and len(u):
                    u = self._rows(n, self._gather(n, u.cols, self.gamma), len(u))
                u = self._minus(self.PV[n], u)
                if len(u):
                    delta[n] = u
            d_eq = delta.get(self.eq)
            if d_eq is not None and bool((d_eq.cols[0] != d_eq.cols[1]).any()):
                full += self._rewrite(delta)  # line 45: Algorithm 6
            prove: dict[str, list[RowSet]] = {}
            if self.refl4 and delta:  # line 47, joining this round's facts at once
                vals = [r.cols[p] for n, r in delta.items() for p in self.dom.get(n, ())]
                c = xp.concatenate(vals) if vals else None
                if c is not None:  # c≈c already in P \ P̂ is proved: not again
                    c = c[~self.refl_proved[c]]
                if c is not None and len(c):
                    c = _unique(self.be, c)
                    got = self._prove({self.eq: [RowSet.from_columns(self.be, (c, c), 2)]})
                    if got:  # reflexive and γ-normal: no merge, processed with the round
                        cc = self._minus(self.PV[self.eq], got[self.eq][0])
                        cur = delta.get(self.eq)
                        if cur is not None and len(cc):
                            cc = self._union(self.eq, [cur, cc])
                        if len(cc):
                            delta[self.eq] = cc
            old = dict(self.PV)
            for n, d in delta.items():
                self.PV[n] = self.PV[n].append(d)
            d_eq = delta.get(self.eq)
            if d_eq is not None:
                a, b = d_eq.cols
                self.refl_proved[a[a == b]] = True
            dd = {n: RunSet.of(d) for n, d in delta.items()}
            versions = {Role.DELTA: dd, Role.OLD: old, Role.NEW: self.PV}
            outs: dict[str, list[Any]] = {}
            for rule in full:  # lines 57-58, over V \ P̂ before this round's facts
                got = self.ev.evaluate(rule, [old[a.relation] for a in _atoms(rule)], {})
                self.stats.derivations += sum(o.count for o in got)
                outs.setdefault(rule.head.relation, []).extend(got)
            full = []
            todo = sorted({i for n in dd for i in self.by_rel.get(n, ())})
            seen: dict[Any, Any] = {}
            for i in todo:  # lines 48-50 (the rules with a body atom in the round's facts)
                rule, fp = self.Gamma[i], self.functional[i]
                atoms = _atoms(rule)
                if len(atoms) == 1 and not self._may_hold(seen, atoms[0],
                                                          delta[atoms[0].relation]):
                    continue
                if fp is not None:
                    if atoms[0].relation in dd:
                        got = self._star(rule, fp, dd[atoms[0].relation])
                        outs.setdefault(rule.head.relation, []).extend(got)
                    continue
                if len(atoms) == 1 and len(rule.body) == 1:  # a projection of Δ
                    got = self._project(rule, dd[atoms[0].relation])
                    if got is not None:
                        self.stats.derivations += got.n
                        outs.setdefault(rule.head.relation, []).append(got)
                        continue
                for p, roles in delta_variants(atoms, dd.__contains__):
                    if not self._may_hold(seen, atoms[p], delta[atoms[p].relation]):
                        continue
                    sources = [versions[role][a.relation] for a, role in zip(atoms, roles)]
                    got = self.ev.evaluate(rule, sources, {}, delta=dd[atoms[p].relation])
                    self.stats.derivations += sum(o.count for o in got)
                    outs.setdefault(rule.head.relation, []).extend(got)
            for n, o in outs.items():
                prove.setdefault(n, []).append(self._outputs(n, o))
            cand = self._prove(prove)

    def _star(self, rule: Rule, p: int, delta: RunSet) -> list[Any]:
        """``same(y1, y2) :- R(x̄, y1), R(x̄, y2)`` over V \\ P̂ for the groups x̄ with a
        fact in the round's Δ: the edges (smallest y of the group, y), whose closure is
        that of the rule's n² heads (as Mat≈'s ``EqualityEngine._star``); γ, and so P \\ P̂,
        are the same, while the n² facts a≈b, each outdated at once (P̂), are not made."""
        from .rule_eval import RuleOutput

        atom = _atoms(rule)[0]
        rows = self._select_consts(atom, self.PV[atom.relation].compact())
        d = self._select_consts(atom, delta.compact())
        if not len(d) or not len(rows):
            return []
        head, n = star_edges(self.be, atom, p, rows, d)
        self.stats.derivations += n
        return [RuleOutput(head, n)]

    def _project(self, rule: Rule, delta: RunSet) -> Any:
        """The heads of a rule with one body atom (variables and constants only) over
        Δ, as column operations (None: the rule has another shape)."""
        from .rule_eval import RuleOutput

        xp = self.xp
        a = rule.body[0]
        if not isinstance(a, Atom) or not all(isinstance(t, (Var, Const))
                                              for t in (*a.args, *rule.head.args)):
            return None
        rows = delta.compact()
        mask = xp.ones(len(rows), dtype=bool)
        first: dict[str, Any] = {}
        for i, t in enumerate(a.args):
            c = rows.cols[i]
            if isinstance(t, Const):
                mask &= c == const_value(t, self.ev.symbols)
            elif t.name in first:
                mask &= first[t.name] == c
            else:
                first[t.name] = c
        if any(isinstance(t, Var) and t.name not in first for t in rule.head.args):
            return None
        sel = xp.flatnonzero(mask)
        n = len(sel)
        cols = tuple(first[t.name][sel] if isinstance(t, Var)
                     else xp.full(n, const_value(t, self.ev.symbols), dtype=INDEX)
                     for t in rule.head.args)
        return RuleOutput(cols, n)

    def _select_consts(self, atom: Atom, rows: RowSet) -> RowSet:
        mask = None
        for i, t in enumerate(atom.args):
            if not isinstance(t, Var):
                m = rows.cols[i] == const_value(t, self.ev.symbols)
                mask = m if mask is None else mask & m
        return rows if mask is None else rows.select(mask)

    def _prove(self, heads: dict[str, list[RowSet]]) -> dict[str, list[RowSet]]:
        """Algorithm 7 for a batch: π(F) ∈ C → P (the next round), else Y."""
        out: dict[str, list[RowSet]] = {}
        for n, parts in heads.items():
            rows = self._union(n, parts)
            if not len(rows):
                continue
            if not len(self.C[n]):
                self._add(self.Y, n, rows)
                continue
            hit = self.C[n].contains(self._gather(n, rows.cols, self.rho), len(rows))
            if bool(hit.any()):
                out[n] = [rows.select(hit)]
            if not bool(hit.all()):
                self._add(self.Y, n, rows.select(~hit))
        return out

    # --- Algorithm 6 ---------------------------------------------------------------------

    def _rewrite(self, delta: Batch) -> list[Rule]:
        """rewrite(a, b) for every non-reflexive equality of ``delta`` at once: γ merges
        by connected components (smallest id, line 51-52), outdated rows of PV leave it
        (P̂) and their γ-images join ``delta`` (53–54), ``delta`` is renormalised, and Γ
        is renormalised; returns the rules whose body changed (55–58)."""
        xp = self.xp
        a, b = delta[self.eq].cols
        off = a != b
        a, b = self.gamma[a[off]], self.gamma[b[off]]
        verts = _unique(self.be, xp.concatenate([a, b]))
        ia, ib = xp.searchsorted(verts, a), xp.searchsorted(verts, b)
        method = "array" if len(verts) < (1 << 16) else "auto"
        label = verts[connected_components(self.be, ia, ib, len(verts), method=method)]
        sel = label != verts
        mv, to = verts[sel], label[sel]  # the γ labels merged away (sorted), their new label
        ids, owner = self._rule_constants()  # lines 55-56: the rules whose constants moved
        changed = self.be.to_host(_unique(self.be, owner[_isin(xp, self.gamma[ids], mv)])
                                  ).tolist() if len(ids) and len(mv) else []
        # γ := relabel ∘ γ where it changes: the members x with γ(x) ∈ mv, all in the π
        # classes of mv (γ refines π), so the update reads those classes, not the
        # dictionary (γ is changed in place: nothing keeps the old one)
        reps = _unique(self.be, self.rho[mv])
        _, at = expand(self.be, self.offsets[reps], self.sizes[reps])
        m = self.members[at]
        gm = self.gamma[m]
        i = xp.minimum(xp.searchsorted(mv, gm), max(len(mv) - 1, 0))
        hit = xp.flatnonzero(mv[i] == gm) if len(mv) else i[:0]
        self.gamma[m[hit]] = to[i[hit]]
        if self._r_count is not None and len(mv):  # each label merged away: one γ class less
            r, k = xp.unique(self.rho[mv], return_counts=True)
            self._r_count[r] -= k.astype(self._r_count.dtype, copy=False)
        moved = xp.zeros(self.n_ids, dtype=bool)  # by γ value: the labels merged away
        moved[mv] = True
        self.refl_proved[mv] = False  # their c≈c rows leave P \ P̂ below (P̂)
        for n, pos in self.dom.items():  # lines 53-54
            pv = self.PV[n]
            parts = [delta[n]] if n in delta else []
            if len(pv):
                rows = pv.compact()
                mask = moved[rows.cols[pos[0]]]
                for p in pos[1:]:
                    mask |= moved[rows.cols[p]]
                if bool(mask.any()):
                    out = rows.select(mask)
                    self.PV[n] = RunSet.of(rows.select(~mask))
                    parts.append(out)
            if parts:
                u = self._union(n, parts)
                u = self._rows(n, self._gather(n, u.cols, self.gamma), len(u))
                u = self._minus(self.PV[n], u)
                if len(u):
                    delta[n] = u
                else:
                    delta.pop(n, None)
        full = []
        for i in changed:
            r, cur = _normal_rules(self.engine, [self.rules[i]], self.gamma)[0], self.Gamma[i]
            if r != cur:
                if r.body != cur.body:
                    full.append(r)
                self.Gamma[i] = r
        return full

    def _rule_constants(self) -> tuple[Any, Any]:
        """(dictionary ids of the symbol constants of Π's atoms and comparisons, the index
        of the rule of each), computed once: a rule of Γ changes only when γ moves one
        of its constants (line 55), so Γ is renormalised for those rules alone."""
        if self._rconsts is None:
            syms = self.engine.symbols
            ids: list[int] = []
            owner: list[int] = []
            for i, r in enumerate(self.rules):
                terms = [t for lit in (r.head, *r.body) for t in getattr(lit, "args", ())]
                terms += [t for lit in r.body if isinstance(lit, Compare)
                          for t in (lit.left, lit.right)]
                for t in terms:
                    if isinstance(t, Const) and t.type == "symbol":
                        cid = syms.encode(str(t.value))
                        if cid < self.n_ids:
                            ids.append(cid)
                            owner.append(i)
            xp = self.xp
            self._rconsts = (xp.asarray(ids, dtype=INDEX), xp.asarray(owner, dtype=INDEX))
        return self._rconsts

    # --- Algorithm 2 ---------------------------------------------------------------------

    def propagate_changes(self) -> None:
        """Lines 18–21: π′ and I′ = (I \\ D) ∪ π′(P \\ P̂); installs them."""
        xp = self.xp
        engine = self.engine
        chk = xp.zeros(self.n_ids, dtype=bool)
        ce = self.C[self.eq].compact()
        if len(ce):
            a, b = ce.cols
            chk[a[a == b]] = True
        touched = chk[self.rho]
        if bool(((self.gamma != self.ids) & ~touched).any()):  # brief pitfall 6
            raise AssertionError("B/F≈: γ changed a class whose c≈c was not checked")
        pi2 = xp.where(touched, self.gamma, self.rho)
        store: dict[str, RunSet] = {}
        deleted = added = rederived = 0
        for n in self.rels:
            i_old = self.I[n]
            d = self.D[n].compact()
            keep = i_old.without(d) if len(d) else i_old
            pv = self.PV[n].compact()
            new = self._rows(n, self._gather(n, pv.cols, pi2), len(pv)) if len(pv) else pv
            back = new.select(d.contains(new.cols)) if len(d) and len(new) else \
                RowSet.empty(self.be, self.arity[n])
            new = keep.new_rows(new) if len(new) else new
            rederived += len(back)
            added += len(new) - len(back)
            deleted += len(d) - len(back)
            st = keep.append(new) if len(new) else keep
            store[n] = st.compacted() if st.worth_compacting() else st
        engine.set_rho(pi2)
        engine.store = store
        s = self.stats
        s.algorithm = "b/f≈"
        s.overdeleted = sum(len(x) for x in self.D.values())
        s.rederived = rederived
        s.added = added
        s.checked = self.n_checked
        s.proved = sum(len(x) for x in self.PV.values())
        s.disproved = sum(len(x) for x in self.S.values())
        split = int(xp.count_nonzero(touched & (pi2 != self.rho)))
        s.note = (f"B/F≈: {s.overdeleted:,} doubtful, {s.checked:,} checked, "
                  f"{s.proved:,} proved, {s.disproved:,} disproved, {deleted:,} deleted, "
                  f"{added:,} re-added; {split:,} constants left a split class")


def _unique(be: Any, values: Any) -> Any:
    """Sorted distinct values by sorting (NumPy's hash-based ``unique`` is slower on
    integer columns; ``kernels.sets.unique_keys``)."""
    return unique_keys(be, values)


def _isin(xp: Any, a: Any, sorted_vals: Any) -> Any:
    i = xp.searchsorted(sorted_vals, a)
    i = xp.minimum(i, len(sorted_vals) - 1)
    return sorted_vals[i] == a


def bf_eq(engine: Any, e_minus: dict[str, RowSet], new_e: dict[str, RunSet],
          stats: UpdateStats, budget: int | None = None, seconds: float | None = None
          ) -> None:
    """B/F≈ for E⁻ (E′ = ``new_e`` already without it); installs ρ′ and I′ on ``engine``.
    Raises :class:`OverBudget` (nothing installed) past ``budget`` checked facts or
    ``seconds``."""
    BFEq(engine, e_minus, new_e, stats, budget, seconds).run()
    engine.explicit = new_e
    engine.counters = {}
    engine.module_state = {}
    engine.materialised = True
