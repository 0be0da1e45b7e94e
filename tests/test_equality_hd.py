"""Equality by rewriting together with hypertree decompositions (paper 001 Mat≈ / DRed≈
with paper 003's decomposed rule evaluation): generated programs whose rules have cyclic
bodies (triangles, four-cycles, in the equality stratum, recursive, with constants) give
the same rewritten rows, classes and expansion under ``decompose`` all, auto and off, and
the expansion equals the reference evaluation of the program with equality spelled out;
DRed≈ update sequences agree across the modes and with the reference after every step."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import reference  # noqa: E402
from eq_generators import axioms  # noqa: E402
from eq_generators import rows as _rows  # noqa: E402
from generators import SYMBOL, Atom, Const, Program, Relation, Rule, Var, render_rule  # noqa: E402

from gpu_engine import Reasoner, hd_eval  # noqa: E402

VALUES = ("a", "b", "c", "d", "e", "f")
KINDS: dict[str, tuple[str, ...]] = {
    "same": ("D", "D"), "e": ("D", "D"), "f": ("D", "D"), "key": ("D", "O"),
    "c": ("D",), "tri": ("D", "D", "D"), "sq": ("D", "D"), "r": ("D", "D"),
    "loop": ("D",),
}
MODES = ("off", "all", "auto")


@pytest.fixture(autouse=True)
def _always_decomposed():
    """Small deltas too go through the decomposition (not the ordinary evaluator), and
    the decomposed evaluations are counted."""
    saved, original = hd_eval.SMALL_DELTA, hd_eval.evaluate_decomposed
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    hd_eval.SMALL_DELTA = 0
    hd_eval.evaluate_decomposed = counted
    yield calls
    hd_eval.SMALL_DELTA, hd_eval.evaluate_decomposed = saved, original


def _v(name: str) -> Var:
    return Var(name)


def cyclic_case(seed: int) -> tuple[str, Program, dict[str, set[tuple]]]:
    """(program text with ``same`` an equality, the spelled-out program, its facts)."""
    rng = random.Random(seed)
    x, y, z, w, k = (_v(n) for n in "xyzwk")
    facts: dict[str, set[tuple]] = {n: set() for n in ("e", "f", "key", "c", "same")}
    for name in ("e", "f"):
        for _ in range(rng.randint(4, 10)):
            facts[name].add((rng.choice(VALUES), rng.choice(VALUES)))
    for _ in range(rng.randint(1, 4)):
        facts["key"].add((rng.choice(VALUES), rng.choice(("k0", "k1", "k2"))))
    for _ in range(rng.randint(1, 3)):
        facts["c"].add((rng.choice(VALUES),))
    if rng.random() < 0.5:
        facts["same"].add((rng.choice(VALUES), rng.choice(VALUES)))
    a = Const(rng.choice(VALUES))
    rules = [
        Rule(Atom("same", (x, y)), (Atom("key", (x, k)), Atom("key", (y, k)))),
        Rule(Atom("tri", (x, y, z)), (Atom("e", (x, y)), Atom("e", (y, z)), Atom("e", (z, x)))),
        Rule(Atom("sq", (x, z)), (Atom("e", (x, y)), Atom("f", (y, z)), Atom("e", (z, w)),
                                  Atom("f", (w, x)))),
        Rule(Atom("r", (x, y)), (Atom("e", (x, y)),)),
        Rule(Atom("r", (x, z)), (Atom("r", (x, y)), Atom("f", (y, z)), Atom("e", (z, x)))),
        Rule(Atom("loop", (x,)), (Atom("e", (x, a)), Atom("f", (a, y)), Atom("e", (y, x)))),
    ]
    if rng.random() < 0.7:  # an equality derived by a cyclic body (the equality stratum)
        rules.append(Rule(Atom("same", (x, z)), (Atom("f", (x, y)), Atom("f", (y, z)),
                                                 Atom("f", (z, x)), Atom("c", (y,)))))
    if rng.random() < 0.5:  # a cyclic rule reading the merged relation recursively
        rules.append(Rule(Atom("e", (x, z)), (Atom("r", (x, y)), Atom("r", (y, z)),
                                              Atom("f", (z, x)))))
    relations = tuple(Relation(n, tuple(SYMBOL for _ in cols)) for n, cols in KINDS.items())
    lines = [".type D <: symbol", ".type O <: symbol"]
    for n, cols in KINDS.items():
        attrs = ", ".join(f"a{i}: {k}" for i, k in enumerate(cols))
        lines.append(f".decl {n}({attrs}){' equality' if n == 'same' else ''}")
    for n, rows in facts.items():
        for row in sorted(rows):
            lines.append(f"{n}({', '.join(repr(v).replace(chr(39), chr(34)) for v in row)}).")
    lines.extend(render_rule(r) for r in rules)
    spelled = Program(relations, tuple(rules) + tuple(axioms(KINDS)),
                      inline_facts={n: sorted(r) for n, r in facts.items() if r})
    return "\n".join(lines) + "\n", spelled, facts


def _snapshot(r: Reasoner) -> tuple:
    return (tuple(frozenset(_rows(r, n, False)) for n in KINDS),
            frozenset(tuple(x.values()) for x in r.equivalence_classes().to_pylist()))


@pytest.mark.parametrize("seed", range(10))
def test_cyclic_bodies_all_modes_equal_reference(seed: int, _always_decomposed) -> None:
    text, spelled, _ = cyclic_case(seed)
    want = reference.evaluate(spelled)
    snaps = {}
    for mode in MODES:
        r = Reasoner(text, device="cpu", decompose=mode)
        r.materialise()
        for name in KINDS:
            assert _rows(r, name) == want[name], (seed, mode, name)
        snaps[mode] = _snapshot(r)
        if mode == "all":  # the cyclic rules in their written form are decomposed
            plans = [r.engine.hd.plan(rule) for rule in r.engine.rules]
            assert any(p is not None and p.dec.width > 1 for p in plans)
            assert _always_decomposed, "no rule was evaluated through its decomposition"
        elif mode == "off":
            _always_decomposed.clear()
    assert snaps["all"] == snaps["off"] == snaps["auto"]


@pytest.mark.parametrize("seed", range(6))
def test_cyclic_bodies_dred_eq_sequences_all_modes(seed: int, _always_decomposed) -> None:
    """DRed≈ (and auto) after deletions and insertions of edges, keys and equalities:
    every mode's rewritten rows and classes agree, and the expansion equals the
    reference evaluation of the spelled-out program on the current facts."""
    text, spelled, facts = cyclic_case(seed)
    rng = random.Random(1000 + seed)
    rs = {m: Reasoner(text, device="cpu", decompose=m) for m in MODES}
    for r in rs.values():
        r.materialise()
    current = {n: set(v) for n, v in facts.items()}
    for step in range(4):
        delete: dict[str, list[tuple]] = {}
        insert: dict[str, list[tuple]] = {}
        for name in ("e", "f", "key", "same"):
            have = sorted(current[name])
            if have and rng.random() < 0.6:
                delete[name] = rng.sample(have, min(len(have), rng.randint(1, 2)))
            if rng.random() < 0.5:
                row = ((rng.choice(VALUES), rng.choice(("k0", "k1"))) if name == "key"
                       else (rng.choice(VALUES), rng.choice(VALUES)))
                if row not in current[name] and row not in delete.get(name, []):
                    insert[name] = [row]
        for name, rows in delete.items():
            current[name] -= set(rows)
        for name, rows in insert.items():
            current[name] |= set(rows)
        for mode, r in rs.items():
            before = len(_always_decomposed)
            r.update(delete=delete, insert=insert, algorithm="dred_eq" if step % 2 else "auto")
            if mode == "off":
                assert len(_always_decomposed) == before
        program = Program(spelled.relations, spelled.rules,
                          inline_facts={n: sorted(v) for n, v in current.items() if v})
        want = reference.evaluate(program)
        snaps = {}
        for mode, r in rs.items():
            for name in KINDS:
                assert _rows(r, name) == want[name], (seed, step, mode, name)
            snaps[mode] = _snapshot(r)
        assert snaps["all"] == snaps["off"] == snaps["auto"], (seed, step)
