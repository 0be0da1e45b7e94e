"""Explaining a fact of a program with an equality relation (rewriting, paper 001 §2).

The answers of Mat≈ are the expansion of the rewritten relations, and the expansion is
the materialisation of the same program with equality spelled out as rules (paper 001
§1, the axioms ≈1–≈4; ``make fuzz-eq`` checks it).  A proof is therefore a proof in that
spelled-out program: its steps are the program's own rules (with their constants as
written) and instances of the equality axioms

* **reflexivity** ``same(x, x) :- R(.., x, ..)`` for every domain column (when the
  relation is reflexive, as declared ``equality`` relations are);
* **symmetry** ``same(y, x) :- same(x, y)``;
* **transitivity** ``same(x, z) :- same(x, y), same(y, z)``;
* **replacement** ``R(.., y, ..) :- R(.., x, ..), same(x, y)`` for every domain column,

down to explicit facts as they were given (before rewriting).  So a rewritten fact
``R(ρ(c̄))`` appears with the rule instance that derives it and the equalities that
replace each constant, each of them proved in turn (an explicit ``same`` fact, a rule
deriving it, or the axioms).

**Base equalities.**  The proof search uses the axioms through *base* equalities ``B``:
the ``same`` facts that are explicit or derived by a rule of the program (not by an
axiom), with their symmetric facts.  The classes are the connected components of ``B``,
so every fact keeps a proof when replacement reads ``same(x, y)`` from ``B`` only and
transitivity is left-linear, ``same(x, z) :- B(x, y), same(y, z)``, with
``same(x, y) :- B(x, y)`` as its base case (shown as the base fact itself, not as a
step), and reflexivity over the equality relation's own columns reads ``B``.  This keeps the backward closure of a class of n members at O(n²) instances
instead of the n³ of transitivity over all of ``same``; the proof has minimal height
among the proofs of this shape.  A proof still lists plain ``same`` facts and axiom
instances (a fact of ``B`` holds in ``same``), which is what a checker verifies.

:class:`SpelledView` presents the engine to :class:`gpu_engine.explain.Explainer` as the
spelled-out program's materialisation: its relations are the expansions of the rewritten
ones (expanded per relation on first use, through ρ) plus ``B`` (computed on first use by
the program's rules with an equality head over the expansion), its rules the program's
rules (those with an equality head deriving ``B``) plus the axioms above, its explicit
facts the given ones.  The Explainer's passes (backward closure, heights, the proof of
minimal height) run unchanged; :func:`explain` renames ``B`` back, removes the base-case
steps and recomputes the heights.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .explain import Explainer, ProofNode
from .ir import Atom, Equality, ProgramError, Rule, Var
from .rowset import RowSet
from .runs import RunSet
from .stratify import all_rules

AXIOMS = ("reflexivity", "symmetry", "transitivity", "replacement")
BASE = "@eq.base"  # base equalities (module docstring)
COLLAPSE = "base"  # the step same(x, y) :- B(x, y), removed from proofs


def axiom_rules(eq: Equality, arity: dict[str, int]) -> list[tuple[Rule, Rule, str]]:
    """The axioms as searched (over ``B``), each with the rule it is an instance of (over
    ``same``) and its kind."""
    x, y, z = Var("x"), Var("y"), Var("z")
    s, loc = eq.relation, eq.loc

    def both(head: Atom, body: tuple[Atom, ...], kind: str) -> tuple[Rule, Rule, str]:
        shown = tuple(Atom(s if a.relation == BASE else a.relation, a.args, loc) for a in body)
        h = Atom(s if head.relation == BASE else head.relation, head.args, loc)
        return Rule(head, body, loc), Rule(h, shown, loc), kind

    out = [
        both(Atom(s, (x, y)), (Atom(BASE, (x, y)),), COLLAPSE),  # first: wins ties
        both(Atom(BASE, (y, x)), (Atom(BASE, (x, y)),), "symmetry"),
        both(Atom(s, (x, z)), (Atom(BASE, (x, y)), Atom(s, (y, z))), "transitivity"),
    ]
    for name, pos in eq.domain.items():
        args = tuple(Var(f"c{i}") for i in range(arity[name]))
        for p in pos:
            if eq.reflexive:  # over the equality relation itself: read from B
                out.append(both(Atom(s, (args[p], args[p])),
                                (Atom(BASE if name == s else name, args),), "reflexivity"))
            if name != s:
                moved = tuple(Var("n") if i == p else a for i, a in enumerate(args))
                out.append(both(Atom(name, moved), (Atom(name, args), Atom(BASE, (args[p],
                                                                                 Var("n")))),
                                "replacement"))
    return out


class _Expanded(dict):
    """Relation name -> RunSet of its expansion (and ``B``), built on first use."""

    def __init__(self, view: SpelledView) -> None:
        super().__init__()
        self.view = view

    def __missing__(self, name: str) -> RunSet:
        eng = self.view.engine
        be = eng.be
        if name == BASE:
            rs = self.view.base()
        elif eng.program.relations[name].arity == 0 or not eng.equality.domain.get(name):
            rs = eng.store[name]
        else:
            cols = tuple(be.asarray(c) for c in eng.expanded_columns(name))
            rs = RunSet.of(RowSet.from_columns(be, cols, len(cols)))
        self[name] = rs
        return rs


class SpelledView:
    """The equality engine seen as the spelled-out program's materialisation (duck-typed
    for :class:`Explainer`: ``be``, ``symbols``, ``program``, ``rules``, ``store``,
    ``explicit``, ``evaluator``)."""

    def __init__(self, engine: Any) -> None:
        eq = engine.equality
        self.engine = engine
        self.be = engine.be
        self.symbols = engine.symbols
        same = engine.program.relations[eq.relation]
        self.program = dataclasses.replace(
            engine.program, relations={**engine.program.relations,
                                       BASE: dataclasses.replace(same, name=BASE)})
        self.evaluator = engine.evaluator
        self.explicit = {**engine.explicit, BASE: engine.explicit[eq.relation]}
        arity = {n: r.arity for n, r in engine.program.relations.items()}
        # rule searched -> (rule shown, axiom kind or None)
        self.shown: dict[int, tuple[Rule, str | None]] = {}
        self.rules: list[Rule] = []
        self.base_rules: list[Rule] = []
        for r in all_rules(engine.program):
            if r.head.relation == eq.relation:  # derives base equalities
                b = Rule(Atom(BASE, r.head.args, r.head.loc), r.body, r.loc)
                self.base_rules.append(b)
                self.rules.append(b)
                self.shown[id(b)] = (r, None)
            else:
                self.rules.append(r)
        for searched, shown, kind in axiom_rules(eq, arity):
            self.rules.append(searched)
            self.shown[id(searched)] = (shown, kind)
        self.store = _Expanded(self)

    def base(self) -> RunSet:
        """``B``: explicit equalities and those the program's rules derive over the
        expansion, with their symmetric facts."""
        from .ir import Negation

        eng, be, xp = self.engine, self.be, self.be.xp
        parts = [eng.explicit[eng.equality.relation].compact().cols]
        for rule in self.base_rules:
            atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
            negated = {lit.atom.relation: self.store[lit.atom.relation]
                       for lit in rule.body if isinstance(lit, Negation)}
            for out in self.evaluator.evaluate(rule, [self.store[a.relation] for a in atoms],
                                               negated):
                if out.n:
                    parts.append(out.cols)
        a = xp.concatenate([p[0] for p in parts])
        b = xp.concatenate([p[1] for p in parts])
        return RunSet.of(RowSet.from_columns(be, (xp.concatenate([a, b]),
                                                  xp.concatenate([b, a])), 2))

    def axiom(self, rule: Rule | None) -> str | None:
        """Which equality axiom ``rule`` (a rule shown in a proof) is; None for a rule of
        the program."""
        return self._kinds.get(id(rule)) if rule is not None else None

    def clean(self, node: ProofNode) -> ProofNode:
        """The proof as shown: ``B`` renamed to the equality relation, base-case steps
        removed, rules as written, heights recomputed (1 + the children's highest)."""
        self._kinds = {id(shown): kind for shown, kind in self.shown.values()
                       if kind is not None}
        eq = self.engine.equality.relation
        heights: dict[tuple[str, tuple[int, ...]], int] = {}

        def walk(n: ProofNode) -> ProofNode:
            shown = self.shown.get(id(n.rule)) if n.rule is not None else None
            if shown is not None and shown[1] == COLLAPSE:
                return walk(n.children[0])
            rel = eq if n.relation == BASE else n.relation
            key = (rel, n.row)
            if n.rule is None:
                h = heights.get(key, 0) if n.repeated else 0
                return ProofNode(rel, n.row, h, None, [], n.repeated)
            children = [walk(c) for c in n.children]
            h = 1 + max((c.height for c in children), default=0)
            heights.setdefault(key, h)
            return ProofNode(rel, n.row, h, shown[0] if shown else n.rule, children)

        return walk(node)


def explain(engine: Any, relation: str, row: tuple[int, ...]) -> tuple[ProofNode | None,
                                                                        SpelledView]:
    """The proof of ``relation(row)`` (member values, encoded) in the spelled-out
    program, or None when the fact does not hold; and the view (to name the axioms of
    the proof's steps)."""
    view = SpelledView(engine)
    try:
        node = Explainer(view).explain(relation, row)
    except ProgramError as exc:
        if exc.loc is None:  # the instance limit: located at the equality declaration
            raise ProgramError(f"{exc.message} (with the equality relation "
                               f"'{engine.equality.relation}' the proof search spells out "
                               "its axioms over the classes involved)",
                               engine.equality.loc) from None
        raise
    return (None if node is None else view.clean(node)), view
