"""Equality by rewriting: materialisation with representatives (Mat≈, paper 001 §2).

A relation declared ``equality`` (:class:`gpu_engine.ir.Equality`) is a congruence over
the *domain* columns: reflexive, symmetric, transitive, and replacing equal constants in
every domain column of every relation.  Instead of deriving every consequence of the
replacement axioms (a class of n equal constants costs n³ derivations when they are
spelled out as rules) the engine keeps

* ρ, one int64 array over the dictionary ids: ``ρ[c]`` is the representative of ``c``'s
  class, the smallest id of the class (so results are deterministic);
* relations in normal form: every domain column holds representatives only, and the
  equality relation holds only reflexive rows ``(r, r)``.

The answers are the expansion: a rewritten row ``(c1..ck)`` stands for the product of the
classes of its domain columns (:meth:`EqualityEngine.expanded_columns`, columnar in
:mod:`gpu_engine.equality_expand`; :meth:`EqualityEngine.expanded_size` counts it
without materialising it).

Evaluation (the paper's saturate, lines 36–59, and the AAAI'15 algorithm, run as bulk
rounds).  Stratification adds the replacement axioms' dependencies: every relation with a
domain column depends on the equality relation, so the equality relation and everything
its derivation depends on that has a domain column form one stratum (the *equality
stratum*).  Strata below it hold no domain column (rewriting never touches them); strata
above it run as usual, on rewritten relations and with rule constants normalised by the
final ρ.  In the equality stratum every seminaive round is followed by a merge step:

1. the new non-reflexive equality rows (explicit or derived) are edges between
   representatives; :func:`kernels.components.connected_components` labels each with the
   smallest id of its component, and ``ρ := label[ρ]`` (one gather over the dictionary);
2. every relation with a domain column is split into the rows none of whose domain values
   changed and the rest, which are gathered through ρ and sorted/deduplicated (the
   paper's P̂: outdated facts are replaced by their rewriting, Algorithm 6 lines 53–54);
3. the seminaive state is kept exact: ``prev`` = I \\ Δ without the outdated rows, and Δ =
   the rewritten rows not in ``prev`` plus the unprocessed Δ.  An instance made possible
   by a merge uses at least one rewritten fact, which is in Δ, so it is considered in
   the next round, and an instance over unchanged facts only was considered before;
4. rules whose *body* constants changed are replaced by their normalised version and
   evaluated once in full over ``prev`` (Algorithm 6 lines 55–58); the rounds' variants
   cover the instances that use Δ, so no instance is considered twice (Theorem 1.2).

Derivations are counted as in the paper (rule instances over rewritten facts); the
statistics report them, the classes and the merge rounds.

Reflexivity: ``same(c, c)`` for every constant ``c`` of a domain column.  When no rule
reads the equality relation these facts influence nothing, so they are added once at the
end (one unique over the domain columns); when a rule reads it, the reflexivity axioms
are evaluated as rules ``same(x, x) :- R(.., x, ..)`` (as the spelled-out program does).

What the paper does not cover is refused by the front end (``host/lang/dl_equality.py``):
negation, comparisons other than ``=``, functors and aggregates over domain columns,
choice and subsumption over them, and derivation counters (Counting, DRed^c).  Updates
run DRed≈ (``equality_maintenance``), B/F≈ (``equality_bf``) or Remat≈.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from gpu_engine.kernels.backend import INDEX, Backend
from gpu_engine.kernels.components import connected_components
from gpu_engine.kernels.sets import unique_keys

from . import equality_expand as eq_expand
from .engine import Engine, ProgressHook, _atoms, counter_level
from .give_up import GaveUp
from .hd_module import HDModule
from .ir import (
    Atom,
    Compare,
    Const,
    Equality,
    Negation,
    Program,
    ProgramError,
    Rule,
    SymbolTable,
    Var,
)
from .modules import plan_modules
from .plan import Role, delta_variants
from .rowset import RowSet
from .rule_eval import RuleOutput
from .runs import COMPACT_SHARE, RunSet
from .stats import MaterialisationStats, RuleStats, StratumStats
from .stratify import Stratum, all_rules, stratify

# a merge (the star: a delta's groups) finds the rows of a relation holding the moved values
# through column indexes when the relation has more than this many rows per value (else it
# reads every run)
SPLIT_BY_INDEX = 64

# --- rules ------------------------------------------------------------------------------


def domain_vars(rule: Rule, domain: dict[str, tuple[int, ...]]) -> set[str]:
    """Variables of ``rule`` that occur in a domain column (head or positive atoms)."""
    out: set[str] = set()
    for a in (rule.head, *[lit for lit in rule.body if isinstance(lit, Atom)]):
        for p in domain.get(a.relation, ()):
            if p < len(a.args) and isinstance(a.args[p], Var):
                out.add(a.args[p].name)  # type: ignore[union-attr]
    return out


def map_constants(rule: Rule, domain: dict[str, tuple[int, ...]],
                  fn: Any) -> tuple[Rule, bool, bool]:
    """``rule`` with its domain constants (symbol constants in domain columns, or compared
    by ``=`` with a domain variable) replaced by ``fn(constant)``; also whether a head or a
    body constant changed."""
    dvars = domain_vars(rule, domain)

    def atom(a: Atom) -> tuple[Atom, bool]:
        pos = set(domain.get(a.relation, ()))
        args = list(a.args)
        changed = False
        for p, t in enumerate(args):
            if p in pos and isinstance(t, Const) and t.type == "symbol":
                v = fn(t.value)
                if v != t.value:
                    args[p] = Const(v, "symbol")
                    changed = True
        return (Atom(a.relation, tuple(args), a.loc), True) if changed else (a, False)

    def side(t: Any, other: Any) -> tuple[Any, bool]:
        if (isinstance(t, Const) and t.type == "symbol" and isinstance(other, Var)
                and other.name in dvars):
            v = fn(t.value)
            if v != t.value:
                return Const(v, "symbol"), True
        return t, False

    head, head_changed = atom(rule.head)
    body: list[Any] = []
    body_changed = False
    for lit in rule.body:
        if isinstance(lit, Atom):
            new, ch = atom(lit)
        elif isinstance(lit, Compare) and lit.op == "=":
            left, c1 = side(lit.left, lit.right)
            right, c2 = side(lit.right, lit.left)
            ch = c1 or c2
            new = Compare(lit.op, left, right, lit.type, lit.loc) if ch else lit
        else:
            new, ch = lit, False
        body.append(new)
        body_changed |= ch
    if not (head_changed or body_changed):
        return rule, False, False
    return Rule(head, tuple(body), rule.loc), head_changed, body_changed


def flows_in(rule: Rule, domain: dict[str, tuple[int, ...]]) -> bool:
    """Whether a variable of a merged head column is bound by no merged body column (so
    it may hold a value of an unmerged column, to be normalised)."""
    body = domain_vars(Rule(Atom("", ()), rule.body), domain)
    head = {rule.head.args[p].name for p in domain.get(rule.head.relation, ())  # type: ignore[union-attr]
            if isinstance(rule.head.args[p], Var)}
    return bool(head - body)


def functional_pattern(rule: Rule, eq: str) -> int | None:
    """The position ``p`` when ``rule`` is ``eq(y1, y2) :- R(.., y1, ..), R(.., y2, ..)``
    with the two atoms equal but at ``p`` (distinct variables or constants elsewhere):
    the functional / inverse-functional property and key pattern of OWL 2 RL."""
    h = rule.head
    if h.relation != eq or len(rule.body) != 2 or not all(isinstance(b, Atom)
                                                          for b in rule.body):
        return None
    a, b = rule.body  # type: ignore[misc]
    if a.relation != b.relation or a.relation == eq or len(a.args) != len(b.args):
        return None
    diff = [i for i, (s, t) in enumerate(zip(a.args, b.args)) if s != t]
    if len(diff) != 1:
        return None
    p = diff[0]
    y1, y2 = a.args[p], b.args[p]
    if not (isinstance(y1, Var) and isinstance(y2, Var)) or set(h.args) != {y1, y2} \
            or y1 == y2:
        return None
    rest = [t for i, t in enumerate(a.args) if i != p]
    names = [t.name for t in rest if isinstance(t, Var)]
    if len(set(names)) != len(names) or y1 in rest or y2 in rest or not all(
            isinstance(t, (Var, Const)) for t in rest):
        return None
    return p


def replacement_rules(eq: Equality) -> list[Rule]:
    """One replacement dependency per relation with a domain column (for stratification
    only: ``R(..) :- R(..), same(x, y)``)."""
    out = []
    for name, pos in eq.domain.items():
        if name == eq.relation or not pos:
            continue
        args = tuple(Var(f"x{i}") for i in range(max(pos) + 1))
        head = Atom(name, args, eq.loc)
        out.append(Rule(head, (head, Atom(eq.relation, (Var("x0"), Var("y")), eq.loc)), eq.loc))
    return out


def reflexive_rules(eq: Equality, arity: dict[str, int]) -> list[Rule]:
    """``same(x, x) :- R(.., x, ..)`` for every relation and domain position (axiom ≈4)."""
    out = []
    for name, pos in eq.domain.items():
        for p in pos:
            args = tuple(Var("x") if i == p else Var(f"_r{i}") for i in range(arity[name]))
            out.append(Rule(Atom(eq.relation, (Var("x"), Var("x")), eq.loc),
                            (Atom(name, args, eq.loc),), eq.loc))
    return out


def reads_equality(program: Program, rules: list[Rule]) -> bool:
    """Whether a rule body reads the equality relation."""
    eq = program.equality
    assert eq is not None
    return any(isinstance(lit, Atom) and lit.relation == eq.relation
               for r in rules for lit in r.body)


# --- the engine -------------------------------------------------------------------------


def star_edges(be: Any, atom: Atom, p: int, rows: RowSet,
               delta: RowSet) -> tuple[tuple[Any, Any], int]:
    """The star edges of ``same(y1, y2) :- R(x̄, y1), R(x̄, y2)`` (``y`` at position
    ``p`` of ``atom``) for the groups x̄ of ``rows`` that have a row in ``delta``: the head
    columns (smallest y of the group, y) for every y of such a group, and their number."""
    xp = be.xp
    g = [i for i in range(rows.arity) if i != p and isinstance(atom.args[i], Var)]
    if g:
        groups = RowSet.from_columns(be, tuple(delta.cols[i] for i in g), len(g))
        rows = rows.select(groups.contains(tuple(rows.cols[i] for i in g)))
    cols = RowSet.from_columns(be, (*(rows.cols[i] for i in g), rows.cols[p]),
                               len(g) + 1).cols
    n = len(cols[-1])
    same = xp.ones(n, dtype=bool)
    for c in cols[:-1]:
        same[1:] &= c[1:] == c[:-1]
    start = ~same if g else xp.zeros(n, dtype=bool)
    if n:
        start[0] = True
    first = xp.cumsum(start) - 1
    y = cols[-1]
    return (y[xp.flatnonzero(start)][first], y), n


class EqualityEngine(Engine):
    """An :class:`Engine` for a program with an equality relation: Mat≈ (module docstring).

    ``rho()`` is ρ over the dictionary; relations hold rewritten rows
    (:meth:`columns`), :meth:`expanded_columns` their expansion."""

    def __init__(self, program: Program, be: Backend, symbols: SymbolTable,
                 counting: bool | int = False, progress: ProgressHook | None = None,
                 modules: str = "auto", decompose: str | None = None) -> None:
        eq = program.equality
        if eq is None:
            raise ValueError("EqualityEngine needs a program with an equality relation")
        if counter_level(counting):
            raise ProgramError(
                f"derivation counters (Counting, DRed^c, a store's counters) are not kept with "
                f"the equality relation '{eq.relation}': merged facts share derivations "
                "(paper 001 covers Remat≈ and B/F≈); updates rematerialise", eq.loc)
        super().__init__(program, be, symbols, counting=False, progress=progress,
                         modules=modules, decompose="off")
        self.equality = eq
        arity = {n: r.arity for n, r in program.relations.items()}
        base = all_rules(program)
        # the relation's own reflexivity keeps the equality stratum non-empty
        extra = reflexive_rules(Equality(eq.relation, {eq.relation: (0,)}, eq.loc), arity)
        self.reflexive_as_rules = eq.reflexive and reads_equality(program, base)
        if self.reflexive_as_rules:
            extra = reflexive_rules(eq, arity)
        self.rules = base + extra
        fake = replacement_rules(eq)
        if self.reflexive_as_rules:
            fake = fake + reflexive_rules(eq, arity)  # dependencies only (already in extra)
        fake_ids = {id(r) for r in fake}
        strata = stratify(program, self.rules + fake)
        for s in strata:
            for lst in (s.rules, s.recursive_rules, s.nonrecursive_rules):
                lst[:] = [r for r in lst if id(r) not in fake_ids]
        self.strata = strata
        self.eq_stratum = next(s.index for s in strata if eq.relation in s.relations)
        self._original = {s.index: (list(s.rules), list(s.recursive_rules),
                                    list(s.nonrecursive_rules)) for s in strata}
        self.__dict__.pop("_small_plans", None)
        self.set_modules(modules)
        self.module_plans.pop(self.eq_stratum, None)  # merges run between rounds
        # hypertree decompositions (paper 003) over this engine's rules and strata: a rule
        # in its written form is evaluated through its decomposition (same head rows and
        # instance counts as the pairwise join); a copy with normalised constants is a
        # different rule object, so it joins pairwise
        self.hd = HDModule(self)
        self.hd.set_mode(decompose or os.environ.get("GPU_ENGINE_DECOMPOSE", "auto"))
        self.evaluator.hd_plan = self.hd.plan
        self.eq_stats: dict[str, int] = {}
        # functional-property rules of the equality stratum (by id; normalised copies too)
        self._functional: dict[int, int] = {}
        # when a list: the domain columns of the rows of ``prev`` each merge rewrites
        # (DRed≈ carries its occurrence counts through the merges of its insertion)
        self.merge_removed: list[tuple[Any, ...]] | None = None
        # auto's memory of its last fallbacks, "DRed≈" or "B/F≈" (gpu_engine.give_up)
        self.eq_gave_up: GaveUp | None = None
        for r in self.strata[self.eq_stratum].recursive_rules:
            fp = functional_pattern(r, eq.relation)
            if fp is not None:
                self._functional[id(r)] = fp
        # strata with a rule whose merged head column is bound from an unmerged column:
        # their head rows are normalised when absorbed, so they keep the array path
        self._flow = {s.index for s in strata if any(flows_in(r, eq.domain) for r in s.rules)}
        for i in self._flow:
            self.module_plans.pop(i, None)

    # --- ρ ----------------------------------------------------------------------------

    @property
    def _rho(self) -> Any:
        """ρ as stored in the engine state (restored with it when an update fails)."""
        r = self.state.rho  # (the device's, brought up to date after host twin updates)
        return r if r is not None else self.be.xp.zeros(0, dtype=INDEX)

    @_rho.setter
    def _rho(self, value: Any) -> None:
        self._state.rho = value

    def set_modules(self, modules: str) -> None:
        super().set_modules(modules)
        if hasattr(self, "eq_stratum"):  # merges run between rounds: never a module
            self.module_plans.pop(self.eq_stratum, None)
            for i in getattr(self, "_flow", ()):
                self.module_plans.pop(i, None)

    def rho(self) -> Any:
        """ρ over the whole dictionary (identity beyond the ids merged so far)."""
        have = self.state.rho
        if have is not None and len(have) >= len(self.symbols):  # type: ignore[arg-type]
            return have
        old = self._rho
        n = max(len(self.symbols), len(old))  # type: ignore[arg-type]
        if len(old) < n:
            # the dictionary grows one rule constant at a time: extend into a buffer with
            # headroom (identity beyond ρ; ρ is never written in place) instead of copying
            # ρ per new symbol, and keep "ρ is the identity" known across the extension
            buf, last = self.__dict__.get("_rho_growth", (None, None))
            if buf is None or last is not old or len(buf) < n:
                cap = n + n // 4 + 1024
                buf = self.be.xp.concatenate([old, self.be.xp.arange(len(old), cap,
                                                                     dtype=INDEX)])
            new = buf[:n]
            hit = self.__dict__.get("_identity_cache")
            if hit is not None and hit[0] is old and hit[1]:
                self._identity_cache = (new, True)
            self._rho = new
            self._rho_growth = (buf, new)
        return self._rho

    def set_rho(self, rho: Any) -> None:
        """Install a saved ρ (a store's)."""
        self._rho = self.be.asarray(rho).astype(INDEX, copy=False)

    def _normal_constant(self, value: Any) -> Any:
        cid = self.symbols.encode(str(value))
        rho = self.rho()
        rep = int(self.be.to_host(rho[cid:cid + 1])[0])
        if rep == cid:
            return value
        return self.symbols.decode_many(np.array([rep], dtype=np.int64))[0]

    def _normalise(self, rule: Rule) -> tuple[Rule, bool]:
        """``rule`` with its domain constants normalised by ρ, and whether a body constant
        changed.  Per rule the dictionary ids of its domain constants and the normal forms
        met so far (by the bytes of the constants' representatives) are kept, so that a
        later call costs one gather, and the same representatives give the same rule
        object (plans and per-rule caches keyed by it stay valid)."""
        memo = self.__dict__.setdefault("_normal_forms", {})
        hit = memo.get(id(rule))
        if hit is None or hit[0] is not rule:
            values: list[Any] = []
            map_constants(rule, self.equality.domain, lambda v: values.append(v) or v)
            ids = (np.array([self.symbols.encode(str(v)) for v in dict.fromkeys(values)],
                            dtype=np.int64) if values else None)
            if len(memo) > 4096:
                memo.clear()
            hit = memo[id(rule)] = (rule, ids, {})
        _, ids, forms = hit
        if ids is None:
            return rule, False
        rho = self.rho()
        reps = ids.copy()
        inside = ids < len(rho)
        if inside.any():
            reps[inside] = self.be.to_host(rho[self.be.xp.asarray(ids[inside])])
        key = reps.tobytes()
        got = forms.get(key)
        if got is None:
            if len(forms) > 64:
                forms.clear()
            new, _, body = map_constants(rule, self.equality.domain, self._normal_constant)
            got = forms[key] = (new, body)
        return got

    # --- materialisation ----------------------------------------------------------------

    def _materialise(self) -> MaterialisationStats:
        t0 = time.perf_counter()
        self._rho = self.be.xp.zeros(0, dtype=INDEX)
        self.eq_stats = {"merge_rounds": 0, "merged_constants": 0}
        for s in self.strata:  # rules in their written form (constants of the last run)
            rules, rec, nonrec = self._original[s.index]
            s.rules[:], s.recursive_rules[:], s.nonrecursive_rules[:] = rules, rec, nonrec
        stats = super()._materialise()
        if not self.reflexive_as_rules and self.equality.reflexive:
            self._reflexive_closure()
        eq = self.equality.relation
        stats.facts = sum(len(r) for n, r in self.store.items() if not n.startswith("@"))
        rho = self.rho()
        sizes = self.be.bincount(rho, len(rho))
        big = sizes[sizes > 1]
        stats.equality = {
            "relation": eq,
            "classes": int(len(big)),
            "largest_class": int(big.max()) if len(big) else 1,
            "merged_constants": int(big.sum() - len(big)) if len(big) else 0,
            "merge_rounds": self.eq_stats["merge_rounds"],
            "expanded_facts": sum(self.expanded_size(n) for n in self.program.relations
                                  if not n.startswith("@")),
        }
        self.materialise_seconds = time.perf_counter() - t0  # (the whole of Mat≈)
        return stats

    def _evaluate_stratum(self, s: Stratum) -> StratumStats:
        if s.index == self.eq_stratum:
            return self._evaluate_equality_stratum(s)
        if s.index > self.eq_stratum and not self._no_classes():  # identity: as written
            self._normalise_stratum(s)
        return super()._evaluate_stratum(s)

    def _small_plan(self, s: Stratum) -> Any:
        return None if s.index in self._flow else super()._small_plan(s)

    def _absorb(self, name: str, outs: list[Any], recursive: bool) -> RowSet:
        """Head rows are normalised through ρ first (values from unmerged columns)."""
        pos = self.equality.domain.get(name, ())
        if pos and outs and not self._no_classes():  # an identity ρ changes nothing
            rho = self.rho()
            outs = [dataclasses.replace(o, cols=tuple(rho[c] if i in pos else c
                                                      for i, c in enumerate(o.cols)))
                    for o in outs]
        return super()._absorb(name, outs, recursive)

    def _normalise_stratum(self, s: Stratum) -> None:
        """Normalise the constants of a stratum above the equality stratum by the final ρ
        (its plans are rebuilt when a rule changed)."""
        new = {id(r): self._normalise(r)[0] for r in s.rules}
        if any(new[id(r)] is not r for r in s.rules):
            self._set_rules(s, new)

    def _set_rules(self, s: Stratum, new: dict[int, Rule]) -> None:
        """Replace the rules of ``s`` (by the ids of its current ones) and rebuild its
        plans."""
        for lst in (s.rules, s.recursive_rules, s.nonrecursive_rules):
            lst[:] = [new.get(id(r), r) for r in lst]
        self._replan(s)

    def _replan(self, s: Stratum) -> None:
        """Drop the plans of ``s`` built for its former rules."""
        self.__dict__.get("_small_plans", {}).pop(s.index, None)
        if s.index in self.module_plans:
            plan = plan_modules(s)
            if plan is None:
                self.module_plans.pop(s.index)
            else:
                self.module_plans[s.index] = plan

    def renormalise_rules(self) -> None:
        """Rules as Remat≈ leaves them for the current ρ, from their written form: the
        strata above the equality stratum and its recursive rules normalised by ρ.  A
        maintenance algorithm that installs a new ρ (DRed≈, B/F≈) calls it, since the
        continuation of Mat≈ compares each rule's normal form under the ρ it reaches with
        the stratum's current rules to find the rules to evaluate once in full."""
        identity = self._no_classes()
        for s in self.strata:
            if s.index < self.eq_stratum:
                continue
            rules, rec, nonrec = self._original[s.index]
            keep = set(map(id, nonrec)) if s.index == self.eq_stratum else set()
            want = {id(r): r if identity or id(r) in keep else self._normalise(r)[0]
                    for r in rules}
            for r in rec:
                n = want[id(r)]
                if n is not r and id(r) in self._functional:
                    self._functional[id(n)] = self._functional[id(r)]
            lists = (s.rules, s.recursive_rules, s.nonrecursive_rules)
            target = [[want[id(r)] for r in lst] for lst in (rules, rec, nonrec)]
            if all(len(a) == len(b) and all(x is y for x, y in zip(a, b))
                   for a, b in zip(lists, target)):
                continue
            for lst, t in zip(lists, target):
                lst[:] = t
            self._replan(s)

    def _evaluate_equality_stratum(self, s: Stratum) -> StratumStats:
        """Seminaive rounds with a merge step after each (module docstring)."""
        t0 = time.perf_counter()
        st = StratumStats(index=s.index, relations=list(s.relations), recursive=s.recursive)
        rstats = {id(r): RuleStats(str(r), r.loc, module="seminaive≈") for r in s.rules}
        for r in s.nonrecursive_rules:
            rstats[id(r)].module = "nonrecursive"
        before = {r: len(self.store[r]) for r in s.relations}
        rels = set(s.relations)
        outputs: dict[str, list[Any]] = {r: [] for r in s.relations}
        for rule in s.nonrecursive_rules:
            self._fire(rule, [self.store[a.relation] for a in _atoms(rule)], outputs, rstats)
        for r in s.relations:
            self._absorb(r, outputs[r], recursive=False)
        st.iterations = 1
        rules = list(s.recursive_rules)
        original = list(rules)
        delta = {r: self.store[r] for r in s.relations}
        prev = {r: RunSet.empty(self.be, self.store[r].arity) for r in s.relations}
        full: set[int] = set()
        prev, delta, rules, full = self._merge(s, prev, delta, original, rules, rstats)
        while any(len(delta[r]) for r in s.relations) or full:
            st.iterations += 1
            if self.progress:
                self.progress("iteration", st.iterations, s.index)
            outputs = {r: [] for r in s.relations}
            versions = {Role.DELTA: delta, Role.OLD: prev, Role.NEW: self.store}
            changed = {r for r in s.relations if len(delta[r])}
            for rule in rules:
                atoms = _atoms(rule)
                p = self._functional.get(id(rule))
                if p is not None:  # a star per group instead of the group's square
                    if id(rule) in full or atoms[0].relation in changed:
                        self._star(rule, p, delta, full, outputs, rstats)
                    continue
                if id(rule) in full:  # constants changed: every instance over prev, once
                    self._fire(rule, [prev[a.relation] if a.relation in rels
                                      else self.store[a.relation] for a in atoms],
                               outputs, rstats)
                for p, roles in delta_variants(atoms, changed.__contains__):
                    sources = [versions[role][a.relation] for a, role in zip(atoms, roles)]
                    self._fire(rule, sources, outputs, rstats, delta[atoms[p].relation])
            prev = {r: self.store[r] for r in s.relations}
            delta = {r: RunSet.of(self._absorb(r, outputs[r], recursive=True))
                     for r in s.relations}
            prev, delta, rules, full = self._merge(s, prev, delta, original, rules, rstats)
        s.recursive_rules[:] = rules
        return self._finish_stratum(s, st, rstats, before, t0)

    # --- insertions continue Mat≈ ---------------------------------------------------------

    def can_continue(self) -> bool:
        """Whether insertions can continue the materialisation: a monotone program (no
        negation, aggregates or order-dependent features) that was materialised."""
        return (self.current_state().materialised and not self.program.aggregates
                and not self.order_dependent
                and not any(isinstance(lit, Negation) for r in self.rules for lit in r.body))

    def continue_insert(self, e_plus: dict[str, RowSet]) -> int:
        """Add the explicit facts ``e_plus`` (E already updated by the caller) and continue
        the materialisation from where it stood (paper 001 §1: "one can simply continue"):
        the facts are normalised through ρ, then every stratum runs seminaive rounds whose
        first Δ is what changed below it (new facts, and rows rewritten by merges), with a
        merge step after each round of the equality stratum.  Returns the derivations."""
        self._device_changed()
        self.eq_stats = {"merge_rounds": 0, "merged_constants": 0}
        snap = dict(self.store)
        rho = self.rho()
        for name, rows in e_plus.items():
            if not len(rows):
                continue
            pos = self.equality.domain.get(name, ())
            cols = tuple(rho[c] if i in pos else c for i, c in enumerate(rows.cols))
            d = self.store[name].new_rows(RowSet.from_columns(self.be, cols, rows.arity,
                                                              n_rows=len(rows)))
            if len(d):
                self.store[name] = self.store[name].append(d)
        derivations = 0
        self.evaluator.compact = self._compact
        self._compact_floor = {}
        try:
            for s in self.strata:
                if s.rules:
                    derivations += self._continue_stratum(s, snap)
        finally:
            self.evaluator.compact = None
        if self.equality.reflexive and not self.reflexive_as_rules:
            self._reflexive_closure()
        self.materialised = True
        self._note_symbols()
        return derivations

    def _continue_stratum(self, s: Stratum, snap: dict[str, RunSet]) -> int:
        rels = set(s.relations)
        old: dict[str, RunSet] = {}
        delta: dict[str, RunSet] = {}
        for x in s.reads | rels:
            cur = self.store[x]
            if cur is snap[x]:
                old[x], delta[x] = cur, RunSet.empty(self.be, cur.arity)
                continue
            c = cur.compact()
            d = snap[x].new_rows(c) if len(snap[x]) else c
            old[x], delta[x] = RunSet.of(RunSet.of(d).new_rows(c)), RunSet.of(d)
        o_nr, o_r = self._original[s.index][2], self._original[s.index][1]
        cur_nr, cur_r = list(s.nonrecursive_rules), list(s.recursive_rules)
        if s.index < self.eq_stratum:
            o_nr, o_r = cur_nr, cur_r
        rstats = {id(r): RuleStats(str(r), r.loc) for r in (*o_nr, *o_r, *cur_nr, *cur_r)}
        full: set[int] = set()
        rules: list[Rule] = []
        for orig, cur in zip((*o_nr, *o_r), (*cur_nr, *cur_r)):
            new, _ = self._normalise(orig)
            if new != cur:
                rstats[id(new)] = rstats[id(orig)]
                if id(orig) in self._functional:
                    self._functional[id(new)] = self._functional[id(orig)]
                if new.body != cur.body:
                    full.add(id(new))
            rules.append(new if new != cur else cur)
        n_nr = len(o_nr)
        s.nonrecursive_rules[:], s.recursive_rules[:] = rules[:n_nr], rules[n_nr:]
        if not full and not any(len(delta[x]) for x in delta):
            return 0
        prev = {r: old[r] for r in rels}
        dl = {r: delta[r] for r in rels}
        if s.index == self.eq_stratum:
            prev, dl, rec, more = self._merge(s, prev, dl, list(o_r), rules[n_nr:], rstats)
            rules[n_nr:] = rec
            full |= more
        lower = {x: delta[x] for x in delta if x not in rels and len(delta[x])}
        first = True
        while any(len(dl[r]) for r in rels) or full or (first and lower):
            outputs: dict[str, list[Any]] = {r: [] for r in rels}
            d_all = {**(lower if first else {}), **dl}
            versions = {Role.DELTA: d_all, Role.OLD: {**old, **prev}, Role.NEW: self.store}
            changed = {x for x, v in d_all.items() if len(v)}
            for rule in (rules if first else rules[n_nr:]):
                atoms = _atoms(rule)
                p = self._functional.get(id(rule))
                if p is not None and s.index == self.eq_stratum:
                    if id(rule) in full or atoms[0].relation in changed:
                        self._star(rule, p, d_all, full, outputs, rstats)
                    continue
                if id(rule) in full:
                    self._fire(rule, [versions[Role.OLD].get(a.relation, self.store[a.relation])
                                      for a in atoms], outputs, rstats)
                for q, roles in delta_variants(atoms, changed.__contains__):
                    sources = [versions[role][a.relation] for a, role in zip(atoms, roles)]
                    self._fire(rule, sources, outputs, rstats, d_all[atoms[q].relation])
            first = False
            prev = {r: self.store[r] for r in rels}
            dl = {r: RunSet.of(self._absorb(r, outputs[r], recursive=True)) for r in rels}
            full = set()
            if s.index == self.eq_stratum:
                prev, dl, rec, full = self._merge(s, prev, dl, list(o_r), rules[n_nr:], rstats)
                rules[n_nr:] = rec
        s.nonrecursive_rules[:], s.recursive_rules[:] = rules[:n_nr], rules[n_nr:]
        for r in rels:
            self.store[r] = self.store[r].compacted()
        return sum(st.derivations for st in {id(v): v for v in rstats.values()}.values())

    def _star(self, rule: Rule, p: int, delta: dict[str, RunSet], full: set[int],
              outputs: dict[str, list[Any]], rstats: dict[int, RuleStats]) -> None:
        """``same(y1, y2) :- R(x̄, y1), R(x̄, y2)`` for the groups x̄ with a fact in Δ: the
        edges (smallest y of the group, y) for every y of the group in I.  Their closure is
        the closure of the rule's n² heads per group (at the start of a round every group
        of I minus Δ holds one y, all its equalities being merged), so classes, answers and
        the expansion are those of the rule; its derivations count these edges, about
        what paper 001's fact-at-a-time saturate considers (each new fact meets the one
        rewritten fact of its group)."""
        t0 = time.perf_counter()
        atom = _atoms(rule)[0]
        store = self.store[atom.relation]
        g = [i for i in range(len(atom.args)) if i != p and isinstance(atom.args[i], Var)]
        if id(rule) not in full:
            d = self._select_consts(atom, delta[atom.relation].compact())
            if len(d) == 0:
                return
            if g and SPLIT_BY_INDEX * len(d) < len(store):  # the groups' rows by index
                ids = g[0] in self.equality.domain.get(atom.relation, ())
                rows = store.rows_with((g[0],), unique_keys(self.be, d.cols[g[0]]),
                                       len(self.rho()) if ids else None)
            else:
                rows = store.compact()
            rows = self._select_consts(atom, rows)
        else:
            rows = self._select_consts(atom, store.compact())
            d = rows
        if len(d) == 0:
            return
        head, n = star_edges(self.be, atom, p, rows, d)
        outputs[rule.head.relation].append(RuleOutput(head, n))
        rs = rstats[id(rule)]
        rs.derivations += n
        rs.evaluations += 1
        rs.seconds += time.perf_counter() - t0

    def _select_consts(self, atom: Atom, rows: RowSet) -> RowSet:
        """The rows matching the atom's constants."""
        mask = None
        for i, t in enumerate(atom.args):
            if isinstance(t, Const):
                m = rows.cols[i] == self._const_id(t)
                mask = m if mask is None else mask & m
        return rows if mask is None else rows.select(mask)

    def _const_id(self, t: Const) -> int:
        from .values import encode_scalar

        if t.type == "symbol":
            return self.symbols.encode(str(t.value))
        return int(encode_scalar(t.value, t.type, getattr(self.symbols, "word_size", 32)))

    def _merge(self, s: Stratum, prev: dict[str, RunSet], delta: dict[str, RunSet],
               original: list[Rule], rules: list[Rule], rstats: dict[int, RuleStats]
               ) -> tuple[dict[str, RunSet], dict[str, RunSet], list[Rule], set[int]]:
        """Merge the classes of Δ's non-reflexive equalities and rewrite (steps 1–4)."""
        xp = self.be.xp
        eq = self.equality.relation
        d = delta[eq].compact()
        if len(d) == 0:
            return prev, delta, rules, set()
        a, b = d.cols
        off = a != b
        if not bool(off.any()):
            return prev, delta, rules, set()
        rho = self.rho()
        a, b = rho[a[off]], rho[b[off]]
        verts = xp.unique(xp.concatenate([a, b]))
        ia, ib = xp.searchsorted(verts, a), xp.searchsorted(verts, b)
        # smallest local index; small graphs by array passes (no SciPy import for them)
        method = "array" if len(verts) < (1 << 16) else "auto"
        label = connected_components(self.be, ia, ib, len(verts), method=method)
        relabel = xp.arange(len(rho), dtype=INDEX)
        relabel[verts] = verts[label]
        moved = relabel != xp.arange(len(rho), dtype=INDEX)
        self._rho = relabel[rho]
        self.eq_stats["merge_rounds"] += 1
        rels = set(s.relations)
        ledger = getattr(self, "merge_removed", None)  # not the equality relation's rows
        for name, pos in self.equality.domain.items():
            if not pos:
                continue
            if name in rels:
                p, dl = prev[name], delta[name]
            else:  # a relation of a higher stratum: explicit facts so far
                p, dl = self.store[name], RunSet.empty(self.be, self.store[name].arity)
            k, out_p = self._split(p, pos, moved, None if name == eq else ledger)
            dk, out_d = self._split(dl, pos, moved)
            if not out_p and not out_d:
                continue
            cols = [xp.concatenate(c) for c in zip(*(out_p + out_d + [dk.compact().cols]))]
            cand = RowSet.from_columns(self.be, tuple(cols), p.arity)
            new = k.new_rows(cand)
            self.store[name] = k.append(new)
            if name in rels:
                prev[name], delta[name] = k, RunSet.of(new)
        # rules whose constants changed: normalised; body changes evaluated in full once
        full: set[int] = set()
        out = []
        for orig, cur in zip(original, rules):
            new, body = self._normalise(orig)
            if new != cur:
                rstats[id(new)] = rstats[id(orig)]
                if id(orig) in self._functional:
                    self._functional[id(new)] = self._functional[id(orig)]
                if body and new.body != cur.body:
                    full.add(id(new))
                out.append(new)
            else:
                out.append(cur)
        return prev, delta, out, full

    def _split(self, rows: RunSet, pos: tuple[int, ...], moved: Any,
               removed: list[tuple[Any, ...]] | None = None
               ) -> tuple[RunSet, list[tuple[Any, ...]]]:
        """(the rows none of whose domain values moved, the others' columns through ρ);
        ``removed`` gets the domain columns of the others as they were.

        When few values moved, the rows holding them are found through the runs' column
        indexes (:meth:`RunSet.rows_with`) and leave under a tombstone, so a merge costs
        the rows it rewrites; otherwise every run is read and rewritten."""
        if rows.arity == 0 or len(rows) == 0:
            return rows, []
        rho = self._rho
        xp = self.be.xp
        mv = xp.flatnonzero(moved).astype(INDEX)
        if SPLIT_BY_INDEX * len(mv) < len(rows):
            hit = rows.rows_with(pos, mv, len(moved))
            if not len(hit):
                return rows, []
            dead = sum(len(x) for x in rows.dead)
            if COMPACT_SHARE * (len(hit) + dead) <= len(rows):
                if removed is not None:
                    removed.append(tuple(hit.cols[p] for p in pos))
                return rows.without(hit), [tuple(rho[c] if i in pos else c
                                                 for i, c in enumerate(hit.cols))]
        if rows.dead:
            rows = rows.compacted()
        keep, out = [], []
        for run in rows.runs:
            cols = run.cols
            mask = moved[cols[pos[0]]]
            for p in pos[1:]:
                mask = mask | moved[cols[p]]
            if not bool(mask.any()):
                keep.append(run)
                continue
            kept = run.select(~mask)
            if len(kept):
                keep.append(kept)
            if removed is not None:
                removed.append(tuple(cols[p][mask] for p in pos))
            out.append(tuple(rho[c[mask]] if i in pos else c[mask] for i, c in enumerate(cols)))
        if not out:
            return rows, []
        k = RunSet(self.be, rows.arity, tuple(keep))
        return (k.compacted() if len(keep) > 6 else k), out

    def _reflexive_closure(self) -> None:
        """``same(c, c)`` for every constant of a domain column (all are representatives)."""
        xp = self.be.xp
        vals = []
        for name, pos in self.equality.domain.items():
            rs = self.store[name]
            if not len(rs) or not pos:
                continue
            # the runs as they are (merging them into one only to read values costs a sort)
            for run in ([rs.compact()] if rs.dead else rs.runs):
                vals.extend(run.cols[p] for p in pos)
        if not vals:
            return
        # the distinct ids by a mask over the dictionary's ids: linear, where a unique over
        # the concatenated columns sorts or hashes them (1 s of 1.5 s on OWL 2 RL LUBM(10))
        seen = xp.zeros(max(int(v.max()) for v in vals) + 1, dtype=bool)
        for v in vals:
            seen[v] = True
        c = xp.flatnonzero(seen).astype(vals[0].dtype, copy=False)
        eq = self.equality.relation
        d = RowSet.from_columns(self.be, (c, c), 2)
        self.store[eq] = self.store[eq].append(self.store[eq].new_rows(d)).compacted()

    # --- answers ------------------------------------------------------------------------

    def class_index(self) -> tuple[Any, Any, Any]:
        """(members sorted by representative, offset of each id's class, size of each id's
        class), the last two indexed by representative id."""
        rho = self.rho()
        hit = self.__dict__.get("_class_cache")
        if hit is not None and hit[0] is rho:  # built once per ρ
            return hit[1]
        index = eq_expand.class_index(self.be, rho)
        self._class_cache = (rho, index)
        return index

    def keep_class_index(self, rho: Any, index: tuple[Any, Any, Any]) -> None:
        """Remember ``index`` as the class index of ``rho`` (built by the caller from an
        earlier one, e.g. :func:`gpu_engine.equality_expand.split_classes`)."""
        self._class_cache = (rho, index)

    def _no_classes(self) -> bool:
        """Whether ρ is the identity (no class of two or more): the expansion is the
        relation itself (programs that declare equality and derive none pay nothing)."""
        rho = self.rho()
        hit = self.__dict__.get("_identity_cache")
        if hit is not None and hit[0] is rho:
            return bool(hit[1])
        xp = self.be.xp
        same = not bool((rho != xp.arange(len(rho), dtype=rho.dtype)).any())
        self._identity_cache = (rho, same)
        return same

    def expanded_size(self, name: str) -> int:
        """The number of facts of ``name``'s expansion (Σ over rows of Π class sizes)."""
        if (host := self._host_reads()) is not None:  # a GPU engine's current host twin
            return host.expanded_size(name)
        pos = self.equality.domain.get(name, ())
        if not pos or not len(self.store[name]) or self._no_classes():
            return len(self.store[name])
        _, _, sizes = self.class_index()
        cols = self.store[name].compact().cols
        return int(eq_expand.row_counts(self.be, cols, pos, sizes).sum())

    def expanded_columns(self, name: str) -> tuple[np.ndarray, ...]:
        """The expansion of ``name`` as sorted host int64 columns: each rewritten row
        stands for the product of the classes of its domain values
        (:func:`gpu_engine.equality_expand.expand_sorted`)."""
        if (host := self._host_reads()) is not None:  # a GPU engine's current host twin
            return host.expanded_columns(name)
        pos = self.equality.domain.get(name, ())
        if not pos or self._no_classes():
            return self.columns(name)
        rows = self.store[name].compact()
        if len(rows) == 0:
            return self.columns(name)
        out = eq_expand.expand_sorted(self.be, rows.cols, pos, *self.class_index())
        return tuple(self.be.to_host(c) for c in out)

    def expanded_chunks(self, name: str, chunk_rows: int = eq_expand.CHUNK_ROWS
                        ) -> Iterator[tuple[np.ndarray, ...]]:
        """The expansion of ``name`` as host int64 columns in chunks of about
        ``chunk_rows`` rows, unsorted (grouped by rewritten row): for streaming."""
        if (host := self._host_reads()) is not None:
            yield from host.expanded_chunks(name, chunk_rows)
            return
        pos = self.equality.domain.get(name, ())
        rows = self.store[name].compact()
        if not pos:
            if len(rows):
                yield tuple(self.be.to_host(c) for c in rows.cols)
            return
        for part in eq_expand.expand_chunks(self.be, rows.cols, pos, *self.class_index(),
                                            chunk_rows=chunk_rows):
            yield tuple(self.be.to_host(c) for c in part)

    def classes(self) -> tuple[np.ndarray, np.ndarray]:
        """(representative, member) host columns for every class of two or more members,
        sorted."""
        if (host := self._host_reads()) is not None:
            return host.classes()
        xp = self.be.xp
        rho = self.rho()
        ids = xp.arange(len(rho), dtype=INDEX)
        sizes = self.be.bincount(rho, len(rho))
        keep = sizes[rho] > 1
        rs = RowSet.from_columns(self.be, (rho[keep], ids[keep]), 2)
        return tuple(self.be.to_host(c) for c in rs.cols)  # type: ignore[return-value]
