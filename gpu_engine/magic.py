"""Demand-driven evaluation: the magic-set transformation of a program (IR to IR).

A rule set whose outputs bind arguments (``query() :- samegen(16384, 32767).``) needs only the
facts those bindings reach; the transformation rewrites the program so that bottom-up
evaluation computes just those (Bancilhon, Maier, Sagiv and Ullman's magic sets, with the
generalised sideways-information-passing reading of Beeri and Ramakrishnan):

1. **Adornments.** An occurrence of a transformed relation ``q`` in a rule body gets the
   adornment of its argument positions, ``b`` (bound: a constant, or a variable bound by the
   head's bound positions or by body literals chosen before it) or ``f`` (free). The body is
   visited in a *sideways-information-passing* order (SIPS): repeatedly the positive atom with
   the most bound positions, ties broken in favour of atoms that are not transformed, then
   by written order; ``x = expr`` comparisons bind ``x`` once ``expr``'s variables are bound.
2. **Adorned rules.** For each reachable adornment ``a`` of ``q`` with a bound position, the
   relation ``q@a`` gets every rule of ``q``, guarded by the demand relation
   ``@magic_q@a`` over the bound head positions (a head position holding a constant, an
   expression or a repeated variable is matched through a fresh variable and an equality),
   with the body's transformed atoms replaced by their adorned relations. The all-free
   adornment keeps the relation's own name and is unguarded: that relation stays complete.
3. **Demand (magic) rules.** For each adorned body atom ``q@c(s)`` of a rule with head
   ``p@a``: ``@magic_q@c(bound s) :- @magic_p@a(bound head), <literals chosen before it>``,
   where the literals are the positive atoms before it in SIPS order (adorned) and the
   comparisons whose variables they bind. Rules of relations that are not transformed
   (outputs) are the roots: their adorned atoms seed the demand relations without a guard.

What is not transformed (computed completely, its rules kept verbatim or only re-written in
their bodies):

* input, output and printsize relations, relations without rules, and (unless the pragma
  names ``*``) relations the pragma does not name;
* every relation that occurs under negation or in any literal other than a positive atom,
  every ``eqrel`` relation, and everything those depend on (*frozen*: rules kept verbatim).
  So negation only ever reads relations whose dependency cone holds no demand relation,
  and the transformed program stays stratified (a demand relation that read a negated
  prefix could otherwise close a cycle through negation); negations are never placed in
  demand rules (they would only filter demand).

Explicit facts of a transformed relation (in the program text or added through the API)
stay under its own name and feed each adorned version through
``q@a(x) :- @magic_q@a(bound x), q(x)``. The transformed program derives, for every relation
that is not transformed, exactly the facts of the original program. Transformed relations
hold only the demanded part of their facts under their adorned names; their own names hold
their explicit facts only, unless an all-free occurrence computes them completely.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .expr import term_vars
from .ir import Atom, Call, ColumnType, Compare, Const, Negation, Program, Relation, Rule, Term, Var

MAGIC_PREFIX = "@magic_"


@dataclass
class MagicResult:
    """The transformed program and what the transformation did."""

    program: Program
    transformed: frozenset[str]  # relations whose demand is computed instead of all of them
    adorned: dict[str, str] = field(default_factory=dict)  # adorned name -> relation


def literal_vars(lit: object) -> set[str]:
    """Names of the variables of a literal."""
    if isinstance(lit, Atom):
        out: set[str] = set()
        for a in lit.args:
            out |= term_vars(a)
        return out
    if isinstance(lit, Negation):
        return literal_vars(lit.atom)
    if isinstance(lit, Compare):
        return term_vars(lit.left) | term_vars(lit.right)
    return set()


def literal_relations(lit: object) -> set[str]:
    """Relations a literal reads. Literal and term kinds this module does not know (an
    aggregate, for example) are searched through their fields for atoms."""
    if isinstance(lit, Atom):
        return {lit.relation}
    if isinstance(lit, (Var, Const, str, int, float, bool)) or lit is None:
        return set()
    if isinstance(lit, (tuple, list)):
        out: set[str] = set()
        for item in lit:
            out |= literal_relations(item)
        return out
    fields = getattr(lit, "__dict__", None)
    if fields is None:
        return set()
    out = set()
    for value in fields.values():
        out |= literal_relations(value)
    return out


def _dependencies(program: Program) -> dict[str, set[str]]:
    deps: dict[str, set[str]] = {name: set() for name in program.relations}
    for rule in program.rules:
        for lit in rule.body:
            deps.setdefault(rule.head.relation, set()).update(literal_relations(lit))
    return deps


def _cone(roots: Iterable[str], deps: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        r = stack.pop()
        if r in seen:
            continue
        seen.add(r)
        stack.extend(deps.get(r, ()))
    return seen


def _bound(t: Term, bound: set[str]) -> bool:
    if isinstance(t, Var):
        return not t.anonymous and t.name in bound
    if isinstance(t, Const):
        return True
    if isinstance(t, Call):
        return all(_bound(a, bound) for a in t.args)
    return False  # a term kind this module does not know


def adornment(atom: Atom, bound: set[str]) -> str:
    """``b``/``f`` per argument position of ``atom`` given the bound variables."""
    return "".join("b" if _bound(a, bound) else "f" for a in atom.args)


def _bind_equalities(body: tuple, bound: set[str]) -> None:
    """Close ``bound`` under ``x = expr`` comparisons whose ``expr`` is bound."""
    changed = True
    while changed:
        changed = False
        for lit in body:
            if not isinstance(lit, Compare) or lit.op != "=":
                continue
            for var, other in ((lit.left, lit.right), (lit.right, lit.left)):
                if (isinstance(var, Var) and not var.anonymous and var.name not in bound
                        and _bound(other, bound)):
                    bound.add(var.name)
                    changed = True


def sips_order(body: tuple, bound: set[str], transformed: frozenset[str]) -> list[int]:
    """Positions of the positive atoms of ``body`` in sideways-information-passing order
    (most bound positions first; non-transformed atoms win ties, then written order)."""
    bound = set(bound)
    _bind_equalities(body, bound)
    left = [i for i, lit in enumerate(body) if isinstance(lit, Atom)]
    order: list[int] = []
    while left:
        def score(i: int, bound: set[str] = bound) -> tuple[int, int, int]:
            atom = body[i]
            n_bound = sum(_bound(a, bound) for a in atom.args)
            return (-n_bound, 0 if atom.relation not in transformed else 1, i)

        best = min(left, key=score)
        left.remove(best)
        order.append(best)
        bound |= {n for n in literal_vars(body[best]) if not n.startswith("_")}
        _bind_equalities(body, bound)
    return order


class _Transformer:
    def __init__(self, program: Program, transformed: frozenset[str]) -> None:
        self.src = program
        self.transformed = transformed
        self.rules_of: dict[str, list[Rule]] = {}
        for rule in program.rules:
            self.rules_of.setdefault(rule.head.relation, []).append(rule)
        self.out = Program(dict(program.relations), [], {k: list(v) for k, v in
                                                        program.facts.items()})
        self.adorned: dict[str, str] = {}
        self.done: set[tuple[str, str]] = set()
        self.todo: list[tuple[str, str]] = []
        self.fresh = 0

    # names
    def name(self, rel: str, adorn: str) -> str:
        return rel if "b" not in adorn else f"{rel}@{adorn}"

    def magic_name(self, rel: str, adorn: str) -> str:
        return f"{MAGIC_PREFIX}{rel}@{adorn}"

    def _declare(self, rel: str, adorn: str) -> None:
        base = self.src.relations[rel]
        name = self.name(rel, adorn)
        if name != rel and name not in self.out.relations:
            self.out.relations[name] = Relation(name, base.attributes, base.representation,
                                                base.loc)
            self.adorned[name] = rel
        magic = self.magic_name(rel, adorn)
        if "b" in adorn and magic not in self.out.relations:
            attrs = tuple((a, t) for (a, t), c in zip(base.attributes, adorn) if c == "b")
            self.out.relations[magic] = Relation(magic, attrs, "set", base.loc)
            self.adorned[magic] = rel

    def _request(self, rel: str, adorn: str) -> str:
        self._declare(rel, adorn)
        if (rel, adorn) not in self.done:
            self.done.add((rel, adorn))
            self.todo.append((rel, adorn))
            if "b" in adorn:
                self._explicit_rule(rel, adorn)
        return self.name(rel, adorn)

    def _explicit_rule(self, rel: str, adorn: str) -> None:
        """``q@a(x) :- @magic_q@a(bound x), q(x)``: the relation's own name keeps its
        explicit facts (program facts, facts added through the API), which feed every
        adorned version as far as demanded."""
        base = self.src.relations[rel]
        xs = tuple(Var(f"@x{i}") for i in range(base.arity))
        guard = Atom(self.magic_name(rel, adorn),
                     tuple(x for x, c in zip(xs, adorn) if c == "b"), base.loc)
        self.out.rules.append(Rule(Atom(self.name(rel, adorn), xs, base.loc),
                                   (guard, Atom(rel, xs, base.loc)), base.loc))

    def _var(self) -> Var:
        self.fresh += 1
        return Var(f"@m{self.fresh}")

    # rules
    def run(self) -> Program:
        for rule in self.src.rules:
            if rule.head.relation not in self.transformed:
                self._rewrite(rule, None, set())
        while self.todo:
            rel, adorn = self.todo.pop()
            for rule in self.rules_of.get(rel, ()):
                self._rewrite(rule, adorn, self._head_bound(rule.head, adorn))
        return self.out

    @staticmethod
    def _head_bound(head: Atom, adorn: str) -> set[str]:
        return {a.name for a, c in zip(head.args, adorn)
                if c == "b" and isinstance(a, Var) and not a.anonymous}

    def _guard(self, head: Atom, adorn: str, types: tuple[ColumnType, ...]) -> tuple[
            Atom, list[Compare]]:
        """The demand atom over the head's bound positions, and the equalities that match
        positions holding something other than a first occurrence of a variable."""
        args: list[Term] = []
        checks: list[Compare] = []
        seen: set[str] = set()
        for a, c, ty in zip(head.args, adorn, types):
            if c != "b":
                continue
            if isinstance(a, Var) and not a.anonymous and a.name not in seen:
                seen.add(a.name)
                args.append(a)
            else:
                v = self._var()
                args.append(v)
                checks.append(Compare("=", v, a, ty, head.loc))
        return Atom(self.magic_name(head.relation, adorn), tuple(args), head.loc), checks

    def _rewrite(self, rule: Rule, adorn: str | None, bound: set[str]) -> None:
        body = rule.body
        order = sips_order(body, bound, self.transformed)
        new_body: list = list(body)
        guard: Atom | None = None
        checks: list[Compare] = []
        if adorn is not None and "b" in adorn:
            types = self.src.relations[rule.head.relation].types
            guard, checks = self._guard(rule.head, adorn, types)
        state = set(bound)
        _bind_equalities(body, state)
        prefix: list[int] = []
        for i in order:
            atom: Atom = body[i]
            if atom.relation in self.transformed:
                a = adornment(atom, state)
                renamed = Atom(self._request(atom.relation, a), atom.args, atom.loc)
                new_body[i] = renamed
                if "b" in a:
                    self._demand_rule(renamed, atom.relation, a, guard, checks,
                                      [new_body[j] for j in prefix], body, state)
            prefix.append(i)
            state |= {n for n in literal_vars(atom) if not n.startswith("_")}
            _bind_equalities(body, state)
        head_rel = rule.head.relation if adorn is None else self.name(rule.head.relation, adorn)
        head = Atom(head_rel, rule.head.args, rule.head.loc)
        full = ([guard] if guard is not None else []) + new_body + checks
        self.out.rules.append(Rule(head, tuple(full), rule.loc))

    def _demand_rule(self, atom: Atom, rel: str, adorn: str, guard: Atom | None,
                     checks: list[Compare], prefix: list, body: tuple,
                     state: set[str]) -> None:
        head_args = tuple(a for a, c in zip(atom.args, adorn) if c == "b")
        lits: list = ([guard] if guard is not None else []) + prefix
        have: set[str] = set()
        for lit in lits:
            have |= {n for n in literal_vars(lit) if not n.startswith("_")}
        # comparisons (binding equalities included) whose variables the prefix binds
        filters = [c for c in (*checks, *[lit for lit in body if isinstance(lit, Compare)])
                   if literal_vars(c) <= _closure(body, have)]
        lits += filters
        name = self.magic_name(rel, adorn)
        if not lits and all(isinstance(a, Const) for a in head_args):  # a seed: a fact
            self.out.facts.setdefault(name, []).append(tuple(a.value for a in head_args))
            return
        self.out.rules.append(Rule(Atom(name, head_args, atom.loc), tuple(lits), atom.loc))


def _closure(body: tuple, bound: set[str]) -> set[str]:
    out = set(bound)
    _bind_equalities(body, out)
    return out


def magic_transform(program: Program, keep: Iterable[str],
                    relations: Iterable[str] | None = None) -> MagicResult:
    """Apply the magic-set transformation to ``program``.

    ``keep``: relations that must stay complete (inputs, outputs, printsize); ``relations``:
    the relations to transform (``None`` for every relation that may be transformed).
    """
    deps = _dependencies(program)
    has_rules = {r.head.relation for r in program.rules}
    special: set[str] = set()
    for rule in program.rules:
        for lit in rule.body:
            if not isinstance(lit, Atom):  # negations, and atoms nested in other literals
                special |= literal_relations(lit)
    special |= {n for n, r in program.relations.items() if r.representation != "set"}
    frozen = _cone(special, deps)
    candidates = set(has_rules) - set(keep) - frozen
    if relations is not None:
        candidates &= set(relations)
    transformed = frozenset(candidates)
    if not transformed:
        return MagicResult(program, transformed)
    t = _Transformer(program, transformed)
    out = t.run()
    # frozen relations' rules are untouched: re-emitted verbatim by _rewrite (no transformed
    # atom occurs in them, as their cone holds none)
    return MagicResult(out, transformed, t.adorned)
