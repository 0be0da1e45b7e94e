"""Modules of recursive rules (paper 002, §4-6): seminaive, transitive closure (TC) and
symmetric-transitive closure (STC).

A recursive stratum's rules are split into modules, each with the four plug-in functions
of paper 002: ``add`` (Definition 3), ``delete`` (Definition 6), ``rederive``
(Definition 7) and ``diff`` (Definition 5).  MAT-MOD and DRed^c-MOD (Algorithms 2-3,
:mod:`gpu_engine.modular`) drive them.  :func:`plan_modules` recognises

* ``R(x,z) :- R(x,y), R(y,z).`` as a **TC** module (Algorithms 4-6), keeping the set X_R
  of R facts with a derivation outside the module;
* that rule together with ``R(y,x) :- R(x,y).`` (and optionally the reflexivity rules
  ``R(x,x) :- R(x,y).`` / ``R(y,y) :- R(x,y).``, which the closure implies) as an
  **STC** module (Algorithms 7-9), keeping the connected components C_R and the set Y_R.
  Soufflé ``eqrel`` relations are closed by exactly these rules;

and puts the stratum's other recursive rules into one **seminaive** module.  Strata with
no TC/STC module keep the plain seminaive evaluation and DRed^c of paper 000.

Facts are sorted row sets; every step is a join, a set operation or a component pass
(:mod:`kernels.components`): no per-fact Python.  Module state (X_R; C_R as labels over a
sorted vertex array) is immutable from the caller's view: each function that changes it
installs new arrays, so an update that fails can fall back to the previous state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpu_engine.kernels import components as CC
from gpu_engine.kernels.backend import INDEX, Backend
from gpu_engine.kernels.sets import unique_keys

from .affected import VersionOf, affected, rederivable
from .ir import Atom, Rule, Var
from .rowset import RowSet, union_rows
from .rule_eval import RuleEvaluator, RuleOutput
from .runs import RunSet
from .stratify import Stratum
from .views import View

Facts = dict[str, RowSet]
ZeroNr = Callable[[str, RowSet], Any]  # mask over rows of I: non-recursive counter is zero


# --- recognising modules ----------------------------------------------------------------


def _vars(atom: Atom) -> tuple[str, ...] | None:
    """The variable names of a binary atom (None if not all distinct variables)."""
    if len(atom.args) != 2 or not all(isinstance(t, Var) for t in atom.args):
        return None
    names = tuple(t.name for t in atom.args)  # type: ignore[union-attr]
    return names if len(set(names)) == 2 else None


def _transitive(rule: Rule) -> str | None:
    """R if the rule is ``R(x,z) :- R(x,y), R(y,z).`` (in any body order)."""
    body = rule.body
    if len(body) != 2 or not all(isinstance(a, Atom) for a in body):
        return None
    r = rule.head.relation
    h = _vars(rule.head)
    a, b = (_vars(x) for x in body)  # type: ignore[arg-type]
    if h is None or a is None or b is None or any(x.relation != r for x in body):  # type: ignore
        return None
    x, z = h
    for p, q in ((a, b), (b, a)):
        if p[0] == x and q[1] == z and p[1] == q[0] and p[1] not in (x, z):
            return r
    return None


def _symmetric(rule: Rule) -> str | None:
    """R if the rule is ``R(y,x) :- R(x,y).``."""
    if len(rule.body) != 1 or not isinstance(rule.body[0], Atom):
        return None
    h, b = _vars(rule.head), _vars(rule.body[0])
    if h is None or b is None or rule.body[0].relation != rule.head.relation:
        return None
    return rule.head.relation if h == (b[1], b[0]) else None


def _reflexive(rule: Rule) -> str | None:
    """R if the rule is ``R(x,x) :- R(x,y).`` or ``R(y,y) :- R(x,y).``."""
    if len(rule.body) != 1 or not isinstance(rule.body[0], Atom):
        return None
    head, b = rule.head, _vars(rule.body[0])
    if b is None or rule.body[0].relation != head.relation or len(head.args) != 2:
        return None
    u, v = head.args
    if isinstance(u, Var) and isinstance(v, Var) and u.name == v.name and u.name in b:
        return head.relation
    return None


@dataclass
class ModulePlan:
    """How one recursive stratum's rules are grouped: ``kind`` is ``tc``, ``stc`` or
    ``seminaive``; ``relation`` the closed relation of a TC/STC module."""

    kind: str
    rules: list[Rule]
    relation: str | None = None


def plan_modules(s: Stratum) -> list[ModulePlan] | None:
    """The modules of stratum ``s``, or None when it has no TC/STC module."""
    if not s.recursive:
        return None
    trans: dict[str, Rule] = {}
    sym: dict[str, Rule] = {}
    refl: dict[str, list[Rule]] = {}
    for rule in s.recursive_rules:
        if (r := _transitive(rule)) and r not in trans:
            trans[r] = rule
        elif (r := _symmetric(rule)) and r not in sym:
            sym[r] = rule
        elif r := _reflexive(rule):
            refl.setdefault(r, []).append(rule)
    if not trans:
        return None
    plans: list[ModulePlan] = []
    used: set[int] = set()
    for r, t in trans.items():
        if r in sym:
            rules = [t, sym[r], *refl.get(r, [])]
            plans.append(ModulePlan("stc", rules, r))
        else:
            rules = [t]
            plans.append(ModulePlan("tc", rules, r))
        used.update(id(x) for x in rules)
    rest = [x for x in s.recursive_rules if id(x) not in used]
    if rest:
        plans.append(ModulePlan("seminaive", rest))
    return plans


# --- small helpers over row sets and views ----------------------------------------------

_U, _V, _W = Var("u"), Var("v"), Var("w")
# X(u,v), Q(v,w) -> (u,w): extend a set of pairs on the left (or right) by one edge
_COMPOSE = Rule(Atom("#o", (_U, _W)), (Atom("#l", (_U, _V)), Atom("#r", (_V, _W))))


def compose(ev: RuleEvaluator, left: Any, right: Any, delta: Any) -> RowSet:
    """The distinct pairs (u, w) with (u, v) in ``left`` and (v, w) in ``right``;
    ``delta`` (one of the two) is scanned, the other probed through its cached index."""
    outs = ev.evaluate(_COMPOSE, [left, right], {}, delta=delta)
    return _rows(ev.be, 2, outs)


def _rows(be: Backend, arity: int, outs: list[RuleOutput]) -> RowSet:
    if not outs:
        return RowSet.empty(be, arity)
    cols = tuple(be.xp.concatenate([o.cols[c] for o in outs]) for c in range(arity))
    return RowSet.from_columns(be, cols, arity, sum(o.n for o in outs))


def view_has(view: View, rows: RowSet) -> Any:
    """Mask over ``rows``: which are in the view."""
    n = len(rows)
    xp = rows.be.xp
    inside = xp.zeros(n, dtype=bool)
    for inc in view.include:
        inside |= inc.contains(rows.cols, n)
    for ex in view.exclude:
        inside &= ~ex.contains(rows.cols, n)
    return inside


def view_rows_with(be: Backend, view: View, values: Any) -> RowSet:
    """The rows of a view whose first column holds one of ``values`` (sorted, distinct),
    as one sorted run: through each run's index on the column, so the cost follows the
    rows found rather than the view's size."""
    out = RowSet.empty(be, view.arity)
    for inc in view.include:
        part = inc.rows_with((0,), values)
        for ex in view.exclude:
            if len(part):
                part = part.select(~ex.contains(part.cols, len(part)))
        if len(part):
            out = part if len(out) == 0 else out.merge(part.minus(out))
    return out


def _union(a: RowSet, b: RowSet) -> RowSet:
    if len(a) == 0:
        return b
    if len(b) == 0:
        return a
    return a.union(b)[0]


# --- the seminaive module ---------------------------------------------------------------


@dataclass
class SeminaiveModule:
    """Rules evaluated by seminaive evaluation (paper 002 §4.1, the default module).

    In a stratum with TC/STC modules it keeps no recursive counters: ``rederive`` finds
    the one-step rederivable facts by evaluating its rules backwards and closes them
    forwards inside Δ (Definition 7 asks for rederivation in one or more steps)."""

    rules: list[Rule]
    kind: str = "seminaive"
    derivations: int = 0

    def heads(self) -> set[str]:
        return {r.head.relation for r in self.rules}

    def _step(self, ev: RuleEvaluator, pos: VersionOf, neg: VersionOf,
              P: dict[str, RunSet], N: dict[str, RunSet] | None = None) -> Facts:
        outs: dict[str, list[RuleOutput]] = {}
        for rule in self.rules:
            o = affected(ev, rule, pos, neg, P, N)
            if o:
                outs.setdefault(rule.head.relation, []).extend(o)
                self.derivations += sum(x.count for x in o)
        return {r: _rows(ev.be, len(o[0].cols), o) for r, o in outs.items()}

    def add(self, ev: RuleEvaluator, pos: VersionOf, neg: VersionOf, delta: Facts,
            arity: dict[str, int]) -> Facts:
        """Definition 3 by seminaive evaluation: J_0 = ∅, Δ_0 = Δ,
        Δ_{i+1} = Π[I^p ∪ J_i, I^n : Δ_i] \\ (I^p ∪ J_i)."""
        J: dict[str, RunSet] = {}

        def cur(name: str) -> View:
            j = J.get(name)
            return pos(name) if j is None else pos(name).plus(j)

        d = {r: RunSet.of(x) for r, x in delta.items() if len(x)}
        while d:
            heads = self._step(ev, cur, neg, d)
            d = {}
            for r, rows in heads.items():
                fresh = rows.select(~view_has(cur(r), rows))
                if len(fresh):
                    d[r] = RunSet.of(fresh)
            for r, x in d.items():
                J[r] = J[r].append(x.runs[0]) if r in J else x
        return {r: x.compact() for r, x in J.items()}

    def delete(self, ev: RuleEvaluator, pos: VersionOf, neg: VersionOf, delta: Facts,
               zero_nr: ZeroNr) -> Facts:
        """Definition 6 at its lower bound (DRed^c's overdeletion, InvSemi^c): close Δ
        under Π[I^p, I^n : ·], keeping the facts whose non-recursive counter is zero."""
        seen: dict[str, RowSet] = {r: x for r, x in delta.items() if len(x)}
        J: dict[str, RowSet] = {}
        d = {r: RunSet.of(x) for r, x in seen.items()}
        while d:
            heads = self._step(ev, pos, neg, d)
            d = {}
            for r, rows in heads.items():
                rows = rows.select(view_has(pos(r), rows))
                if r in seen:
                    rows = rows.minus(seen[r])
                rows = rows.select(zero_nr(r, rows))
                if len(rows):
                    seen[r] = _union(seen.get(r, RowSet.empty(ev.be, rows.arity)), rows)
                    J[r] = _union(J.get(r, RowSet.empty(ev.be, rows.arity)), rows)
                    d[r] = RunSet.of(rows)
        return J

    def rederive(self, ev: RuleEvaluator, survivors: VersionOf, neg: VersionOf,
                 delta: Facts) -> Facts:
        """Definition 7: the smallest J ⊆ Δ with Π[(I^p \\ Δ) ∪ J, I^n] ∩ Δ ⊆ J —
        one step backwards from the survivors, then forwards inside Δ."""
        J: dict[str, RowSet] = {}
        for r, cand in delta.items():
            if not len(cand):
                continue
            hit = ev.be.xp.zeros(len(cand), dtype=bool)
            for rule in self.rules:
                if rule.head.relation != r or bool(hit.all()):
                    continue
                open_ = ev.be.xp.flatnonzero(~hit)
                got, matched = rederivable(ev, rule, cand.select(~hit), survivors, neg)
                self.derivations += matched
                hit[open_[got]] = True
            if bool(hit.any()):
                J[r] = cand.select(hit)
        d = {r: RunSet.of(x) for r, x in J.items()}

        def cur(name: str) -> View:
            j = J.get(name)
            return survivors(name) if j is None else survivors(name).plus(RunSet.of(j))

        while d:
            heads = self._step(ev, cur, neg, d)
            d = {}
            for r, rows in heads.items():
                if r not in delta:
                    continue
                rows = rows.select(delta[r].has(rows))
                if r in J:
                    rows = rows.minus(J[r])
                if len(rows):
                    d[r] = RunSet.of(rows)
            for r, x in d.items():
                J[r] = _union(J.get(r, RowSet.empty(ev.be, x.arity)), x.runs[0])
        return J

    def diff(self, ev: RuleEvaluator, pos: VersionOf, neg: VersionOf,
             P: dict[str, RunSet], N: dict[str, RunSet]) -> Facts:
        """Definition 5: Π[I^p : Δ^p, Δ^n] for changes of lower strata."""
        return self._step(ev, pos, neg, P, N)


# --- the TC module (Algorithms 4-6) -----------------------------------------------------


@dataclass
class TCModule:
    """``R(x,z) :- R(x,y), R(y,z).`` with X_R, the R facts derived outside the module.

    Invariant (paper 002, Claims 11-13): the transitive closure of X_R is the set of R
    facts, so new facts only need extending by X_R edges, never by R facts.

    We implement the mirror image of Algorithms 4 and 5: Q is extended on the right,
    Q(u,v), X_R(v,w) -> R(u,w), after one extension of Δ on the left by R facts.  Rule (4)
    is symmetric in its two atoms, so X_R may replace either of them (the rewriting in
    §5); on DAG-R 10k/100k the right-hand version ran 2.7× faster (13.6 s against 37 s on
    the CPU), as paths of a random DAG fan out less to the right."""

    relation: str
    X: RunSet
    kind: str = "tc"
    derivations: int = 0

    def heads(self) -> set[str]:
        return {self.relation}

    def add(self, ev: RuleEvaluator, Ip: View, delta: RowSet) -> RowSet:
        """Algorithm 4."""
        be = ev.be
        if not len(delta):
            return RowSet.empty(be, 2)
        self.include(delta)  # line 41: X_R := X_R ∪ Δ
        d = RunSet.of(delta)
        # lines 42-43: R(u,v) ∈ Δ, R(v,w) ∈ I^p \ Δ
        first = compose(ev, Ip.minus(d), d, delta=d)
        self.derivations += len(first)
        first = first.select(~view_has(Ip, first))
        J = RunSet.of(first)  # a log-structured run set: "∉ J" costs O(|Q| log |J|)
        q = _union(delta, first)
        while len(q):  # lines 44-47 (mirrored): extend Q on the right by X_R edges
            qs = RunSet.of(q)
            ext = compose(ev, qs, self._joined(len(q)), delta=qs)
            self.derivations += len(ext)
            q = J.new_rows(ext.select(~view_has(Ip, ext)))
            J = J.append(q)
        return J.compact()

    def delete(self, ev: RuleEvaluator, Ip: View, delta: RowSet, zero_nr: ZeroNr) -> RowSet:
        """Algorithm 5 (S: the facts seen; J: those whose non-recursive counter is 0)."""
        be = ev.be
        if not len(delta):
            return RowSet.empty(be, 2)
        self._drop(delta)  # line 49
        d = RunSet.of(delta)
        S = RunSet.of(delta)  # run sets: "∉ S" costs O(|Q| log |S|), not O(|S|)
        J: list[RowSet] = []
        q = delta  # line 49: Q := Δ
        ext = compose(ev, Ip, d, delta=d)  # lines 50-52 (mirrored): R(u,v) ∈ I^p, R(v,w) ∈ Δ
        first = True
        while True:
            self.derivations += len(ext)
            ext = S.new_rows(ext.select(view_has(Ip, ext)))
            S = S.append(ext)
            J.append(ext.select(zero_nr(self.relation, ext)))
            q = _union(delta, ext) if first else ext
            first = False
            if not len(q):
                break
            qs = RunSet.of(q)  # lines 53-57 (mirrored): Q(u,v), X_R(v,w)
            ext = compose(ev, qs, self._joined(len(q)), delta=qs)
        return union_rows(be, 2, J)  # disjoint from Δ ⊆ S: line 58's J \ Δ

    def include(self, rows: RowSet) -> None:
        """X_R := X_R ∪ rows (R facts that gained a derivation outside the module)."""
        if len(rows):
            self.X = self.X.append(self.X.new_rows(rows))

    def restrict(self, gone: RunSet) -> None:
        """X_R := X_R \\ (D \\ A) before rederivation: Claim 13 needs the closure of X_R
        to be the surviving R facts, and Algorithm 5 line 49 removes only the Δ it was
        given (not the facts the module overdeleted itself, which X_R may hold when
        another module also derived them).  This is our reading; see docs."""
        if len(gone):
            self._drop(gone.compact())

    def _drop(self, rows: RowSet) -> None:
        """X_R := X_R \\ rows, as a tombstone set of the rows of X_R among them: no pass
        over X_R until the tombstones are worth a rewrite (:meth:`RunSet.without`)."""
        if len(rows) and len(self.X):
            x = self.X.without(rows.select(self.X.has(rows)))
            self.X = x.compacted() if x.worth_compacting() else x

    def _joined(self, n: int) -> RunSet:
        """X_R for a join with ``n`` frontier rows: rewritten without its tombstones first
        when they would be tested against the join's rows and the frontier is at least an
        eighth of X_R (a rewrite then costs no more than the join reads), so a small
        update keeps X_R as it is and a large one joins a plain run."""
        if self.X.dead and 8 * n >= len(self.X):
            self.X = self.X.compacted()
        return self.X

    def rederive(self, ev: RuleEvaluator, delta: RowSet) -> RowSet:
        """Algorithm 6: R(u, w) for the sources u of Δ and every w reachable from u along
        X_R, intersected with Δ."""
        be = ev.be
        if not len(delta) or not len(self.X):
            return RowSet.empty(be, 2)
        src = unique_keys(be, delta.cols[0])
        frontier = self.X.rows_with((0,), src)  # one X_R edge from a source
        seen = RunSet.of(frontier)
        while len(frontier):
            fs = RunSet.of(frontier)
            ext = compose(ev, fs, self._joined(len(frontier)), delta=fs)  # one edge more
            self.derivations += len(ext)
            frontier = seen.new_rows(ext)
            seen = seen.append(frontier)
        out = seen.compact()
        return out.select(delta.has(out))

    def diff(self) -> RowSet:
        """Definition 5: the module's only rule reads R alone, so Δ^p, Δ^n (lower strata)
        change nothing."""
        return RowSet.empty(self.X.be, 2)


# --- the STC module (Algorithms 7-9) ----------------------------------------------------


@dataclass
class STCModule:
    """Symmetric-transitive closure of R as connected components.

    ``verts`` is the sorted array of vertices seen so far, ``label[i]`` the component of
    ``verts[i]`` (the position of its smallest vertex), or -1 when the vertex is in no
    component (its component was overdeleted and not rebuilt)."""

    relation: str
    verts: Any
    label: Any
    Y: RowSet
    budget_rows: int = 1 << 25
    kind: str = "stc"
    derivations: int = 0

    def heads(self) -> set[str]:
        return {self.relation}

    @staticmethod
    def empty(be: Backend, relation: str, budget_rows: int) -> STCModule:
        z = be.xp.zeros(0, dtype=INDEX)
        return STCModule(relation, z, z, RowSet.empty(be, 2), budget_rows)

    def close_edges(self, be: Backend, edges: RowSet) -> RowSet:
        """CLOSEEDGES (Algorithm 7, lines 65-76): merge the components joined by
        ``edges`` (creating singleton components for new vertices) and return the pairs
        that became connected: R(u, u) for new vertices (lines 69, 71) and R(u', v') for
        u', v' in two merged components (line 75)."""
        xp = be.xp
        if not len(edges):
            return RowSet.empty(be, 2)
        ends = xp.concatenate([edges.cols[0], edges.cols[1]])
        fresh = unique_keys(be, ends, overwrite=True)
        fresh = fresh[~_isin(xp, fresh, self.verts)]
        if len(fresh):  # new vertices: singleton components
            verts = xp.concatenate([self.verts, fresh])
            order = xp.argsort(verts, kind="stable")
            old_pos = xp.empty(len(verts), dtype=INDEX)
            old_pos[order] = xp.arange(len(verts), dtype=INDEX)  # old index -> new index
            label = xp.concatenate([self.label, xp.full(len(fresh), -2, dtype=INDEX)])
            alive = label >= 0
            label = xp.where(alive, old_pos[xp.where(alive, label, 0)], label)
            verts, label = verts[order], label[order]
        else:
            verts, label = self.verts, self.label.copy()
        n = len(verts)
        a = xp.searchsorted(verts, edges.cols[0])
        b = xp.searchsorted(verts, edges.cols[1])
        on_edge = xp.zeros(n, dtype=bool)
        on_edge[a] = True
        on_edge[b] = True
        # lines 68-71: a vertex of an edge in no component gets a singleton component
        born = (label < 0) & on_edge
        label = xp.where(born, xp.arange(n, dtype=INDEX), label)
        # lines 72-73: components joined by the edges, as a graph over their roots
        ra, rb = label[a], label[b]
        roots = unique_keys(be, xp.concatenate([ra, rb]), overwrite=True)
        comp = CC.connected_components(be, xp.searchsorted(roots, ra),
                                       xp.searchsorted(roots, rb), len(roots))
        new_root = roots[comp]  # the smallest root of the merged component
        remap = xp.arange(n, dtype=INDEX)
        remap[roots] = new_root
        old_label = label
        label = xp.where(label >= 0, remap[xp.maximum(label, 0)], -1)
        out = []
        if bool(born.any()):
            idx = xp.flatnonzero(born)
            out.append((verts[idx], verts[idx]))  # R(u, u), lines 69 and 71
        # components that merged
        changed = unique_keys(be, new_root[new_root != roots], overwrite=True)
        if len(changed):  # lines 74-75: pairs across the merged components
            members = xp.flatnonzero(_isin(xp, label, changed))
            key_g, key_p = label[members], old_label[members]
            order = xp.lexsort(xp.stack([key_p, key_g]))
            members, key_g, key_p = members[order], key_g[order], key_p[order]
            for i, j in CC.iter_pairs(be, key_g, key_p, self.budget_rows):
                out.append((verts[members[i]], verts[members[j]]))
        self.verts, self.label = verts, label
        if not out:
            return RowSet.empty(be, 2)
        cols = (xp.concatenate([o[0] for o in out]), xp.concatenate([o[1] for o in out]))
        self.derivations += len(cols[0])
        return RowSet.from_columns(be, cols, 2)

    def add(self, ev: RuleEvaluator, Ip: View, delta: RowSet) -> RowSet:
        """Algorithm 7: CLOSEEDGES(Δ) \\ I^p."""
        J = self.close_edges(ev.be, delta)
        return J.select(~view_has(Ip, J)) if len(J) else J

    def delete(self, ev: RuleEvaluator, Ip: View, delta: RowSet, zero_nr: ZeroNr) -> RowSet:
        """Algorithm 8: every component holding an edge of Δ is removed; its pairs with a
        zero non-recursive counter are overdeleted, the others kept in Y_R."""
        be, xp = ev.be, ev.be.xp
        if not len(delta) or not len(self.verts):
            return RowSet.empty(be, 2)
        a = xp.searchsorted(self.verts, delta.cols[0])
        a = xp.minimum(a, len(self.verts) - 1)
        ok = self.verts[a] == delta.cols[0]
        lab = self.label[a[ok]]
        dead = unique_keys(be, lab[lab >= 0], overwrite=True)
        if not len(dead):
            return RowSet.empty(be, 2)
        # line 79: u', v' ∈ U, read from the R facts of I^p (Close(C_R) ∪ Y_R) whose first
        # vertex is in a removed component, through the index on that column: the pass
        # costs the removed components' pairs, not the relation (two passes over every R
        # fact before, a sixth of a 1,000-fact deletion on LUBM(10) LUBM_LE)
        gone = _isin(xp, self.label, dead)
        pairs = view_rows_with(be, Ip, self.verts[gone])
        self.derivations += len(pairs)
        z = zero_nr(self.relation, pairs)
        J = pairs.select(z)  # line 80
        keep = pairs.select(~z)  # line 81
        self.Y = _union(self.Y, keep)
        label = self.label.copy()
        label[gone] = -1  # line 82
        self.label = label
        return J.minus(delta)  # line 83

    def rederive(self, ev: RuleEvaluator, delta: RowSet) -> RowSet:
        """Algorithm 9: CLOSEEDGES(Y_R) ∩ Δ, then Y_R := ∅."""
        be = ev.be
        J = self.close_edges(be, self.Y)
        self.Y = RowSet.empty(be, 2)
        return J.select(delta.has(J)) if len(J) and len(delta) else RowSet.empty(be, 2)

    def diff(self) -> RowSet:
        """Definition 5: both rules read R alone (see :meth:`TCModule.diff`)."""
        return RowSet.empty(self.Y.be, 2)


def _isin(xp: Any, values: Any, pool: Any) -> Any:
    """Mask: which of ``values`` occur in the array ``pool``."""
    if len(pool) == 0 or len(values) == 0:
        return xp.zeros(len(values), dtype=bool)
    s = xp.sort(pool)
    i = xp.minimum(xp.searchsorted(s, values), len(s) - 1)
    return s[i] == values
