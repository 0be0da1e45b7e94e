"""Explaining a fact of a program with an equality relation (rewriting, paper 001 §2).

The answers of Mat≈ are the expansion of the rewritten relations, and the expansion is
the materialisation of the same program with equality spelled out as rules (paper 001
§1, the axioms ≈1–≈4; ``make fuzz-eq`` checks it).  A proof is therefore a proof in that
spelled-out program: its steps are the program's own rules (with their constants as
written) and the equality axioms

* **reflexivity** ``same(x, x) :- R(.., x, ..)`` for every domain column (when the
  relation is reflexive, as declared ``equality`` relations are);
* **symmetry** ``same(y, x) :- same(x, y)``;
* **transitivity** ``same(x, z) :- same(x, y), same(y, z)``;
* **replacement** ``R(.., y, ..) :- R(.., x, ..), same(x, y)`` for every domain column,

down to explicit facts as they were given (before rewriting).  So a rewritten fact
``R(ρ(c̄))`` appears with the rule instance that derives it and the equalities that
replace each constant, each of them proved in turn (an explicit ``same`` fact, a rule
deriving it, or the axioms).

:class:`SpelledView` presents the engine to :class:`gpu_engine.explain.Explainer` as the
spelled-out program's materialisation: its relations are the expansions of the rewritten
ones (expanded per relation on first use, through ρ), its rules the program's written
rules plus the axioms, its explicit facts the given ones.  The Explainer's passes
(backward closure, heights, the proof of minimal height) run unchanged; the closure of
an equality over a class of n members costs about n³ transitivity instances, so large
classes reach the Explainer's instance limit (refused, with the equality relation's
location).
"""

from __future__ import annotations

from typing import Any

from .explain import Explainer, ProofNode
from .ir import Atom, Equality, ProgramError, Rule, Var
from .rowset import RowSet
from .runs import RunSet
from .stratify import all_rules

AXIOMS = ("reflexivity", "symmetry", "transitivity", "replacement")


def axiom_rules(eq: Equality, arity: dict[str, int]) -> dict[int, tuple[Rule, str]]:
    """The equality axioms as rules, by ``id``: (rule, which axiom)."""
    x, y, z = Var("x"), Var("y"), Var("z")
    s = eq.relation
    out: list[tuple[Rule, str]] = [
        (Rule(Atom(s, (y, x), eq.loc), (Atom(s, (x, y), eq.loc),), eq.loc), "symmetry"),
        (Rule(Atom(s, (x, z), eq.loc), (Atom(s, (x, y), eq.loc), Atom(s, (y, z), eq.loc)),
              eq.loc), "transitivity"),
    ]
    for name, pos in eq.domain.items():
        args = tuple(Var(f"c{i}") for i in range(arity[name]))
        for p in pos:
            if eq.reflexive:
                out.append((Rule(Atom(s, (args[p], args[p]), eq.loc),
                                 (Atom(name, args, eq.loc),), eq.loc), "reflexivity"))
            if name != s:
                moved = tuple(Var("n") if i == p else a for i, a in enumerate(args))
                out.append((Rule(Atom(name, moved, eq.loc),
                                 (Atom(name, args, eq.loc), Atom(s, (args[p], Var("n")), eq.loc)),
                                 eq.loc), "replacement"))
    return {id(r): (r, kind) for r, kind in out}


class _Expanded(dict):
    """Relation name -> RunSet of its expansion, built on first use."""

    def __init__(self, engine: Any) -> None:
        super().__init__()
        self.engine = engine

    def __missing__(self, name: str) -> RunSet:
        eng = self.engine
        be = eng.be
        arity = eng.program.relations[name].arity if name in eng.program.relations \
            else eng.store[name].arity
        if arity == 0 or not eng.equality.domain.get(name):
            rs = eng.store[name]
        else:
            cols = tuple(be.asarray(c) for c in eng.expanded_columns(name))
            rs = RunSet.of(RowSet.from_columns(be, cols, arity))
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
        self.program = engine.program
        self.evaluator = engine.evaluator
        self.explicit = engine.explicit
        arity = {n: r.arity for n, r in engine.program.relations.items()}
        self.axioms = axiom_rules(eq, arity)
        self.rules = list(all_rules(engine.program)) + [r for r, _ in self.axioms.values()]
        self.store = _Expanded(engine)

    def axiom(self, rule: Rule | None) -> str | None:
        """Which equality axiom ``rule`` is (None for a rule of the program)."""
        hit = self.axioms.get(id(rule)) if rule is not None else None
        return hit[1] if hit is not None else None


def explain(engine: Any, relation: str, row: tuple[int, ...]) -> tuple[ProofNode | None,
                                                                        SpelledView]:
    """The proof of minimal height of ``relation(row)`` (member values, encoded) in the
    spelled-out program, or None when the fact does not hold; and the view (to name the
    axioms of the proof's steps)."""
    view = SpelledView(engine)
    try:
        return Explainer(view).explain(relation, row), view
    except ProgramError as exc:
        if exc.loc is None:  # the instance limit: located at the equality declaration
            raise ProgramError(f"{exc.message} (with the equality relation "
                               f"'{engine.equality.relation}' the proof search spells out "
                               "its axioms over the classes involved)",
                               engine.equality.loc) from None
        raise
