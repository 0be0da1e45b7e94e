"""Generated programs with an ``equality`` relation, and their spelled-out twins.

:func:`equality_program` draws, from one seed, a small program over two symbol types
(``D``, merged by ``.decl same(x: D, y: D) equality``; ``O``, not merged) and ``number``
columns, with rules that derive equalities (functional and inverse-functional patterns,
random joins), constants in rules and facts, and sometimes a rule that reads ``same``.
It returns the program text for the engine and, for ``tests/reference.py``, the same
program with equality spelled out as rules (all four axiom groups): reflexivity
``same(x, x) :- R(.., x, ..)`` for every domain column, symmetry, transitivity and
replacement ``R(.., y, ..) :- R(.., x, ..), same(x, y)`` for every domain column.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from generators import NUMBER, SYMBOL, Atom, Const, Program, Relation, Rule, Var, render_rule

D_VALUES = ("a", "b", "c", "d", "e", "f", "g")
O_VALUES = ("p", "q", "r")
KINDS = ("D", "O", "number")


@dataclass
class EqCase:
    seed: int
    text: str  # the program with `.decl same(...) equality`
    spelled: Program  # equality spelled out as rules (for tests/reference.py)
    kinds: dict[str, tuple[str, ...]]  # relation -> column kinds (D, O, number)


def _value(rng: random.Random, kind: str) -> object:
    if kind in ("D", "S"):
        return rng.choice(D_VALUES)
    if kind == "O":
        return rng.choice(O_VALUES)
    return rng.randrange(3)


def _render(v: object) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v)


def equality_program(seed: int, layered: bool = False) -> EqCase:
    """One generated program (see the module docstring).  ``layered`` adds two or three
    relations above the equality's strata (nothing that derives an equality reads them),
    each with several rules, constants and sometimes recursion, drawn from a second
    generator so that the base program of a seed is the same either way."""
    rng = random.Random(seed)
    kinds: dict[str, tuple[str, ...]] = {"same": ("D", "D")}
    for i in range(rng.randint(2, 4)):
        arity = rng.randint(1, 3)
        cols = tuple(rng.choice(("D", "D", "D", "O", "number")) for _ in range(arity))
        if "D" not in cols:
            cols = ("D",) + cols[1:]
        kinds[f"r{i}"] = cols
    if rng.random() < 0.4:  # unmerged symbols flowing into merged columns
        src = rng.choice(list(kinds)[1:])
        kinds["raw"] = tuple("S" if k == "D" else k for k in kinds[src])
    facts: dict[str, set[tuple]] = {n: set() for n in kinds}
    for name, cols in kinds.items():
        if name == "same":
            for _ in range(rng.randint(0, 2)):
                facts[name].add((rng.choice(D_VALUES), rng.choice(D_VALUES)))
            continue
        for _ in range(rng.randint(2, 6)):
            facts[name].add(tuple(_value(rng, k) for k in cols))
    names = [n for n in kinds if n not in ("same", "raw")]
    rules: list[Rule] = []
    raw_rule = None
    if "raw" in kinds:
        args = tuple(Var(f"m{i}") for i in range(len(kinds["raw"])))
        raw_rule = Rule(Atom(src, args), (Atom("raw", args),))
        rules.append(raw_rule)
    counter = [0]

    def fresh() -> Var:
        counter[0] += 1
        return Var(f"v{counter[0]}")

    def body_atom(name: str, scope: dict[str, list[Var]], const_p: float = 0.15,
                  rng: random.Random = rng) -> Atom:
        args = []
        for k in kinds[name]:
            if rng.random() < const_p:
                args.append(Const(_value(rng, k)))
            elif scope[k] and rng.random() < 0.6:
                args.append(rng.choice(scope[k]))
            else:
                v = fresh()
                scope[k].append(v)
                args.append(v)
        return Atom(name, tuple(args))

    def head_atom(name: str, scope: dict[str, list[Var]],
                  rng: random.Random = rng) -> Atom | None:
        args = []
        for k in kinds[name]:
            if scope[k] and rng.random() < 0.9:
                args.append(rng.choice(scope[k]))
            elif k == "D" or rng.random() < 0.5:
                args.append(Const(_value(rng, k)))
            else:
                return None
        return Atom(name, tuple(args))

    # rules deriving equalities: functional / inverse-functional patterns
    for _ in range(rng.randint(1, 2)):
        name = rng.choice(names)
        cols = kinds[name]
        d_pos = [i for i, k in enumerate(cols) if k == "D"]
        p = rng.choice(d_pos)
        shared = [i for i in range(len(cols)) if i != p]
        y1, y2 = Var("y1"), Var("y2")
        a1, a2 = [], []
        for i in range(len(cols)):
            if i == p:
                a1.append(y1)
                a2.append(y2)
            else:
                v = Var(f"s{i}")
                a1.append(v)
                a2.append(v)
        if not shared:  # unary: all members become equal (a big class)
            if rng.random() < 0.5:
                continue
        body: tuple = (Atom(name, tuple(a1)), Atom(name, tuple(a2)))
        if rng.random() < 0.3:  # guard by another relation
            g = rng.choice(names)
            scope = {"D": [y1], "O": [], "number": []}
            body = body + (body_atom(g, scope),)
        rules.append(Rule(Atom("same", (y1, y2)), body))
    if rng.random() < 0.3:  # an equality with a constant
        name = rng.choice(names)
        p = kinds[name].index("D")
        args = tuple(Var("x") if i == p else Var(f"w{i}") for i in range(len(kinds[name])))
        rules.append(Rule(Atom("same", (Const(rng.choice(D_VALUES)), Var("x"))),
                          (Atom(name, args),)))
    # ordinary rules (joins, constants, recursion), sometimes reading `same`
    for _ in range(rng.randint(2, 5)):
        scope: dict[str, list[Var]] = {"D": [], "O": [], "number": []}
        body_names = rng.sample(names + ["same"] * (rng.random() < 0.2),
                                k=min(rng.randint(1, 2), len(names)))
        body = tuple(body_atom(n, scope) for n in body_names)
        head_name = rng.choice(names + ["same"] * (rng.random() < 0.3))
        head = head_atom(head_name, scope)
        if head is None:
            continue
        rules.append(Rule(head, body))
    if layered:  # strata above the equality's, several derivations per fact
        lr = random.Random(seed * 7919 + 1)
        below = list(names)
        for j in range(lr.randint(2, 3)):
            name = f"u{j}"
            kinds[name] = tuple(lr.choice(("D", "D", "O")) for _ in range(lr.randint(1, 2)))
            if "D" not in kinds[name]:
                kinds[name] = ("D",) + kinds[name][1:]
            facts[name] = {tuple(_value(lr, k) for k in kinds[name])
                           for _ in range(lr.randint(0, 2))}
            for _ in range(lr.randint(2, 4)):
                scope = {"D": [], "O": [], "number": []}
                body = tuple(body_atom(n, scope, 0.1, lr)
                             for n in lr.sample(below, k=min(lr.randint(1, 2), len(below))))
                head = head_atom(name, scope, lr)
                if head is not None:
                    rules.append(Rule(head, body))
            if len(kinds[name]) == 2 and kinds[name][0] == kinds[name][1] and lr.random() < 0.5:
                x, y, z = Var("x"), Var("y"), Var("z")
                rules.append(Rule(Atom(name, (x, z)), (Atom(name, (x, y)), Atom(name, (y, z)))))
            below.append(name)
    relations = tuple(Relation(n, tuple(NUMBER if k == "number" else SYMBOL for k in cols))
                      for n, cols in kinds.items())
    lines = [".type D <: symbol", ".type O <: symbol"]
    for n, cols in kinds.items():
        attrs = ", ".join(f"a{i}: {'symbol' if k == 'S' else k}" for i, k in enumerate(cols))
        lines.append(f".decl {n}({attrs}){' equality' if n == 'same' else ''}")
        lines.append(f".output {n}")
    for n, rows in facts.items():
        for row in sorted(rows, key=str):
            lines.append(f"{n}({', '.join(_render(v) for v in row)}).")
    for r in rules:
        if r is raw_rule:  # a symbol into a column of type D: Soufflé wants the cast
            heads = ", ".join(f"as(m{i}, D)" if k == "D" else f"m{i}"
                              for i, k in enumerate(kinds[src]))
            lines.append(f"{src}({heads}) :- {render_rule(r).split(':-', 1)[1].strip()}")
        else:
            lines.append(render_rule(r))
    text = "\n".join(lines) + "\n"
    spelled = Program(relations, tuple(rules) + tuple(axioms(kinds)),
                      inline_facts={n: sorted(r, key=str) for n, r in facts.items() if r})
    return EqCase(seed, text, spelled, kinds)


def axioms(kinds: dict[str, tuple[str, ...]], eq: str = "same") -> list[Rule]:
    """Equality spelled out as rules: reflexivity, symmetry, transitivity, replacement."""
    x, y, z = Var("x"), Var("y"), Var("z")
    out = [Rule(Atom(eq, (y, x)), (Atom(eq, (x, y)),)),
           Rule(Atom(eq, (x, z)), (Atom(eq, (x, y)), Atom(eq, (y, z))))]
    for name, cols in kinds.items():
        for p, k in enumerate(cols):
            if k != "D":
                continue
            args = tuple(Var(f"c{i}") for i in range(len(cols)))
            out.append(Rule(Atom(eq, (args[p], args[p])), (Atom(name, args),)))
            moved = tuple(Var("n") if i == p else a for i, a in enumerate(args))
            out.append(Rule(Atom(name, moved), (Atom(name, args), Atom(eq, (args[p], Var("n"))))))
    return out


def spelled_text(case: EqCase) -> str:
    """The spelled-out program as text (``same`` a plain relation), for the engine."""
    return "\n".join([*case.text.replace(") equality", ")").splitlines(),
                      *(render_rule(r) for r in axioms(case.kinds))]) + "\n"


# --- shared by the equality tests and campaigns ------------------------------------------

PAPER_31 = """
.decl R(x: symbol, y: symbol)
.decl eq(x: symbol, y: symbol) equality
.output R
.output eq
eq(y1, y2) :- R(y1, x), R(y2, x).
eq(y1, y2) :- R(x, y1), R(x, y2).
"""


def paper_31(facts: list[tuple[str, str]]) -> Any:
    """Paper 001's §3.1 program (brief §1.2) materialised over ``facts`` of R."""
    from gpu_engine import Reasoner

    r = Reasoner(PAPER_31, device="cpu")
    r.add_facts("R", facts)
    r.materialise()
    return r


def rows(r: Any, name: str, expand: bool = True) -> set[tuple]:
    """A relation of Reasoner ``r`` as a set of tuples (expanded unless ``expand=False``)."""
    return {tuple(x.values()) for x in r.relation(name, expand=expand).to_pylist()}


def insert_the_rest(case: EqCase, seed: int, most: int, device: str = "cpu") -> tuple[Any, Any]:
    """Materialise a random part of ``case``'s facts (at most ``len(facts) // most`` of
    them, ``most`` = 1 for any part), then insert the others by one update; returns the
    reasoner and the update's statistics (insertions must continue Mat≈)."""
    import pandas as pd

    from gpu_engine import Reasoner

    lines = case.text.splitlines()
    facts = [x for x in lines if x.endswith(").") and ":-" not in x]
    rest = [x for x in lines if x not in facts]
    rng = random.Random(seed)
    rng.shuffle(facts)
    k = rng.randint(0, len(facts) // most)
    r = Reasoner("\n".join(rest + facts[:k]) + "\n", device=device)
    r.materialise()
    ins: dict[str, list[tuple]] = {}
    for f in facts[k:]:
        name, args = f[:-2].split("(", 1)
        vals = [a.strip().strip('"') for a in args.split(",")]
        ins.setdefault(name, []).append(tuple(int(v) if v.isdigit() else v for v in vals))
    tables = {n: pd.DataFrame({a: [row[i] for row in rows] for i, (a, _) in
                               enumerate(r.program.relations[n].attributes)})
              for n, rows in ins.items()}
    return r, r.update(insert=tables)


# An explicit equality merges the class a rule constant reads ("b"); deleting it splits the
# class and the constant is normalised back (brief pitfall 7).
RULE_CONSTANT_SPLIT = """
    .decl same(x: symbol, y: symbol) equality
    .decl p(x: symbol)
    .decl q(x: symbol)
    .output q
    p("b"). p("c").
    same("a", "b").
    q(x) :- p(x), same(x, "b").
    q("z") :- p("a").
"""
