"""Reference derivation counters (reference.derivation_counts) on hand-checked programs, and
the engine's counters after materialisation against them on generated programs.

(c_nr, c_r) per fact: c_nr = [F explicit] + instances of non-recursive rules with head F,
c_r = instances of recursive rules (a positive body atom in the head's stratum); each ``_`` in
a positive atom is a variable of its own, ``_`` in a negated atom is existential, and each
disjunct counts as a rule of its own.
"""

from __future__ import annotations

import pytest
from dc_adapter import parse_rule
from generators import (
    NUMBER,
    SYMBOL,
    Atom,
    Cmp,
    Const,
    Neg,
    Program,
    Relation,
    Row,
    Rule,
    Var,
    Wild,
    describe,
    engine_facts,
    programs,
    render_program,
)
from hypothesis import given, note, reject, settings
from hypothesis import strategies as st
from reference import (
    Counts,
    LimitExceeded,
    derivation_counts,
    evaluate,
    has_recursive_rule,
)
from test_fuzz import MAX_TUPLES, table_rows

N, S = NUMBER, SYMBOL


def prog(
    decls: dict[str, tuple[str, ...]],
    rules: list[str | Rule],
    facts: dict[str, list[Row]] | None = None,
    inline: dict[str, list[Row]] | None = None,
) -> Program:
    """A program from declarations, rules (text or AST) and facts."""
    relations = tuple(Relation(n, t) for n, t in decls.items())
    parsed = tuple(parse_rule(r) if isinstance(r, str) else r for r in rules)
    return Program(relations, parsed, facts or {}, inline or {})


EXAMPLE_3 = prog(
    {"A": (S,), "B": (S, S)},
    ["A(y) :- A(x), B(x, y)."],
    {"A": [("a",), ("b",), ("d",)], "B": [("a", "c"), ("b", "c"), ("c", "d"), ("d", "e")]},
)

x, y = Var("x"), Var("y")
DISJUNCTION = Rule(  # p(x) :- e(x, y), (y = 2 ; y > 1).
    Atom("p", (x,)),
    (Atom("e", (x, y)),),
    ((Cmp("=", y, Const(2)),), (Cmp(">", y, Const(1)),)),
)
MIXED_DISJUNCTION = Rule(  # p(x) :- e(x, _), (p(x) ; f(x)).
    Atom("p", (x,)),
    (Atom("e", (x, Wild())),),
    ((Atom("p", (x,)),), (Atom("f", (x,)),)),
)
NEGATED_WILDCARD = Rule(  # q(x) :- e(x, y), !f2(y, _).
    Atom("q", (x,)), (Atom("e", (x, y)), Neg(Atom("f2", (y, Wild()))))
)

CASES: list[tuple[str, Program, Counts]] = [
    (
        "paper example 3",
        EXAMPLE_3,
        {
            "A": {("a",): (1, 0), ("b",): (1, 0), ("c",): (0, 2), ("d",): (1, 1), ("e",): (0, 1)},
            "B": {r: (1, 0) for r in [("a", "c"), ("b", "c"), ("c", "d"), ("d", "e")]},
        },
    ),
    (
        "wildcards are variables, explicit facts count",
        prog({"e": (N, N), "p": (N,)}, ["p(x) :- e(x, _)."],
             {"e": [(1, 2), (1, 3), (2, 2)], "p": [(1,), (5,)]}),
        {"p": {(1,): (3, 0), (2,): (1, 0), (5,): (1, 0)}},
    ),
    (
        "an assignment satisfying two disjuncts counts twice",
        prog({"e": (N, N), "p": (N,)}, [DISJUNCTION], {"e": [(1, 2), (1, 3), (4, 0)]}),
        {"p": {(1,): (3, 0)}},
    ),
    (
        "each disjunct is recursive or not on its own",
        prog({"e": (N, N), "f": (N,), "p": (N,)}, [MIXED_DISJUNCTION, "p(x) :- f(x)."],
             {"e": [(1, 7), (1, 8), (2, 7)], "f": [(1,)]}),
        {"p": {(1,): (3, 2)}},
    ),
    (
        "variables only in a negated atom are existential",
        prog({"e": (N, N), "f2": (N, N), "q": (N,)}, [NEGATED_WILDCARD],
             {"e": [(1, 2), (1, 3), (1, 4), (2, 2)], "f2": [(2, 0), (2, 1)]}),
        {"q": {(1,): (2, 0)}},
    ),
    (
        "bound variables are part of the instance",
        prog({"e": (N, N), "q": (N, N)}, ["q(x, z) :- e(x, y), z = y * 0."],
             {"e": [(1, 2), (1, 3), (2, 5)]}),
        {"q": {(1, 0): (2, 0), (2, 0): (1, 0)}},
    ),
    (
        "mutual recursion",
        prog({"e": (N,), "p": (N,), "q": (N,)},
             ["p(x) :- e(x).", "p(x) :- q(x).", "q(x) :- p(x)."], {"e": [(1,)]}),
        {"p": {(1,): (1, 1)}, "q": {(1,): (0, 1)}},
    ),
    (
        "transitive closure, linear",
        prog({"e": (N, N), "path": (N, N)},
             ["path(x, y) :- e(x, y).", "path(x, z) :- path(x, y), e(y, z)."],
             {"e": [(1, 2), (2, 3), (1, 3), (3, 4)]}),
        {"path": {(1, 2): (1, 0), (2, 3): (1, 0), (1, 3): (1, 1), (3, 4): (1, 0),
                  (2, 4): (0, 1), (1, 4): (0, 1)}},
    ),
    (
        "transitive closure, doubly recursive",
        prog({"e": (N, N), "path": (N, N)},
             ["path(x, y) :- e(x, y).", "path(x, z) :- path(x, y), path(y, z)."],
             {"e": [(1, 2), (2, 3), (3, 4)]}),
        {"path": {(1, 2): (1, 0), (2, 3): (1, 0), (3, 4): (1, 0),
                  (1, 3): (0, 1), (2, 4): (0, 1), (1, 4): (0, 2)}},
    ),
    (
        "lower strata are non-recursive for the head's stratum",
        prog({"e": (N, N), "path": (N, N), "r": (N,)},
             ["path(x, y) :- e(x, y).", "path(x, z) :- path(x, y), e(y, z).",
              "r(y) :- path(_, y)."],
             {"e": [(1, 2), (2, 3)]}, {"r": [(3,)]}),
        {"r": {(2,): (1, 0), (3,): (3, 0)}},
    ),
    (
        "nullary head, repeated variable, constants",
        prog({"e": (S, S), "h": (), "s": (S,)},
             ["h() :- e(_, _).", "s(x) :- e(x, x).", "s(x) :- e(x, \"b\")."],
             {"e": [("a", "a"), ("a", "b"), ("b", "b")]}),
        {"h": {(): (3, 0)}, "s": {("a",): (2, 0), ("b",): (2, 0)}},
    ),
]


@pytest.mark.parametrize(("label", "program", "expected"), CASES, ids=[c[0] for c in CASES])
def test_hand_checked_counts(label: str, program: Program, expected: Counts) -> None:
    """derivation_counts equals hand-computed counters (for the relations listed)."""
    got = derivation_counts(program)
    assert set(got) == {r.name for r in program.relations}
    for name, table in expected.items():
        assert got[name] == table, f"{label}: {name}"
    db = evaluate(program)
    assert all(set(got[n]) == db[n] for n in db), "counters cover exactly the materialisation"


def test_recursion_detection() -> None:
    """has_recursive_rule: per rule (and per disjunct), positive atoms in the head's SCC."""
    assert has_recursive_rule(EXAMPLE_3)
    assert not has_recursive_rule(
        prog({"e": (N,), "f": (N,), "p": (N,)}, ["p(x) :- e(x), !f(x).", "f(x) :- e(x)."])
    )
    assert has_recursive_rule(prog({"e": (N, N), "f": (N,), "p": (N,)}, [MIXED_DISJUNCTION]))


@settings(max_examples=max(20, settings.default.max_examples // 3))
@given(program=programs(), compact=st.booleans())
def test_engine_counters_after_materialise(program: Program, compact: bool, device: str) -> None:
    """Reasoner(counting=True): after materialise, (c_nr, c_r) of every non-eqrel relation
    equal the reference's; also when every rule output is compacted at once (distinct rows
    with multiplicities: the memory bound of large rounds), and the relations and the
    number of derivations do not change without counters either."""
    from gpu_engine import Reasoner

    try:
        db = evaluate(program, max_tuples=MAX_TUPLES)
    except LimitExceeded:
        reject()
    expected = derivation_counts(program, db)
    note(describe(program))
    r = Reasoner(render_program(program), device=device, counting=True)
    if compact:
        r.engine.evaluator.compact_rows = 0
    for name, data in engine_facts(program).items():
        r.add_facts(name, data)
    stats = r.materialise()
    if compact:  # without counters, compaction also drops rows already known
        plain = Reasoner(render_program(program), device=device)
        plain.engine.evaluator.compact_rows = 0
        for name, data in engine_facts(program).items():
            plain.add_facts(name, data)
        assert plain.materialise().derivations == stats.derivations
        assert plain.relation_sizes() == r.relation_sizes()
    problems: list[str] = []
    for rel in program.relations:
        if rel.eqrel:
            continue
        table = r.counters(rel.name)
        rows = table_rows(table, rel)
        pairs = zip(table.column("c_nr").to_pylist(), table.column("c_r").to_pylist(), strict=True)
        got = dict(zip(rows, pairs, strict=True))
        if rel.name in r.engine.modular_relations():  # c_r not kept (paper 002 §4.2)
            got = {k: (nr, 0) for k, (nr, _) in got.items()}
            expected[rel.name] = {k: (nr, 0) for k, (nr, _) in expected[rel.name].items()}
        if got != expected[rel.name]:
            bad = [
                (k, expected[rel.name].get(k), got.get(k))
                for k in sorted(set(got) | set(expected[rel.name]), key=repr)
                if got.get(k) != expected[rel.name].get(k)
            ]
            problems.append(f"{rel.name}: (row, expected, got) {bad[:12]}")
    assert not problems, f"device={device}\n{describe(program)}" + "\n".join(problems)
