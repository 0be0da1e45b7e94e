"""``explain``: every proof is replayed (each step an instance of its rule over facts that
hold, explicit facts at the leaves, heights consistent), on generated programs before and
after random updates, on LUBM(1) LUBM_L, and through the CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from generators import Program, describe, engine_facts, programs, render_program
from hypothesis import given, note, reject, settings
from reference import LimitExceeded, evaluate
from souffle_cases import run_cli

from gpu_engine.explain import Explainer, ProofNode
from gpu_engine.expr import const_value
from gpu_engine.ir import Atom, Call, Compare, Const, Negation, Var

SAMPLE = 12  # facts explained per generated program


_CACHE: dict[tuple[int, bool], tuple[object, set[tuple[int, ...]]]] = {}


def _rows(engine, name: str, explicit: bool = False) -> set[tuple[int, ...]]:
    """The relation's (or its explicit facts') rows, cached per immutable run set (the
    cache holds the run set, so its id is not reused while cached)."""
    obj = engine.explicit[name] if explicit else engine.store[name]
    hit = _CACHE.get((id(obj), explicit))
    if hit is None or hit[0] is not obj:
        if len(_CACHE) > 256:
            _CACHE.clear()
        hit = _CACHE[(id(obj), explicit)] = (obj, _rows_now(engine, name, explicit))
    return hit[1]


def _rows_now(engine, name: str, explicit: bool = False) -> set[tuple[int, ...]]:
    cols = engine.explicit_columns(name) if explicit else engine.columns(name)
    arity = engine.program.relations[name].arity
    if arity == 0:
        n = len(engine.explicit[name]) if explicit else engine.size(name)
        return {()} if n else set()
    return set(zip(*(c.tolist() for c in cols), strict=True))


def replay(engine, node: ProofNode) -> None:
    """Assert that ``node`` is a valid proof over ``engine``'s materialisation."""
    assert node.row in _rows(engine, node.relation), f"{node} does not hold"
    if node.rule is None:
        if not node.repeated:
            assert node.row in _rows(engine, node.relation, explicit=True)
            assert node.height == 0
        return
    rule = node.rule
    atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
    assert len(atoms) == len(node.children)
    assert node.height == 1 + max((c.height for c in node.children), default=0)
    ev = engine.evaluator.expr
    be = engine.be
    binding: dict[str, int] = {}
    deferred: list[tuple[Call, int]] = []

    def unify(args, row) -> None:
        for t, v in zip(args, row, strict=True):
            if isinstance(t, Var):
                assert binding.setdefault(t.name, v) == v, f"{t.name} clash in {rule}"
            elif isinstance(t, Const):
                assert const_value(t, engine.symbols) == v, f"constant mismatch in {rule}"
            else:
                deferred.append((t, v))

    unify(rule.head.args, node.row)
    for atom, child in zip(atoms, node.children, strict=True):
        assert child.relation == atom.relation
        unify(atom.args, child.row)

    def cols() -> dict[str, object]:
        return {k: be.asarray(np.asarray([v], dtype=np.int64)) for k, v in binding.items()}

    compares = [lit for lit in rule.body if isinstance(lit, Compare)]
    for _ in range(len(compares) + 1):  # bindings x = expr, in dependency order
        for c in compares:
            for var, other in ((c.left, c.right), (c.right, c.left)):
                if (c.op == "=" and isinstance(var, Var) and var.name not in binding
                        and all(n in binding for n in _vars(other))):
                    val, ok = ev.term(other, cols(), 1)
                    assert ok is None or bool(be.to_host(ok)[0])
                    binding[var.name] = int(be.to_host(val)[0])
    for t, v in deferred:
        val, ok = ev.term(t, cols(), 1)
        assert (ok is None or bool(be.to_host(ok)[0])) and int(be.to_host(val)[0]) == v
    for c in compares:
        assert bool(be.to_host(ev.compare(c, cols(), 1))[0]), f"{c} fails in {rule}"
    for lit in rule.body:
        if isinstance(lit, Negation):
            facts = _rows(engine, lit.atom.relation)
            pattern = []
            for t in lit.atom.args:
                if isinstance(t, Var) and t.name not in binding:
                    pattern.append(None)
                else:
                    val, _ = ev.term(t, cols(), 1)
                    pattern.append(int(be.to_host(val)[0]))
            assert not any(all(p is None or p == f for p, f in zip(pattern, fact, strict=True))
                           for fact in facts), f"negation {lit} fails in {rule}"
    for child in node.children:
        replay(engine, child)


def _vars(t) -> set[str]:
    if isinstance(t, Var):
        return {t.name}
    if isinstance(t, Call):
        return set().union(*(_vars(a) for a in t.args)) if t.args else set()
    return set()


def _check_sample(reasoner, rng: random.Random) -> int:
    engine = reasoner.engine
    explainer = Explainer(engine)
    checked = 0
    for name in engine.program.relations:
        facts = sorted(_rows(engine, name))
        for row in rng.sample(facts, min(SAMPLE, len(facts))):
            node = explainer.explain(name, row)
            assert node is not None, f"{name}{row} holds but has no proof"
            replay(engine, node)
            checked += 1
    return checked


@settings(max_examples=40)
@given(program=programs())
def test_explain_generated_programs(program: Program) -> None:
    from gpu_engine import Reasoner

    try:
        evaluate(program, max_tuples=3000)
    except LimitExceeded:
        reject()
    note(describe(program))
    r = Reasoner(render_program(program), device="cpu", counting=True)
    facts = engine_facts(program)
    for name, data in facts.items():
        r.add_facts(name, data)
    r.materialise()
    rng = random.Random(0)
    _check_sample(r, rng)
    # after an update: delete half of one relation's explicit facts, then re-add a few
    for name, data in facts.items():
        n = data.num_rows if hasattr(data, "num_rows") else len(data)
        if n:
            half = data.slice(0, n // 2) if hasattr(data, "slice") else data[: n // 2]
            r.update(delete={name: half})
            _check_sample(r, rng)
            r.update(insert={name: half})
            _check_sample(r, rng)
            break


def test_explain_absent_and_explicit() -> None:
    from gpu_engine import Reasoner

    r = Reasoner(".decl e(x:number, y:symbol)\n.decl p(x:number, y:symbol)\n"
                 'e(1, "a").\np(x, y) :- e(x, y).\np(x + 1, y) :- p(x, y), x < 3.\n')
    assert r.explain('p(9, "a")') is None
    assert r.explain('p(1, "never-seen")') is None
    assert r.explain('e(1, "a")').kind == "explicit"
    proof = r.explain('p(3, "a")')
    assert proof.height == 3 and proof.kind == "derived"
    assert [c.fact for c in proof.children] == ['p(2, "a")']


def test_explain_lubm1_sample() -> None:
    """A sample of LUBM(1) LUBM_L's derived facts (``explain`` of every fact is the
    closing-note measurement)."""
    from gpu_engine.host.demo import DATA, PROGRAM
    from gpu_engine.host.ntriples import read_ntriples

    from gpu_engine import Reasoner

    r = Reasoner(PROGRAM.read_text(encoding="utf-8"), device="cpu")
    r.add_facts("TE", read_ntriples(DATA))
    r.materialise()
    engine = r.engine
    explainer = Explainer(engine)
    rng = random.Random(1)
    checked = 0
    for name in engine.program.relations:
        if name == "TE":
            continue
        facts = sorted(_rows(engine, name))
        for row in rng.sample(facts, min(3, len(facts))):
            node = explainer.explain(name, row)
            assert node is not None
            replay(engine, node)
            checked += 1
    assert checked > 50


def test_cli_explain(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(".decl e(x:number, y:number)\n.decl t(x:number, y:number)\n.input e\n"
                    ".output t\nt(x, y) :- e(x, y).\nt(x, z) :- t(x, y), e(y, z).\n")
    (tmp_path / "e.facts").write_text("1\t2\n2\t3\n3\t4\n")
    store = tmp_path / "st"
    rc, _, err = run_cli(["run", str(prog), "-F", str(tmp_path), "-D", str(tmp_path / "o"),
                          "--store", str(store), "--quiet", "--device", "cpu"])
    assert rc == 0, err
    rc, out, err = run_cli(["explain", str(store), "t(1, 4)", "--device", "cpu"])
    assert rc == 0, err
    assert out.splitlines()[0].startswith("t(1, 4)    [height 3;")
    rc, out, _ = run_cli(["explain", str(store), "t(1, 4)", "--json", "--device", "cpu"])
    tree = json.loads(out)
    assert tree["height"] == 3 and tree["children"][1] == {"fact": "e(3, 4)",
                                                           "kind": "explicit", "height": 0}
    rc, out, _ = run_cli(["explain", str(store), "t(4, 1)", "--device", "cpu"])
    assert rc == 1 and "does not hold" in out
    rc, _, err = run_cli(["explain", str(store), "t(1, x)", "--device", "cpu"])
    assert rc == 1 and "<fact>:1:3: t.y: 'x' is not a number" in err


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
