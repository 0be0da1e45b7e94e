"""Stratification: strongly connected components of the predicate dependency graph.

Each component is a stratum, evaluated in topological order (lower strata first).  A
component is recursive when a rule of it reads a relation of the same component.
Negation inside a component is negation through recursion and is rejected.  The hidden
relation of an aggregate (``Program.aggregates``) is a stratum of its own, after every
relation its body reads; an aggregate inside a recursive component is rejected unless
marked ``lookup`` (``gpu_engine.recursive_aggregates``): it is then a member of that
stratum (``Stratum.lookups``), evaluated per new key each round.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from .ir import Aggregate, Atom, Location, Negation, Program, ProgramError, Rule, Var


@dataclass
class Stratum:
    index: int
    relations: list[str]
    rules: list[Rule] = field(default_factory=list)  # rules whose head is in the stratum
    recursive_rules: list[Rule] = field(default_factory=list)
    nonrecursive_rules: list[Rule] = field(default_factory=list)
    subsumptions: list[Rule] = field(default_factory=list)  # for relations of the stratum
    aggregate: Aggregate | None = None  # an aggregate's hidden relation (no rules)
    # aggregates evaluated inside this recursive stratum (gpu_engine.recursive_aggregates)
    lookups: list[Aggregate] = field(default_factory=list)
    _watch: tuple[tuple[Rule, ...], dict[str, Any]] | None = field(default=None, repr=False,
                                                                  compare=False)

    @property
    def recursive(self) -> bool:
        return bool(self.recursive_rules)

    @functools.cached_property
    def reads(self) -> frozenset[str]:
        """Relations read (positively or negatively) by the stratum's rules."""
        if self.aggregate is not None:
            return self.aggregate.reads
        return frozenset(lit.relation if isinstance(lit, Atom) else lit.atom.relation
                         for rule in self.rules for lit in rule.body
                         if isinstance(lit, (Atom, Negation))).union(
                             *(a.reads for a in self.lookups))

    def watch(self) -> dict[str, tuple[Atom, ...] | None]:
        """Per relation the stratum's rules read: the positive atoms over it, or None
        when a rule reads it under negation (any change of it may matter).  Kept until
        the rules change (equality renormalises them in place)."""
        rules = tuple(self.rules)
        hit = self._watch
        if hit is not None and hit[0] == rules:  # (identical rules: pointer comparisons)
            return hit[1]
        out: dict[str, tuple[Atom, ...] | None] = {}
        for rule in self.rules:
            for lit in rule.body:
                if isinstance(lit, Negation):
                    out[lit.atom.relation] = None
                elif isinstance(lit, Atom):
                    atoms = out.get(lit.relation, ())
                    if atoms is not None:
                        out[lit.relation] = (*atoms, lit)
        self._watch = (rules, out)
        return out


def eqrel_rules(name: str, loc: Location) -> list[Rule]:
    """The rule-based closure of an ``eqrel``: symmetry, transitivity, reflexivity."""
    x, y, z = Var("x"), Var("y"), Var("z")
    return [
        Rule(Atom(name, (y, x), loc), (Atom(name, (x, y), loc),), loc),
        Rule(Atom(name, (x, z), loc), (Atom(name, (x, y), loc), Atom(name, (y, z), loc)), loc),
        Rule(Atom(name, (x, x), loc), (Atom(name, (x, Var("_r")), loc),), loc),
    ]


def all_rules(program: Program) -> list[Rule]:
    """The program's rules plus the closure rules of its eqrel relations."""
    rules = [normalise_rule(r) for r in program.rules]
    for rel in program.relations.values():
        if rel.representation == "eqrel":
            rules.extend(eqrel_rules(rel.name, rel.loc))
    return rules


def dependencies(program: Program, rules: list[Rule],
                 subsumptions: list[Rule]) -> dict[str, set[str]]:
    """Each relation of ``program`` → the relations its ``rules``, ``subsumptions`` and
    aggregate read, positively or under negation."""
    deps: dict[str, set[str]] = {n: set() for n in program.relations}
    for r in (*rules, *subsumptions):
        for lit in r.body:
            if isinstance(lit, Atom):
                deps[r.head.relation].add(lit.relation)
            elif isinstance(lit, Negation):
                deps[r.head.relation].add(lit.atom.relation)
    for name, agg in program.aggregates.items():
        deps[name] |= agg.reads
    return deps


def stratify(program: Program, rules: list[Rule] | None = None) -> list[Stratum]:
    """Strata in evaluation order; raises ProgramError on negation through recursion."""
    rules = all_rules(program) if rules is None else rules
    names = list(program.relations)
    subsumptions = [normalise_rule(r) for r in program.subsumptions]
    deps = dependencies(program, rules, subsumptions)
    for name, src in program.debug_deltas.items():  # filled by src's stratum (iteration.py)
        deps[name].add(src)
    comps = _tarjan(names, deps)  # reverse topological order of the condensation = deps first
    comp_of = {n: i for i, c in enumerate(comps) for n in c}
    strata = [Stratum(i, sorted(c, key=names.index)) for i, c in enumerate(comps)]
    for name, agg in program.aggregates.items():
        s = strata[comp_of[name]]
        if agg.lookup and len(s.relations) > 1:
            s.lookups.append(agg)
            continue
        if len(s.relations) > 1 or name in agg.reads:
            others = ", ".join(r for r in s.relations if not r.startswith("@")) or name
            raise ProgramError(
                f"recursion through an aggregate ('{agg.op}'): it is in a recursive component "
                f"with {others}; the program is not stratifiable", agg.loc)
        s.aggregate = agg
    for r in rules:
        s = strata[comp_of[r.head.relation]]
        s.rules.append(r)
        recursive = False
        for lit in r.body:
            if isinstance(lit, Atom) and comp_of[lit.relation] == s.index:
                recursive = True
            elif isinstance(lit, Negation) and comp_of[lit.atom.relation] == s.index:
                raise ProgramError(
                    f"negation through recursion: {r.head.relation} depends negatively on "
                    f"{lit.atom.relation} within the same recursive component "
                    f"({', '.join(s.relations)}); the program is not stratifiable",
                    lit.loc if lit.loc.line else r.loc,
                )
        (s.recursive_rules if recursive else s.nonrecursive_rules).append(r)
    for r in subsumptions:
        s = strata[comp_of[r.head.relation]]
        for lit in r.body:
            if isinstance(lit, Negation) and comp_of[lit.atom.relation] == s.index:
                raise ProgramError(
                    f"negation through recursion in a subsumptive rule of {r.head.relation}",
                    lit.loc if lit.loc.line else r.loc)
        s.subsumptions.append(r)
    return strata


def _tarjan(nodes: list[str], deps: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's SCC algorithm (iterative); components come out dependencies-first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(deps[root], key=nodes.index)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(deps[w], key=nodes.index))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def normalise_rule(rule: Rule) -> Rule:
    """Replace functor arguments of positive body atoms by fresh variables plus an equality.

    ``tak(X-1, Y)`` becomes ``tak(#e0, Y), #e0 = X-1``: the atom can then be scanned
    before ``X`` is bound (the equality filters later), or probed with the computed key
    when ``X`` is bound first (the equality binds ``#e0``).
    """
    from .ir import Call, Compare

    body: list = []
    extra: list = []
    k = 0
    for lit in rule.body:
        if isinstance(lit, Atom) and any(isinstance(t, Call) for t in lit.args):
            args = []
            for t in lit.args:
                if isinstance(t, Call):
                    v = Var(f"#e{k}")
                    k += 1
                    args.append(v)
                    extra.append(Compare("=", v, t, t.type, lit.loc))
                else:
                    args.append(t)
            body.append(Atom(lit.relation, tuple(args), lit.loc))
        else:
            body.append(lit)
    if not extra:
        return rule
    return Rule(rule.head, tuple(body + extra), rule.loc)
