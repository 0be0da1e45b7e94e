"""The reference evaluator on hand-written programs with hand-computed answers.

Rules are written as text and read with the conformance adapter's parser (dc_adapter.parse_rule),
which these tests therefore exercise as well. test_datalog_conformance.py also runs the
reference on the datalog-conformance core cases, whose expected answers come from other engines.
"""

from __future__ import annotations

import pytest
from dc_adapter import parse_rule
from generators import (
    NUMBER,
    SYMBOL,
    Atom,
    Bind,
    BinOp,
    Const,
    Program,
    Relation,
    Row,
    Rule,
    Var,
    programs,
    render_program,
)
from reference import (
    ArityMismatch,
    LimitExceeded,
    NotStratifiable,
    UnsafeRule,
    c_div,
    c_mod,
    evaluate,
    strata,
    wrap32,
)

N, S = NUMBER, SYMBOL


def prog(
    decls: dict[str, tuple[str, ...]],
    rules: list[str],
    facts: dict[str, list[Row]] | None = None,
    eqrel: tuple[str, ...] = (),
) -> Program:
    """A program from declarations, rule texts and facts."""
    relations = tuple(Relation(n, t, n in eqrel) for n, t in decls.items())
    return Program(relations, tuple(parse_rule(r) for r in rules), facts or {})


EDGES: list[Row] = [(1, 2), (2, 3), (3, 1), (4, 5)]
CYCLE = {(a, b) for a in (1, 2, 3) for b in (1, 2, 3)}


@pytest.mark.parametrize(
    "recursive",
    [
        "path(x, z) :- path(x, y), edge(y, z).",
        "path(x, z) :- edge(x, y), path(y, z).",
        "path(x, z) :- path(x, y), path(y, z).",
    ],
)
def test_transitive_closure(recursive: str) -> None:
    """Left-, right- and doubly-recursive closure of a 3-cycle plus one edge."""
    p = prog(
        {"edge": (N, N), "path": (N, N)},
        ["path(x, y) :- edge(x, y).", recursive],
        {"edge": EDGES},
    )
    assert evaluate(p)["path"] == CYCLE | {(4, 5)}


def test_negation_complement() -> None:
    """Pairs of nodes with no path between them: 25 pairs minus the 10 connected ones."""
    p = prog(
        {"edge": (N, N), "path": (N, N), "node": (N,), "unconnected": (N, N)},
        [
            "path(x, y) :- edge(x, y).",
            "path(x, z) :- path(x, y), edge(y, z).",
            "node(x) :- edge(x, _).",
            "node(y) :- edge(_, y).",
            "unconnected(x, y) :- node(x), node(y), !path(x, y).",
        ],
        {"edge": EDGES},
    )
    got = evaluate(p)["unconnected"]
    assert len(got) == 15
    assert got == {(a, b) for a in range(1, 6) for b in range(1, 6)} - CYCLE - {(4, 5)}


def test_negation_with_wildcard_and_order() -> None:
    """``!edge(x, _)`` written before the atom binding x: sinks of the graph."""
    p = prog(
        {"edge": (N, N), "sink": (N,)},
        ["sink(y) :- not edge(y, _), edge(_, y)."],
        {"edge": EDGES},
    )
    assert evaluate(p)["sink"] == {(5,)}


def test_mutual_recursion() -> None:
    """even/odd along a successor chain 0..6."""
    p = prog(
        {"succ": (N, N), "even": (N,), "odd": (N,)},
        ["even(0).", "odd(y) :- even(x), succ(x, y).", "even(y) :- odd(x), succ(x, y)."],
        {"succ": [(i, i + 1) for i in range(6)]},
    )
    db = evaluate(p)
    assert db["even"] == {(0,), (2,), (4,), (6,)}
    assert db["odd"] == {(1,), (3,), (5,)}
    assert [sorted(s) for s in strata(p)] == [["succ"], ["even", "odd"]]


def test_c_style_arithmetic() -> None:
    """Division and remainder truncate toward zero; ^ is a power; numbers wrap at 32 bits."""
    assert (c_div(-7, 2), c_mod(-7, 2), c_div(7, -2), c_mod(7, -2)) == (-3, -1, -3, 1)
    assert wrap32(2**31) == -(2**31) and wrap32(-(2**31) - 1) == 2**31 - 1
    p = prog(
        {"v": (N,), "r": (N, N, N, N)},
        ["r(x, x / 3, x % 3, x ^ 2) :- v(x).", "r(x + 1, 0, 0, 0) :- v(x), x > 2000000000."],
        {"v": [(-7,), (7,), (2147483647,)]},
    )
    assert evaluate(p)["r"] == {
        (-7, -2, -1, 49),
        (7, 2, 1, 49),
        (2147483647, 715827882, 1, 1),  # 1 == (2^31 - 1)^2 mod 2^32
        (-2147483648, 0, 0, 0),
    }


def test_binding_and_guarded_recursion() -> None:
    """``y = x + 1`` with a guard counts 0..5; the binding may precede its operands."""
    p = prog(
        {"n": (N,), "sq": (N, N)},
        ["n(0).", "n(y) :- y = x + 1, n(x), x < 5.", "sq(x, y) :- n(x), y = x * x, y >= 4."],
    )
    db = evaluate(p)
    assert db["n"] == {(i,) for i in range(6)}
    assert db["sq"] == {(2, 4), (3, 9), (4, 16), (5, 25)}


def test_ast_binding_flipped_and_nested_arithmetic() -> None:
    """The AST directly: ``(x - 1) * 2 = z`` binds z."""
    rel_a, rel_b = Relation("a", (N,)), Relation("b", (N, N))
    x, z = Var("x"), Var("z")
    expr = BinOp("*", BinOp("-", x, Const(1)), Const(2))
    rule = Rule(Atom("b", (x, z)), (Bind(z, expr, flipped=True), Atom("a", (x,))))
    p = Program((rel_a, rel_b), (rule,), {"a": [(0,), (3,)]})
    assert evaluate(p)["b"] == {(0, -2), (3, 4)}
    assert "b(x, z) :- ((x - 1) * 2) = z, a(x)." in render_program(p)


def test_constants_repeated_variables_symbols() -> None:
    """Constants in head and body, ``e(x, x)``, symbol constants and comparisons."""
    p = prog(
        {"e": (S, S), "loop": (S,), "tagged": (S, N), "not_a": (S,)},
        [
            "loop(x) :- e(x, x).",
            'tagged(y, 1) :- e("a", y).',
            'not_a(x) :- e(x, _), x != "a".',
        ],
        {"e": [("a", "a"), ("a", "b"), ("b", "c"), ("c", "c")]},
    )
    db = evaluate(p)
    assert db["loop"] == {("a",), ("c",)}
    assert db["tagged"] == {("a", 1), ("b", 1)}
    assert db["not_a"] == {("b",), ("c",)}


def test_explicit_facts_of_derived_relation_and_empty_relations() -> None:
    """Facts given for a derived relation stay; an unused relation is empty."""
    p = prog(
        {"e": (N, N), "p": (N, N), "unused": (N,)},
        ["p(x, y) :- e(x, y)."],
        {"e": [(1, 2)], "p": [(9, 9)]},
    )
    db = evaluate(p)
    assert db["p"] == {(1, 2), (9, 9)}
    assert db["unused"] == set()


def test_nullary_relations() -> None:
    """``nonempty()`` holds iff e has a tuple; ``empty()`` is its negation."""
    decls = {"e": (N, N), "nonempty": (), "empty": ()}
    rules = ["nonempty() :- e(_, _).", "empty() :- !nonempty()."]
    full = evaluate(prog(decls, rules, {"e": [(1, 1)]}))
    none = evaluate(prog(decls, rules, {"e": []}))
    assert (full["nonempty"], full["empty"]) == ({()}, set())
    assert (none["nonempty"], none["empty"]) == (set(), {()})


def test_eqrel_closure() -> None:
    """An eqrel relation is reflexive, symmetric and transitive over its elements."""
    p = prog(
        {"link": (N, N), "same": (N, N), "other": (N,)},
        ["same(x, y) :- link(x, y).", "other(x) :- same(x, 3)."],
        {"link": [(1, 2), (2, 3), (4, 4)]},
        eqrel=("same",),
    )
    db = evaluate(p)
    assert db["same"] == {(a, b) for a in (1, 2, 3) for b in (1, 2, 3)} | {(4, 4)}
    assert db["other"] == {(1,), (2,), (3,)}


def test_disjunction() -> None:
    """``r(x) :- a(x), (b(x) ; c(x))`` is the union of both alternatives."""
    a, b, c, r = (Relation(n, (N,)) for n in "abcr")
    x = Var("x")
    rule = Rule(Atom("r", (x,)), (Atom("a", (x,)),), ((Atom("b", (x,)),), (Atom("c", (x,)),)))
    p = Program((a, b, c, r), (rule,), {"a": [(1,), (2,), (3,)], "b": [(1,)], "c": [(3,), (4,)]})
    assert evaluate(p)["r"] == {(1,), (3,)}
    assert "r(x) :- a(x), (b(x) ; c(x))." in render_program(p)


@pytest.mark.parametrize(
    ("rules", "error"),
    [
        (["p(x) :- q(x), !p(x)."], NotStratifiable),
        (["p(x) :- q(x), !s(x).", "s(x) :- q(x), !p(x)."], NotStratifiable),
        (["p(x) :- q(y)."], UnsafeRule),
        (["p(x) :- q(x), !r(x, y)."], UnsafeRule),
        (["p(x) :- q(x), y < 3."], UnsafeRule),
        (["p(_) :- q(_)."], UnsafeRule),
        (["p(x, x) :- q(x)."], ArityMismatch),
    ],
)
def test_rejections(rules: list[str], error: type[Exception]) -> None:
    """Unstratifiable, unsafe and ill-formed programs raise, even on empty data."""
    p = prog({"p": (N,), "q": (N,), "r": (N, N), "s": (N,)}, rules)
    with pytest.raises(error):
        evaluate(p)


def test_generated_programs_are_stratifiable_and_safe() -> None:
    """The generator only produces programs the reference accepts (a few fixed examples)."""
    from hypothesis import given, settings

    seen: list[int] = []

    @settings(max_examples=50, database=None)
    @given(programs())
    def check(program: Program) -> None:
        strata(program)  # raises NotStratifiable otherwise
        try:
            evaluate(program, max_tuples=20_000)  # raises UnsafeRule, ArityMismatch otherwise
        except LimitExceeded:
            pass
        seen.append(1)

    check()
    assert seen
