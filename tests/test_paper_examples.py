"""Paper 000 (Hu, Motik, Horrocks: Optimised Maintenance of Datalog Materialisations),
Examples 1, 2 and 3, for every maintenance algorithm.

Each example is materialised with ``counting=True``, updated as in the paper, checked
(materialisation, explicit facts, the counters the algorithm maintains, what UpdateStats says
where the paper pins it down), then the deleted facts are inserted again, which must restore
the original state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from gpu_engine.host.reasoner import ProgramError, Reasoner
from test_update import ALGORITHMS, FULL_COUNTERS, NR_COUNTERS

Fact = tuple[object, ...]
Facts = dict[str, set[Fact]]
Counters = dict[str, dict[Fact, tuple[int, int]]]


@dataclass
class Example:
    """A program, its explicit facts E, the deletion E⁻, and the expected states
    (materialisation and counters) before and after the deletion."""

    text: str
    explicit: Facts
    delete: Facts
    before: Facts
    after: Facts
    counters_before: Counters
    counters_after: Counters
    recursive: bool


def _table(r: Reasoner, name: str) -> set[Fact]:
    return {tuple(row.values()) for row in r.relation(name).to_pylist()}


def _explicit(r: Reasoner, name: str) -> set[Fact]:
    return {tuple(row.values()) for row in r.explicit(name).to_pylist()}


def _counters(r: Reasoner, name: str) -> dict[Fact, tuple[int, int]]:
    out: dict[Fact, tuple[int, int]] = {}
    for row in r.counters(name).to_pylist():
        nr, rc = row.pop("c_nr"), row.pop("c_r")
        out[tuple(row.values())] = (nr, rc)
    return out


def _array(rows: set[Fact]) -> np.ndarray:
    return np.array(sorted(rows, key=repr), dtype=object)


# --------------------------------------------------------------------------- the examples


def example_1(n: int = 50) -> Example:
    """Rule (4) S(y1, y2) :- R(x, y1), R(x, y2); E (5) = {R(a_i, b), R(a_i, c_i)}; delete
    every R(a_i, c_i). Afterwards only R(a_i, b) and S(b, b) remain."""
    a = [f"a{i}" for i in range(1, n + 1)]
    c = [f"c{i}" for i in range(1, n + 1)]
    r_facts = {(ai, "b") for ai in a} | {(ai, ci) for ai, ci in zip(a, c, strict=True)}
    s_before = {("b", "b")} | {p for ci in c for p in (("b", ci), (ci, "b"), (ci, ci))}
    return Example(
        text="""
            .decl R(x: symbol, y: symbol)
            .decl S(y1: symbol, y2: symbol)
            S(y1, y2) :- R(x, y1), R(x, y2).
        """,
        explicit={"R": r_facts},
        delete={"R": {(ai, ci) for ai, ci in zip(a, c, strict=True)}},
        before={"R": r_facts, "S": s_before},
        after={"R": {(ai, "b") for ai in a}, "S": {("b", "b")}},
        counters_before={
            "R": dict.fromkeys(r_facts, (1, 0)),
            "S": {f: ((n, 0) if f == ("b", "b") else (1, 0)) for f in s_before},
        },
        counters_after={"R": {(ai, "b"): (1, 0) for ai in a}, "S": {("b", "b"): (n, 0)}},
        recursive=False,
    )


def example_2(n: int = 20) -> Example:
    """Rules (6) D(y, z) :- B(a, y, z) and (7) D(y, z) :- D(x, z1), B(x, y, z2), z = z1 + z2;
    E = {B(a, b1, 1), B(a, c_i, 1), B(b_i, d_j, 1)}; delete B(a, b1, 1). Afterwards D holds
    only the D(c_i, 1)."""
    b = [f"b{i}" for i in range(1, n + 1)]
    c = [f"c{i}" for i in range(1, n + 1)]
    d = [f"d{j}" for j in range(1, n + 1)]
    facts = {("a", "b1", 1)} | {("a", ci, 1) for ci in c} | {(bi, dj, 1) for bi in b for dj in d}
    d_before = {("b1", 1)} | {(ci, 1) for ci in c} | {(dj, 2) for dj in d}
    return Example(
        text="""
            .decl B(s: symbol, t: symbol, n: number)
            .decl D(s: symbol, n: number)
            D(y, z) :- B("a", y, z).
            D(y, z) :- D(x, z1), B(x, y, z2), z = z1 + z2.
        """,
        explicit={"B": facts},
        delete={"B": {("a", "b1", 1)}},
        before={"B": facts, "D": d_before},
        after={"B": facts - {("a", "b1", 1)}, "D": {(ci, 1) for ci in c}},
        counters_before={
            "B": dict.fromkeys(facts, (1, 0)),
            "D": {f: ((0, 1) if f[1] == 2 else (1, 0)) for f in d_before},
        },
        counters_after={
            "B": dict.fromkeys(facts - {("a", "b1", 1)}, (1, 0)),
            "D": {(ci, 1): (1, 0) for ci in c},
        },
        recursive=True,
    )


def example_3() -> Example:
    """Rule (8) A(y) :- A(x), B(x, y); E = {A(a), A(b), A(d), B(a, c), B(b, c), B(c, d),
    B(d, e)}; delete A(a). Counters as in Figure 1 (rows T1 and T3)."""
    b_facts = {("a", "c"), ("b", "c"), ("c", "d"), ("d", "e")}
    return Example(
        text="""
            .decl A(x: symbol)
            .decl B(x: symbol, y: symbol)
            A(y) :- A(x), B(x, y).
        """,
        explicit={"A": {("a",), ("b",), ("d",)}, "B": b_facts},
        delete={"A": {("a",)}},
        before={"A": {("a",), ("b",), ("c",), ("d",), ("e",)}, "B": b_facts},
        after={"A": {("b",), ("c",), ("d",), ("e",)}, "B": b_facts},
        counters_before={
            "A": {("a",): (1, 0), ("b",): (1, 0), ("c",): (0, 2), ("d",): (1, 1),
                  ("e",): (0, 1)},
            "B": dict.fromkeys(b_facts, (1, 0)),
        },
        counters_after={
            "A": {("b",): (1, 0), ("c",): (0, 1), ("d",): (1, 1), ("e",): (0, 1)},
            "B": dict.fromkeys(b_facts, (1, 0)),
        },
        recursive=True,
    )


EXAMPLES = {"example1": example_1, "example2": example_2, "example3": example_3}

# UpdateStats the paper pins down: (overdeleted, rederived) per example and algorithm.
# Overdeletion includes the deleted explicit facts; rederived = |D ∩ A|.
PAPER_STATS: dict[tuple[str, str], tuple[int, int]] = {
    ("example1", "dred"): (4 * 50, 0),  # the R(a_i, c_i), S(b, c_i), S(c_i, b), S(c_i, c_i)
    ("example1", "dredc"): (4 * 50, 0),
    ("example2", "dred"): (20 + 2, 0),  # B(a, b1, 1), D(b1, 1), the D(d_j, 2)
    ("example2", "dredc"): (20 + 2, 0),
    ("example3", "dred"): (4, 3),  # A(a), A(c), A(d), A(e); A(c), A(d), A(e) come back
    ("example3", "dredc"): (2, 1),  # A(a), A(c); A(c) comes back (its recursive counter)
}


def check(r: Reasoner, facts: Facts, explicit: Facts, counters: Counters, algorithm: str,
          when: str, maintained: str | None = None) -> None:
    """Relations, explicit facts and the counters that ``maintained`` (default:
    ``algorithm``) keeps; ``algorithm`` and ``when`` label failures."""
    for name, rows in facts.items():
        assert _table(r, name) == rows, f"{algorithm} {when}: relation {name}"
        assert _explicit(r, name) == explicit.get(name, set()), f"{algorithm} {when}: E of {name}"
    maintained = maintained or algorithm
    if maintained in FULL_COUNTERS | NR_COUNTERS:
        for name, want in counters.items():
            got = _counters(r, name)
            if maintained in NR_COUNTERS:
                got = {f: (nr, 0) for f, (nr, _) in got.items()}
                want = {f: (nr, 0) for f, (nr, _) in want.items()}
            bad = {f: (want.get(f), got.get(f)) for f in set(want) | set(got)
                   if want.get(f) != got.get(f)}
            assert not bad, f"{algorithm} {when}: counters of {name} (expected, got): {bad}"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("example", list(EXAMPLES))
def test_paper_example(example: str, algorithm: str, device: str) -> None:
    """Delete as in the paper, check, insert the deleted facts again, check the original."""
    ex = EXAMPLES[example]()
    r = Reasoner(ex.text, device=device, counting=True)
    for name, rows in ex.explicit.items():
        r.add_facts(name, _array(rows))
    r.materialise()
    check(r, ex.before, ex.explicit, ex.counters_before, algorithm, "after materialise", "dredc")
    delete = {name: _array(rows) for name, rows in ex.delete.items()}
    if algorithm == "counting" and ex.recursive:
        with pytest.raises((ValueError, ProgramError), match="(?i)recurs"):
            r.update(delete=delete, algorithm=algorithm)
        check(r, ex.before, ex.explicit, ex.counters_before, algorithm, "after refusal", "dredc")
        return
    stats = r.update(delete=delete, algorithm=algorithm)
    after_e = {n: rows - ex.delete.get(n, set()) for n, rows in ex.explicit.items()}
    check(r, ex.after, after_e, ex.counters_after, algorithm, "after the deletion")
    assert stats.algorithm == algorithm
    assert (stats.deleted, stats.inserted) == (sum(map(len, ex.delete.values())), 0)
    assert stats.facts == sum(map(len, ex.after.values()))
    if (example, algorithm) in PAPER_STATS:
        assert (stats.overdeleted, stats.rederived) == PAPER_STATS[example, algorithm], stats
    if algorithm in ("dredc", "counting") or (algorithm == "bfc" and not ex.recursive):
        assert stats.backward == 0, f"{algorithm} evaluated rules backwards: {stats}"
    stats = r.update(insert=delete, algorithm=algorithm)
    assert (stats.deleted, stats.inserted) == (0, sum(map(len, ex.delete.values())))
    check(r, ex.before, ex.explicit, ex.counters_before, algorithm, "after re-insertion")


@pytest.mark.parametrize(("example", "default"),
                         [("example1", "counting"), ("example2", "dredc"), ("example3", "dredc")])
def test_default_algorithm(example: str, default: str, device: str) -> None:
    """Without ``algorithm``: Counting when no rule is recursive, otherwise DRed^c."""
    ex = EXAMPLES[example]()
    r = Reasoner(ex.text, device=device, counting=True)
    for name, rows in ex.explicit.items():
        r.add_facts(name, _array(rows))
    r.materialise()
    stats = r.update(delete={name: _array(rows) for name, rows in ex.delete.items()})
    assert stats.algorithm == default
    after_e = {n: rows - ex.delete.get(n, set()) for n, rows in ex.explicit.items()}
    check(r, ex.after, after_e, ex.counters_after, default, "after the deletion")
