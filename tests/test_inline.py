"""``inline`` relations: substituted into their uses (never materialised), refused where
Soufflé refuses them; on generated programs the results equal the reference evaluator's on
the same program without ``inline``."""

from __future__ import annotations

import pytest
from generators import Atom, Neg, Program, describe, engine_facts, programs, render_program
from gpu_engine.host.lang.parser import parse_program
from hypothesis import given, note, reject
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate
from test_fuzz import table_rows

from gpu_engine import Reasoner
from gpu_engine.ir import ProgramError


def run(text: str) -> dict[str, set[tuple]]:
    r = Reasoner(text, device="cpu")
    r.materialise()
    out = {}
    for name, rel in r.program.relations.items():
        t = r.relation(name)
        out[name] = set(zip(*(t.column(i).to_pylist() for i in range(rel.arity)), strict=True))
    return out


def test_inline_relations_are_not_materialised() -> None:
    text = (
        ".decl nat(x:number)\nnat(0).\nnat(x + 1) :- nat(x), x < 9.\n"
        ".decl even(x:number) inline\neven(x) :- nat(x), x % 2 = 0.\n"
        ".decl out(x:number)\nout(x) :- even(x), x > 3.\n"
    )
    p = parse_program(text, "t.dl").program
    assert "even" not in p.relations and all(r.head.relation != "even" for r in p.rules)
    assert run(text)["out"] == {(4,), (6,), (8,)}


def test_unification_with_constants_repeated_variables_and_expressions() -> None:
    got = run(
        ".decl b(x:number)\nb(0).\nb(x + 1) :- b(x), x < 6.\n"
        ".decl a(x:number, y:number) inline\na(0, 0).\na(x, y) :- b(x), b(y), x != y.\n"
        ".decl c(x:number, y:number)\nc(x, y) :- a(y, x), x % 2 != 0, x = y - 2.\n"
        ".decl same(x:number, y:number) inline\nsame(x, x) :- b(x).\n"
        ".decl d(x:number)\nd(x) :- same(x, 3), same(3, x).\n"
        ".decl succ(x:number, y:number) inline\nsucc(x, x + 1) :- b(x).\n"
        ".decl e(y:number)\ne(y) :- succ(4, y).\n"
        ".decl f(x:number)\nf(x) :- b(x), succ(_, x).\n"
    )
    assert got["c"] == {(1, 3), (3, 5)}
    assert got["d"] == {(3,)} and got["e"] == {(5,)}
    assert got["f"] == {(x,) for x in range(1, 7)}


def test_negated_inline_atoms() -> None:
    got = run(
        ".decl a2(x:number, y:number) inline\na2(x, y) :- x = y.\n"
        ".decl b2(x:number, y:number)\nb2(1, 2).\nb2(3, 3).\n"
        ".decl c2(x:number, y:number)\nc2(x, y) :- b2(x, y), !a2(x, y).\n"
        ".decl A3(x:number, y:number) inline\nA3(x, x) :- true.\n"
        ".decl C3(x:number, y:number)\nC3(x, y) :- b2(x, y), !A3(x, y).\n"
        ".decl K(x:number, y:number) inline\nK(x, 2) :- b2(x, _).\n"
        ".decl C4(x:number, y:number)\nC4(x, y) :- b2(x, y), !K(x, y).\n"
    )
    assert got["c2"] == {(1, 2)} and got["C3"] == {(1, 2)}
    assert got["C4"] == {(3, 3)}


def test_nullary_and_chained_inline_relations() -> None:
    got = run(
        ".decl i(x:number)\ni(1).\ni(2).\n.decl o(x:number)\n"
        ".decl m() inline\n.decl a1() inline\n.decl a2() inline\n"
        "o(x) :- i(x), m().\nm() :- a1().\nm() :- a2().\na1() :- i(_).\na2() :- i(3).\n"
        ".decl never(x:number) inline\n.decl p(x:number)\np(x) :- i(x), !never(x).\n"
        ".decl q(x:number)\nq(x) :- i(x), never(x).\n"
    )
    assert got["o"] == {(1,), (2,)} and got["p"] == {(1,), (2,)} and got["q"] == set()


def test_inline_relations_inside_components_and_cycles_through_others() -> None:
    got = run(
        ".decl a(x:number)\na(1).\n"
        ".decl b(x:number) inline\n.decl c(x:number)\n.decl d(x:number) inline\n"
        ".decl e(x:number)\n.decl f(x:number)\n"
        "f(x) :- d(x).\nd(x) :- c(x).\nc(x) :- b(x).\nb(x) :- e(x).\ne(x) :- d(x).\n"
        "b(x) :- a(x).\n"
        ".comp K {\n .decl tmp(x:number) inline\n tmp(x) :- a(x).\n .decl r(x:number)\n"
        " r(x + 1) :- tmp(x).\n}\n.init k = K\n"
    )
    assert got["f"] == {(1,)} and got["k.r"] == {(2,)}
    assert "k.tmp" not in got


def test_record_patterns_in_inline_heads() -> None:
    """A record pattern in an inline head is an equality with the argument, taken apart
    when the argument is bound (Soufflé's example__convex_hull)."""
    got = run(".type P = [x: number, y: number]\n"
              ".decl cross(a: P, b: P, v: number) inline\n"
              "cross([a0, a1], [b0, b1], v) :- v = a0 * b1 - a1 * b0.\n"
              ".decl p(a: P)\np([1, 2]). p([3, 4]). p(nil).\n"
              ".decl r(a: P, b: P, v: number)\nr(a, b, v) :- p(a), p(b), cross(a, b, v).\n")
    assert got["r"] == {("[1, 2]", "[1, 2]", 0), ("[1, 2]", "[3, 4]", -2),
                        ("[3, 4]", "[1, 2]", 2), ("[3, 4]", "[3, 4]", 0)}  # nil never matches



def test_wildcards_inside_record_arguments_of_inline_atoms() -> None:
    """``c([x, _])`` with ``c`` inline: the ``_`` is one fresh variable wherever ``c``'s
    head variable goes (a comparison included), as in Soufflé's inline_records test."""
    got = run(".type C = [f: symbol, s: symbol]\n"
              ".decl a(x: C, y: C) inline\na([\"h\", \"g\"], [\"t\", \"v\"]). a([\"t\", \"v\"], [\"n\", \"n\"]).\n"
              ".decl c(x: C) inline\nc(x) :- a(x, y), x != y.\n"
              ".decl d(x: symbol)\nd(x) :- c([x, _]).\n"
              ".decl e(x: symbol)\ne(x) :- a([x, _], [_, _]).\n")
    assert got["d"] == {("h",), ("t",)}
    assert got["e"] == {("h",), ("t",)}  # each '_' its own variable


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        (".decl a(x:number) inline\n.decl b(x:number)\na(x) :- b(x), a(x).\n", 1, 7,
         "recursive relations: a -> a"),
        (".decl a(x:number) inline\n.decl b(x:number) inline\na(x) :- b(x).\nb(x) :- a(x).\n",
         1, 7, "recursive relations: a -> b -> a"),
        (".decl a(x:number) inline\n.output a\n", 2, 9, "cannot have .output"),
        (".decl a(x:number) inline input\n", 1, 26, "'input' qualifier"),
        (".decl a(x:number, y:number) inline eqrel\n", 1, 36, "eqrel"),
        (".decl a(x:number) inline\n.decl b(x:number, y:number)\na(x) :- b(x, y).\n"
         ".decl c(x:number)\nc(x) :- b(x, _), !a(x).\n", 5, 18, "binds variables outside"),
        (".decl a(x:number) inline\n.decl b(x:number, y:number)\na(x) :- b(x, x).\n"
         ".decl c(x:number)\nc(x) :- b(x, _), !a(_).\n", 5, 21, "unnamed variable"),
        (".decl a(x:number) inline\n.decl b(x:number)\na(x) :- b(x).\nb(x) :- a(x, x).\n",
         4, 9, "arity mismatch"),
        # a variable only inside a head expression is local (found by the generated test)
        (".decl a(x:number) inline\n.decl b(x:number)\na(x + x) :- b(x).\n"
         ".decl c(x:number)\nc(y) :- b(y), !a(y).\n", 5, 15, "binds variables outside"),
    ],
)
def test_inline_errors(text: str, line: int, col: int, fragment: str) -> None:
    with pytest.raises(ProgramError) as info:
        parse_program(text, "t.dl")
    err = info.value
    assert err.loc is not None and (err.loc.line, err.loc.column) == (line, col), str(err)
    assert fragment in err.message, str(err)


# --- generated programs --------------------------------------------------------------------


def _inline_candidates(program: Program) -> list[str]:
    """Relations that may be inline: no external facts, not eqrel, not recursive."""
    deps: dict[str, set[str]] = {r.name: set() for r in program.relations}
    for rule in program.rules:
        for conj in rule.conjunctions():
            for lit in conj:
                atom = lit.atom if isinstance(lit, Neg) else lit
                if isinstance(atom, Atom):
                    deps[rule.head.rel].add(atom.rel)
    reach = {n: set(d) for n, d in deps.items()}
    changed = True
    while changed:
        changed = False
        for n in reach:
            extra = set().union(*(reach[m] for m in reach[n])) - reach[n]
            if extra:
                reach[n] |= extra
                changed = True
    return [r.name for r in program.relations
            if r.name not in program.facts and not r.eqrel and r.name not in reach[r.name]]


def _with_inline(text: str, names: set[str]) -> str:
    lines = []
    for line in text.splitlines():
        if line.startswith(".output ") and line.split()[1] in names:
            continue
        if line.startswith(".decl ") and line[6:].split("(")[0] in names:
            line += " inline"
        lines.append(line)
    return "\n".join(lines) + "\n"


@given(programs(), st.data())
def test_inlining_equals_the_reference(program: Program, data: st.DataObject) -> None:
    candidates = _inline_candidates(program)
    if not candidates:
        reject()
    chosen = data.draw(st.sets(st.sampled_from(candidates), min_size=1))
    try:
        expected = evaluate(program, max_tuples=3000)
    except LimitExceeded:
        reject()
    text = _with_inline(render_program(program), chosen)
    note(describe(program))
    note(f"inline: {sorted(chosen)}\n{text}")
    try:
        r = Reasoner(text, device="cpu")
    except ProgramError as exc:  # the refusals Soufflé makes too
        if "cannot inline the negated" in exc.message or "expands to" in exc.message:
            reject()
        raise
    assert not chosen & set(r.program.relations)
    for name, data_ in engine_facts(program).items():
        r.add_facts(name, data_)
    r.materialise()
    for rel in program.relations:
        if rel.name in chosen:
            continue
        got = set(table_rows(r.relation(rel.name), rel))
        assert got == expected[rel.name], rel.name
