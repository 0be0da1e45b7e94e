"""Tests of the Datalog front end (host/lang/)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from gpu_engine.host.lang.dl_fold import fold_call, to_float32, wrap_number
from gpu_engine.host.lang.dl_lexer import DatalogLexer
from gpu_engine.host.lang.parser import Directive, ParsedProgram, parse_file, parse_program
from lark import Lark, logger

from gpu_engine.ir import Atom, Call, Compare, Const, Negation, ProgramError, Var

SHARED = Path(__file__).resolve().parents[2] / "shared"
CASE_DIRS = sorted(p.parent for p in SHARED.glob("conformance/souffle*/*/*.dl"))
GRAMMAR = Path(__file__).resolve().parents[1] / "host" / "lang" / "grammar.lark"


def parse(text: str) -> ParsedProgram:
    return parse_program(text, "t.dl")


def error_of(text: str) -> ProgramError:
    with pytest.raises(ProgramError) as info:
        parse(text)
    return info.value


def where(err: ProgramError) -> tuple[int, int]:
    assert err.loc is not None and err.loc.file == "t.dl"
    return err.loc.line, err.loc.column


def rules_of(text: str) -> list[str]:
    return [str(r) for r in parse(text).program.rules]


# --- the conformance programs ----------------------------------------------------------


@pytest.fixture(scope="module")
def cases() -> list[Path]:
    if not CASE_DIRS:
        pytest.skip(f"conformance cases not found under {SHARED} (../shared next to the repo)")
    return CASE_DIRS


def test_every_conformance_program_parses(cases: list[Path]) -> None:
    assert len(cases) >= 100
    for case in cases:
        dl = next(case.glob("*.dl"))
        parsed = parse_file(dl)
        prog = parsed.program
        if case.name.startswith("syntactic__") and case.name.split("__")[1] in ("empty", "type"):
            assert not prog.relations
            continue
        assert prog.relations, case
        assert prog.rules or prog.facts, case
        outputs = {d.relation for d in parsed.directives if d.kind == "output"}
        expected = {p.stem for p in case.glob("*.csv")}
        assert expected <= outputs, case  # every expected output is an .output relation
        for rule in prog.rules:
            assert rule.head.relation in prog.relations
            assert len(rule.head.args) == prog.relations[rule.head.relation].arity


def test_conformance_shapes(cases: list[Path]) -> None:
    def load(name: str) -> ParsedProgram:
        return parse_file(next(SHARED.glob(f"conformance/souffle*/{name}/*.dl")))

    lubm = load("example__lubm").program
    assert len(lubm.relations) == 41 and len(lubm.rules) == 57
    qualifiers = load("syntactic__qualifiers3")
    assert qualifiers.program.relations["D"].representation == "eqrel"
    assert qualifiers.program.relations["C"].representation == "set"
    assert any("brie" in n for n in qualifiers.notes)
    plan = load("semantic__plan3")
    assert any(".plan" in n for n in plan.notes)
    numbers = load("semantic__negative_numbers").program.facts["expr"]
    assert set(numbers) == {(-2147483648,)} and len(numbers) == 18
    rel_2 = load("evaluation__indexed_inequalities").program.facts["rel_2"]
    assert rel_2 == [(4294967291,)]
    ops = load("evaluation__numeric_binary_constraint_op").program
    assert sorted(ops.facts["Unsigned"]) == [(i,) for i in range(1, 8)]
    assert "EmptyUnsigned" not in ops.facts and not ops.rules


def test_fast_lexer_matches_lark_contextual_lexer(cases: list[Path]) -> None:
    text = GRAMMAR.read_text()
    reference = Lark(text, parser="lalr", lexer="contextual", maybe_placeholders=True)
    ours = Lark(text, parser="lalr", lexer=DatalogLexer, maybe_placeholders=True)
    programs = [next(c.glob("*.dl")).read_text() for c in cases]
    programs.append(".decl A(min:number)\nA(x) :- A(x), x = max(1, min(2,3)) band 4 bshl 1.\n")
    for program in programs:
        assert reference.parse(program) == ours.parse(program)


def test_grammar_is_conflict_free(caplog: pytest.LogCaptureFixture) -> None:
    logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            Lark(GRAMMAR.read_text(), parser="lalr", debug=True)
    finally:
        logger.setLevel(logging.WARN)
    assert "conflict" not in caplog.text.lower()


# --- declarations, facts, directives ---------------------------------------------------


def test_declarations_and_types() -> None:
    p = parse(
        ".type Id <: number\n.type Name = symbol\n.type Either = Id | Num\n.type Num <: number\n"
        ".number_type Old\n.symbol_type OldS\n"
        ".decl R(a:Id, b:Name, c:unsigned, d:float, e:Either, f:Old, g:OldS)\n.decl Z()\n"
        ".decl P, Q(x:number)\n"
    ).program
    assert p.relations["R"].types == (
        "number",
        "symbol",
        "unsigned",
        "float",
        "number",
        "number",
        "symbol",
    )
    assert p.relations["R"].attributes[0] == ("a", "number")
    assert p.relations["Z"].arity == 0
    assert p.relations["P"].types == p.relations["Q"].types == ("number",)
    assert p.relations["R"].loc.line == 7 and p.relations["R"].loc.column == 7


def test_facts_have_python_values() -> None:
    p = parse(
        ".decl R(a:number, b:symbol, c:unsigned, d:float)\n.decl Z()\n"
        'R(1, "a", 2, 1.5).\nR(-7, "q\\"t\\\\n\\n", 0xFFFFFFFF, -2).\nR(0x10, "", 0b101u, 3).\nZ().\n'
    ).program
    assert p.facts["R"] == [
        (1, "a", 2, 1.5),
        (-7, 'q"t\\n\n', 4294967295, -2.0),
        (16, "", 5, 3.0),
    ]
    assert p.facts["Z"] == [()]
    assert isinstance(p.facts["R"][0][3], float) and isinstance(p.facts["R"][0][2], int)


def test_ground_fact_expressions_are_folded_with_32_bit_semantics() -> None:
    p = parse(
        ".decl N(x:number)\n.decl U(x:unsigned)\n.decl F(x:float)\n"
        "N(-7 / 2). N(-7 % 3). N(7 % -3). N(2^31). N(-(2^31)). N(2147483647 + 1). N(--2).\n"
        "N(2^2^3). N(2^4 % 13). N(1 bshl 31). N(-16 bshr 2). N(-16 bshru 28). N(bnot 0).\n"
        "N(3 land 0). N(3 lor 0). N(lnot 5). N(6 lxor 0). N(max(1, 9, 4)). N(ftoi(2.75)).\n"
        "U(2^32 - 5). U(0 - 1). U(itou(-1)).\nF(1 / 3). F(itof(3) / 2).\n"
    ).program
    assert [v for (v,) in p.facts["N"]] == [
        -3,
        -1,
        1,
        -(2**31),
        -(2**31),
        -(2**31),
        2,
        256,
        3,
        -(2**31),
        -4,
        15,
        -1,
        0,
        1,
        0,
        1,
        9,
        2,
    ]
    assert p.facts["U"] == [(4294967291,), (4294967295,), (4294967295,)]
    assert p.facts["F"] == [(to_float32(1 / 3),), (1.5,)]


def test_unfoldable_ground_fact_becomes_bodyless_rule() -> None:
    p = parse(".decl N(x:number)\nN(1 / 0).\n").program
    assert not p.facts
    (rule,) = p.rules
    assert rule.body == () and rule.head.args == (
        Call("/", (Const(1, "number"), Const(0, "number")), "number"),
    )


def test_directives_with_parameters() -> None:
    p = parse(
        ".decl A(x:number) output printsize brie\n.decl B, C(x:symbol)\n"
        '.input B(IO=file, filename="b.csv", delimiter="\\t")\n'
        ".output C, A(IO=stdout)\n.printsize B\n.output A()\n"
    )
    assert p.directives == [
        Directive("output", "A", {}, p.directives[0].loc),
        Directive("printsize", "A", {}, p.directives[1].loc),
        Directive("input", "B", {"IO": "file", "filename": "b.csv", "delimiter": "\t"}),
        Directive("output", "C", {"IO": "stdout"}),
        Directive("output", "A", {"IO": "stdout"}),
        Directive("printsize", "B", {}),
        Directive("output", "A", {}),
    ]
    assert (p.directives[0].loc.line, p.directives[0].loc.column) == (1, 19)
    assert (p.directives[2].loc.line, p.directives[2].loc.column) == (3, 8)
    assert any("'brie'" in n for n in p.notes)


def test_notes_for_ignored_constructs() -> None:
    p = parse(
        '.decl A(x:number) no_inline btree\n.pragma "magic-transform" "*"\n'
        "A(1).\nA(x) :- A(x).\n.plan 0:(1)\n"
    )
    assert len(p.notes) == 4
    assert p.notes[0].startswith("t.dl:1:19: ignored the 'no_inline' qualifier")
    assert p.notes[2].startswith("t.dl:5:1: ignored .plan")
    # the magic-set transformation is applied, not ignored (tests/test_magic.py)
    assert p.notes[3].startswith("t.dl:2:1: magic-transform: demand-driven evaluation of A")
    p = parse('.decl A(x:number)\n.pragma "other" "x"\nA(1).\n')
    assert p.notes == ["t.dl:2:1: ignored .pragma \"other\" \"x\""]


def test_eqrel() -> None:
    p = parse(".decl E(a:number, b:number) eqrel\nE(1, 2).\n").program
    assert p.relations["E"].representation == "eqrel"
    assert p.facts["E"] == [(1, 2)]


# --- rules -----------------------------------------------------------------------------


def test_disjunction_and_multiple_heads_expand() -> None:
    rules = rules_of(
        ".decl A(x:number)\n.decl B(x:number)\n.decl C(x:number)\n.decl D(x:number, y:number)\n"
        "A(x), B(x) :- C(x) ; D(x, _), !C(x).\n"
        "A(x) :- C(x), (B(x) ; D(x, x)), (x < 3 ; x > 5).\n"
    )
    assert rules == [
        "A(x) :- C(x).",
        "A(x) :- D(x, _), !C(x).",
        "B(x) :- C(x).",
        "B(x) :- D(x, _), !C(x).",
        "A(x) :- C(x), B(x), x < 3.",
        "A(x) :- C(x), B(x), x > 5.",
        "A(x) :- C(x), D(x, x), x < 3.",
        "A(x) :- C(x), D(x, x), x > 5.",
    ]


def test_negation_is_pushed_inward() -> None:
    p = parse(
        ".decl A(x:number)\n.decl B(x:number)\n"
        "A(x) :- B(x), !(x < 3 ; A(x)).\nA(x) :- B(x), !!A(x).\nA(x) :- B(x), !(x = 1, A(x)).\n"
    ).program
    assert [str(r) for r in p.rules] == [
        "A(x) :- B(x), x >= 3, !A(x).",
        "A(x) :- B(x), A(x).",
        "A(x) :- B(x), x != 1.",
        "A(x) :- B(x), !A(x).",
    ]
    neg = p.rules[0].body[2]
    assert isinstance(neg, Negation) and (neg.loc.line, neg.loc.column) == (3, 15)


def test_true_false_and_ground_comparisons() -> None:
    p = parse(
        ".decl A(x:number)\n.decl B(x:number)\n"
        "A(1) :- true.\nA(2) :- 1 < 2, 2.5 >= 2.5.\nA(3) :- false.\nA(4) :- 2 < 1.\n"
        "A(x) :- B(x), true, 1 != 1 ; B(x), x > 0.\n"
    )
    assert p.program.facts["A"] == [(1,), (2,)]
    assert [str(r) for r in p.program.rules] == ["A(x) :- B(x), x > 0."]
    assert sum("never fire" in n for n in p.notes) == 3


def test_anonymous_variables_are_fresh_and_named_underscore_variables_join() -> None:
    p = parse(
        ".decl R(x:symbol, y:symbol)\n.decl S(x:symbol)\n"
        "S(x) :- R(x, _), R(_, x), !R(_, _).\nS(x) :- R(x, _y), R(_y, x), R(_, v_y).\n"
    ).program
    first, second = p.rules
    assert first.body[0] == Atom("R", (Var("x"), Var("_0")))
    assert first.body[1] == Atom("R", (Var("_1"), Var("x")))
    assert first.body[2] == Negation(Atom("R", (Var("_2"), Var("_3"))))
    assert all(v.anonymous for v in (Var("_0"), Var("_3")))
    renamed = second.body[0].args[1]
    assert isinstance(renamed, Var) and not renamed.anonymous
    assert second.body[1].args[0] == renamed  # the two _y occurrences join
    assert renamed != Var("v_y") and second.body[2].args[1] == Var("v_y")


def test_expressions_in_heads_and_body_atoms_and_bindings() -> None:
    p = parse(
        ".decl A(x:number)\n.decl B(x:number, y:number)\n"
        "A(x + 1) :- A(x), x < 10.\nB(x, y) :- A(x), A(y + 1), z = x * 2, y = z - 1.\n"
    ).program
    r1, r2 = p.rules
    assert r1.head.args == (Call("+", (Var("x"), Const(1, "number")), "number"),)
    assert r2.body[1] == Atom("A", (Call("+", (Var("y"), Const(1, "number")), "number"),))
    assert r2.body[2] == Compare(
        "=", Var("z"), Call("*", (Var("x"), Const(2, "number")), "number"), "number"
    )
    assert (r2.body[2].loc.line, r2.body[2].loc.column) == (4, 28)


# --- types -----------------------------------------------------------------------------


def test_polymorphic_literals_take_the_type_of_their_context() -> None:
    p = parse(
        ".decl F(x:float)\n.decl U(x:unsigned)\n.decl N(x:number)\n"
        "F(x / 2) :- F(x), x >= 1.\nU(x + 1) :- U(x), x < 2^32 - 1.\nN(x) :- N(x), x > -1.\n"
    ).program
    f, u, n = p.rules
    assert f.head.args[0] == Call("/", (Var("x"), Const(2.0, "float")), "float")
    assert f.body[1] == Compare(">=", Var("x"), Const(1.0, "float"), "float")
    assert u.head.args[0] == Call("+", (Var("x"), Const(1, "unsigned")), "unsigned")
    assert u.body[1] == Compare("<", Var("x"), Const(4294967295, "unsigned"), "unsigned")
    assert n.body[1] == Compare(">", Var("x"), Const(-1, "number"), "number")


def test_binding_variable_types() -> None:
    p = parse(
        ".decl F(x:float)\n.decl S(x:symbol)\n.decl N(x:number)\n"
        "F(x) :- x = 5.\nS(s) :- N(n), s = to_string(n).\nN(y) :- N(x), y = z + 1, z = x.\n"
    ).program
    f, s, n = p.rules
    assert f.body == (Compare("=", Var("x"), Const(5.0, "float"), "float"),)
    assert s.body[1] == Compare("=", Var("s"), Call("to_string", (Var("n"),), "symbol"), "symbol")
    assert n.body[1].type == "number"


def test_functor_types_and_conversions() -> None:
    p = parse(
        ".decl S(x:symbol)\n.decl N(x:number)\n.decl F(x:float)\n.decl U(x:unsigned)\n"
        'N(strlen(cat(s, "x"))) :- S(s).\nS(substr(s, 0, 2)) :- S(s).\nN(ord(s)) :- S(s).\n'
        "F(to_float(x)) :- N(x).\nU(to_unsigned(x)) :- F(x).\nN(to_number(s)) :- S(s).\n"
        "N(to_number(x)) :- N(x).\nF(itof(x) + utof(u)) :- N(x), U(u).\n"
        "N(min(x, 3) band bnot x) :- N(x).\n"
    ).program
    heads = [r.head.args[0] for r in p.rules]
    assert heads[0] == Call(
        "strlen", (Call("cat", (Var("s"), Const("x", "symbol")), "symbol"),), "number"
    )
    assert heads[1].type == "symbol" and heads[2] == Call("ord", (Var("s"),), "number")
    assert heads[3] == Call("itof", (Var("x"),), "float")
    assert heads[4] == Call("ftou", (Var("x"),), "unsigned")
    assert heads[5] == Call("to_number", (Var("s"),), "number")
    assert heads[6] == Var("x")
    assert heads[7].op == "+" and heads[7].type == "float"
    assert heads[8] == Call(
        "band",
        (
            Call("min", (Var("x"), Const(3, "number")), "number"),
            Call("bnot", (Var("x"),), "number"),
        ),
        "number",
    )


def test_as_casts() -> None:
    p = parse(
        ".type Id <: number\n.decl N(x:number)\n.decl I(x:Id)\n.decl U(x:unsigned)\n"
        "I(as(x, Id)) :- N(x).\nU(as(x, unsigned)) :- N(x).\nN(x) :- N(x), x = as(3, Id).\n"
    ).program
    assert p.rules[0].head.args == (Var("x"),)
    assert p.rules[1].head.args == (Call("itou", (Var("x"),), "unsigned"),)
    assert p.rules[2].body[1] == Compare("=", Var("x"), Const(3, "number"), "number")
    p = parse(".decl N(x:number)\n.decl F(x:float)\nF(as(x, float)) :- N(x).\n").program
    assert p.rules[0].head.args == (Call("bits", (Var("x"),), "float"),)  # the same bits
    err = error_of(".decl N(x:number)\n.decl S(x:symbol)\nS(as(x, symbol)) :- N(x).\n")
    assert where(err) == (3, 3) and "as() from number to symbol" in err.message


# --- errors with exact locations -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        (".decl A(x:number)\nA(1) :- .\n", 2, 9, "unexpected '.', expected '('"),
        (".decl A(x:number)\nA(1) :- A(x) A(x).\n", 2, 14, "unexpected identifier 'A'"),
        (".decl A(x:number)\nA(1) :- A(x)", 2, 13, "unexpected end of input"),
        (".decl A(x:number)\nA(1) :- A(x), x ~ 1.\n", 2, 17, "unexpected character '~'"),
        ('.decl A(x:symbol)\nA("abc).\n', 2, 3, "unterminated string"),
        (".decl A(x:symbol)\n /* abc\n", 2, 2, "unterminated comment"),
        ('.decl A(x:symbol)\nA("a\\qb").\n', 2, 3, "unknown escape sequence"),
        ('#include "x.dl"\n', 1, 1, "preprocessor"),
        (".decl r(x:symbol, y:symbol) choice-domain x, y btree\n", 1, 48,
         "unexpected 'btree' after the choice-domain"),
    ],
)
def test_syntax_errors(text: str, line: int, col: int, fragment: str) -> None:
    err = error_of(text)
    assert where(err) == (line, col)
    assert fragment in err.message
    assert str(err).startswith(f"t.dl:{line}:{col}: ")


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        (".decl A(x:number)\nA(x) :- B(x).\n", 2, 9, "undeclared relation 'B'"),
        (".decl A(x:number)\nC(1).\n", 2, 1, "undeclared relation 'C'"),
        (".decl A(x:number)\n.output A, Foo\n", 2, 12, "undeclared relation 'Foo'"),
        (".decl A(x:number)\n.decl A(y:number)\n", 2, 7, "redeclared"),
        (".decl A(x:number, x:symbol)\n", 1, 19, "attribute 'x' declared twice"),
        (".decl A(x:number)\nA(x) :- A(x, x).\n", 2, 9, "arity mismatch"),
        (".decl A(x:number)\nA(1, 2).\n", 2, 1, "has arity 1"),
        (".decl A(x:foo)\n", 1, 11, "unknown type 'foo'"),
        (".type T <: U\n", 1, 12, "unknown type 'U'"),
        (".type T <: number\n.type T <: symbol\n", 2, 7, "type 'T' redeclared"),
        (".type A = B\n.type B = A\n", 1, 7, "cyclic"),
        (".type A <: number\n.type B <: symbol\n.type C = A | B\n", 3, 15, "mixes base types"),
        (".decl A(x:number, y:number, z:number) eqrel\n", 1, 39, "must be binary"),
        (".decl A(x:number, y:symbol) eqrel\n", 1, 29, "same type"),
        (".decl A(x:number, y:number) eqrel brie\n", 1, 35, "more than one representation"),
        # Soufflé's evaluation-internal relations: debug_delta only (tests/test_iteration_counter)
        (".decl A(x:number)\n.decl D = delta_debug(A)\n", 2, 11, "unknown relation kind"),
        (".decl A(x:number)\n.decl D = debug_delta(B)\n", 2, 23, "undeclared relation"),
        # .plan is ignored, but an order that is not one of the rule's atoms is an error
        (".decl A(x:number)\nA(x) :- A(x), A(x).\n.plan 0: (1, 1)\n", 3, 7, "execution order"),
        (".decl A(x:number)\nA(x) :- A(x), A(x).\n.plan 0: (1, 2), 1: (2)\n", 3, 18,
         "rule's 2 body atom(s)"),
        (".decl A(x:number)\nA(x) <= A(y) :- A(x), x < y.\n.plan 0: (1, 2)\n", 3, 7,
         "rule's 3 body atom(s)"),
    ],
)
def test_declaration_errors(text: str, line: int, col: int, fragment: str) -> None:
    err = error_of(text)
    assert where(err) == (line, col)
    assert fragment in err.message


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        # variable used with two types
        (
            "A(x) :- A(x), S(x).",
            3,
            17,
            "variable 'x' is number (argument 1 of 'A') but argument 1 of 'S' is symbol",
        ),
        # head attribute type differs from the body's
        ("A(x) :- S(x).", 3, 3, "variable 'x' is symbol but argument 1 of 'A' is number"),
        # comparison of a number and a symbol
        ("A(x) :- A(x), S(y), x = y.", 3, 23, "left side is number, right side is symbol"),
        ('A(x) :- A(x), x != "a".', 3, 17, "left side is number, right side is symbol"),
        # symbol in arithmetic
        ("S(x) :- S(y), x = y + 1.", 3, 21, "'+' computes number or unsigned or float values"),
        ('A(x + "a") :- A(x).', 3, 7, 'symbol constant "a"'),
        ("A(1.5).", 3, 3, "float constant 1.5"),
        ("A(1u).", 3, 3, "unsigned constant 1u"),
        ("S(1).", 3, 3, "numeric constant 1 but argument 1 of 'S' is symbol"),
        ("A(2147483648).", 3, 3, "out of the 32-bit range"),
        (
            "A(x) :- A(x), strlen(x) = 1.",
            3,
            22,
            "variable 'x' is number but argument 1 of 'strlen' is symbol",
        ),
        ("A(x % 2.5) :- A(x).", 3, 7, "float constant 2.5 but an operand of '%' is number"),
        ("A(x) :- A(x), itof(x) % 2.0 = 1.0.", 3, 23, "'%' computes number or unsigned values"),
    ],
)
def test_type_errors(text: str, line: int, col: int, fragment: str) -> None:
    err = error_of(".decl A(x:number)\n.decl S(x:symbol)\n" + text + "\n")
    assert where(err) == (line, col)
    assert "type mismatch" in err.message or "comparison" in err.message or "range" in err.message
    assert fragment in err.message


@pytest.mark.parametrize(
    ("text", "line", "col", "name"),
    [
        ("A(y) :- A(x).", 3, 3, "y"),  # head
        ("A(x) :- A(x), !B(x, y).", 3, 21, "y"),  # negated atom
        ("A(x) :- A(x), y < 3.", 3, 15, "y"),  # comparison
        ("A(x) :- A(x), A(x + y).", 3, 21, "y"),  # inside an expression
        ("A(x) :- A(z), x = y + 1, y = x - 1.", 3, 3, "x"),  # circular binding
        ("A(x).", 3, 3, "x"),  # fact
        ("A(x) :- B(x + 1, 2).", 3, 3, "x"),  # expressions in atoms do not bind
    ],
)
def test_unsafe_variables(text: str, line: int, col: int, name: str) -> None:
    err = error_of(".decl A(x:number)\n.decl B(x:number, y:number)\n" + text + "\n")
    assert where(err) == (line, col)
    assert f"unsafe variable '{name}'" in err.message


def test_safe_programs() -> None:
    p = parse(
        ".decl A(x:number)\n.decl B(x:number, y:number)\n"
        "A(x) :- A(x), !B(x, _).\n"  # wildcards in negations are fine
        "A(x) :- A(y), x = y + 1.\n"  # binding equality
        "A(x) :- A(y), z = y * 2, x = z + w, w = 1.\n"  # chained bindings
        "B(x, y) :- A(x), y = x, !B(y, x).\n"
    ).program
    assert len(p.rules) == 4


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        ("A(_) :- A(1).", 2, 3, "'_' is not allowed in a rule head"),
        ("A(x) :- A(x), x < _.", 2, 19, "'_' is not allowed in a comparison"),
        ("A(x) :- A(x), A(_ + 1).", 2, 17, "'_' is not allowed inside an expression"),
        (".type P = [a:Nope]", 2, 14, "unknown type 'Nope'"),
        (".type P = A {x:number} | A {}", 2, 26, "ADT branch 'A' declared twice"),
        ("A(c) :- c = count : { A(_) ; A(1) }.", 2, 13, "disjunction"),
        ("A(c) :- c = sum x : A(y).", 2, 17, "target variable"),
        ("A(c) :- A(x), c = @f(x).", 2, 20, "functor 'f' is not declared"),
        ("A(c) :- A(x), c = [x, x].", 2, 19, "a record but"),
        (".functor f(x:number):number stateful", 2, 10, "stateful functors"),
        (".limitsize A(m=5)", 2, 12, "n=<count>"),  # (tests/test_iteration_counter.py)
        ("A(x) :- A(y), x = 1 + range(1, 5).", 2, 23, "'range' is only supported"),
    ],
)
def test_unsupported_features(text: str, line: int, col: int, fragment: str) -> None:
    err = error_of(".decl A(x:number)\n" + text + "\n")
    assert where(err) == (line, col)
    assert fragment in err.message


# --- constant folding ------------------------------------------------------------------


def test_fold_helpers() -> None:
    assert wrap_number(2**31) == -(2**31) and wrap_number(-(2**31) - 1) == 2**31 - 1
    assert to_float32(0.1) != 0.1 and to_float32(to_float32(0.1)) == to_float32(0.1)
    num = lambda v: Const(v, "number")  # noqa: E731
    assert fold_call("/", (num(-7), num(2)), "number") == num(-3)
    assert fold_call("%", (num(-7), num(2)), "number") == num(-1)
    assert fold_call("/", (num(1), num(0)), "number") is None
    assert fold_call("bshl", (num(1), num(32)), "number") is None
    assert fold_call("^", (num(3), num(-1)), "number") == num(0)
    assert fold_call("-", (Const(0, "unsigned"), Const(1, "unsigned")), "unsigned") == Const(
        4294967295, "unsigned"
    )
    assert fold_call("ftoi", (Const(3e10, "float"),), "number") is None


# --- performance -----------------------------------------------------------------------


def test_200kb_program_parses() -> None:
    """A large program parses completely (its parse time is a benchmark concern, not a
    test assertion)."""
    parts = [".decl e(x:number, y:symbol)\n.decl p(x:number, y:symbol)\n.output p\n"]
    i = 0
    while sum(map(len, parts)) < 200_000:
        parts.append(f'e({i}, "s{i}").\np(x + {i}, y) :- e(x, y), x < {i} * 2, !p(x, "q{i}").\n')
        i += 1
    text = "".join(parts)
    parsed = parse_program(text)
    assert len(parsed.program.rules) == i and len(parsed.program.facts["e"]) == i


@pytest.mark.parametrize("text", ['q"r', "back\\slash", "tab\there", "new\nline", "plain"])
def test_symbol_constants_print_as_literals_that_read_back(text: str) -> None:
    """--stats and error messages print rules with fmt_term: a symbol with quotes,
    backslashes or control characters is escaped, and the literal parses to the same symbol."""
    from gpu_engine.ir import fmt_term

    literal = fmt_term(Const(text, "symbol"))
    parsed = parse_program(f".decl a(x: symbol)\na({literal}).", "<t>").program
    assert [tuple(r) for r in parsed.facts["a"]] == [(text,)]


def test_instance_relations_whose_names_start_with_a_directive() -> None:
    """``pt.declA``: ``.decl`` is a directive only as a whole word (Soufflé's
    syntactic/dot_identifiers)."""
    from gpu_engine import Reasoner

    r = Reasoner(".comp P {\n .decl declA(u:number)\n .decl outputB(u:number)\n}\n"
                 ".init pt = P\npt.declA(3).\npt.outputB(4).\n.decl r(x:number)\n"
                 "r(x) :- pt.declA(x) ; pt.outputB(x).\n", device="cpu")
    r.materialise()
    assert sorted(r.render("r").split()) == ["3", "4"]


def test_annotations_are_ignored() -> None:
    """Soufflé 2.4's ``@[...]`` and ``@![...]`` (balanced token trees, strings skipped)
    before declarations, attributes, fields and rules; locations after them stay right."""
    from gpu_engine import Reasoner

    text = ('@[xtype(T)]\n.type R = [\n  @[form = {=}] a: number,\n  @[f [=] "x]y"] b: number\n]\n'
            '@[rel = "edge"]\n.decl e(@[key] x: number, y: number)\n@![inner]\n'
            '.decl r(x: R)\n@[rule(1)]\nr([x, y]) :- e(x, y).\ne(1, 2).\n')
    r = Reasoner(text, device="cpu")
    r.materialise()
    assert r.render("r").split("\n")[0] == "[1, 2]"
    err = error_of('.decl e(x: number)\n@[a = (1,\ne(1).\n')
    assert where(err) == (2, 1) and "unterminated annotation" in err.message
    err = error_of('.decl e(x: number)\n@[a = "q"] e(1) :- .\n')
    assert where(err) == (2, 20)


def test_parser_tables_are_cached_between_processes(tmp_path, monkeypatch) -> None:
    """The analysed grammar is kept in the user's cache folder; a damaged cache file is
    rebuilt, an unwritable folder or ``GPU_ENGINE_PARSER_CACHE=0`` means no cache."""
    from gpu_engine.host.lang import parser as P

    text = ".decl e(x:number)\ne(1).\n.output e"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    P._parser.cache_clear()
    try:
        path = Path(P._cache_file(P._GRAMMAR.read_text(encoding="utf-8")))
        assert path.parent == tmp_path / "gpu-engine"
        assert P.parse_program(text).program.facts["e"] == [(1,)]
        assert path.is_file()
        path.write_bytes(path.read_bytes()[:100])  # damaged: the digest line, then garbage
        P._parser.cache_clear()
        assert P.parse_program(text).program.facts["e"] == [(1,)]
        monkeypatch.setenv("GPU_ENGINE_PARSER_CACHE", "0")
        assert P._cache_file("g") is False
        monkeypatch.delenv("GPU_ENGINE_PARSER_CACHE")
        blocked = tmp_path / "file"
        blocked.write_text("")
        monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # not a folder
        assert P._cache_file("g") is False
    finally:
        P._parser.cache_clear()
