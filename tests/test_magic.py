"""The magic-set transformation (``.pragma "magic-transform"``, gpu_engine/magic.py).

Judged by the reference evaluator on the untransformed program: on random stratified programs
with a query relation whose rule binds constants, the query's answers equal the reference's.
"""

from __future__ import annotations

from generators import (
    Atom,
    Const,
    Program,
    Relation,
    Rule,
    Var,
    describe,
    engine_facts,
    render_program,
)
from generators import programs as programs_strategy
from gpu_engine.host.lang.parser import parse_program
from hypothesis import event, given, note, reject
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate

PRAGMA = '.pragma "magic-transform" "*"\n'


@st.composite
def queried_programs(draw: st.DrawFn) -> Program:
    """A generated program plus ``query(...) :- rel(c, X, ...)`` with some bound positions."""
    program = draw(programs_strategy())
    target = draw(st.sampled_from([r for r in program.relations if r.arity > 0] or [None]))
    if target is None:
        reject()
    pool: dict[str, list] = {}
    for rows in list(program.facts.values()) + list(program.inline_facts.values()):
        for row in rows:
            for v in row:
                pool.setdefault("symbol" if isinstance(v, str) else "number", []).append(v)
    args, free = [], []
    for i, ty in enumerate(target.types):
        if pool.get(ty) and draw(st.booleans()):
            args.append(Const(draw(st.sampled_from(pool[ty]))))
        else:
            args.append(Var(f"Q{i}"))
            free.append((f"Q{i}", ty))
    query = Relation("query", tuple(ty for _, ty in free))
    rule = Rule(Atom("query", tuple(Var(n) for n, _ in free)), (Atom(target.name, tuple(args)),))
    program.relations = (*program.relations, query)
    program.rules = (*program.rules, rule)
    return program


def _rows(table, arity: int) -> set[tuple]:
    if arity == 0:
        return {()} if table.num_rows else set()
    return set(zip(*(table.column(i).to_pylist() for i in range(arity)), strict=True))


@given(program=queried_programs())
def test_magic_query_matches_reference(program: Program, device: str) -> None:
    from gpu_engine import Reasoner

    try:
        expected = evaluate(program, max_tuples=3000)
    except LimitExceeded:
        reject()
    # only the query is an output: every other relation with rules may be transformed
    lines = render_program(program).splitlines()
    text = PRAGMA + "\n".join(
        line for line in lines if not line.startswith(".output") or line == ".output query"
    )
    note(text)
    note(describe(program))
    reasoner = Reasoner(text, device=device)
    for name, data in engine_facts(program).items():
        reasoner.add_facts(name, data)
    reasoner.materialise()
    note(f"transformed: {reasoner.notes}")
    event("transformed" if any("magic-transform" in n for n in reasoner.notes) else "plain")
    query = program.relation("query")
    got = _rows(reasoner.relation("query"), query.arity)
    assert got == expected["query"], f"{text}\nexpected {expected['query']}, got {got}"


def test_samegen_demand_only() -> None:
    """The bound query reaches only ancestors' pairs (paper example: same generation)."""
    text = PRAGMA + """
.decl parent(x:number, y:number)
.decl node(x:number)
.decl sg(x:number, y:number)
.decl q()
.output q
sg(x, x) :- node(x).
sg(x, y) :- parent(x, a), sg(a, b), parent(y, b).
q() :- sg(4, 6).
"""
    parsed = parse_program(text)
    names = set(parsed.program.relations)
    assert "sg@bb" in names and "@magic_sg@bb" in names
    assert any("magic-transform" in n for n in parsed.notes)


def test_negated_relations_stay_complete() -> None:
    """A relation read under negation, and its cone, are not transformed (stratification)."""
    text = PRAGMA + """
.decl e(x:number, y:number)
.decl r(x:number, y:number)
.decl s(x:number, y:number)
.decl q(y:number)
.output q
r(x, y) :- e(x, y).
r(x, y) :- r(x, z), e(z, y).
s(x, y) :- e(x, y), !r(y, x).
q(y) :- s(1, y).
"""
    parsed = parse_program(text)
    names = set(parsed.program.relations)
    assert "s@bf" in names
    assert not any(n.startswith("r@") for n in names)


def test_magic_pragma_names_unknown_relation() -> None:
    import pytest

    from gpu_engine.ir import ProgramError

    with pytest.raises(ProgramError, match=r"<input>:1:1: .*undeclared relation 'nope'"):
        parse_program('.pragma "magic-transform" "nope"\n.decl a(x:number)\n')
