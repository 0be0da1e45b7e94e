"""Aggregates inside recursion whose body reads lower strata (gpu_engine.recursive_aggregates):
hand-computed results, the refusal of an aggregate whose body reads its own recursive
component, and updates under every algorithm judged by rematerialisation."""

from __future__ import annotations

import random

import pytest
from gpu_engine.host.reasoner import ProgramError, Reasoner
from materialised import rows, run

from gpu_engine.maintenance import ALGORITHMS

POINTS = [(0, 0), (1, 1), (2, 2), (-1, 1), (-1, -1), (3, -3)]
SQUARES = """
.decl point(x:number, y:number)
.decl out(r:number, x:number)
out(0, 0).
out(r + 1, z) :- r < 12, out(r, _),
    z = count : { point(x, y), x <= r + 1, x >= -r - 1, y <= r + 1, y >= -r - 1 }.
"""


def squares(points: list[tuple[int, int]], start: set[tuple[int, int]]) -> set[tuple]:
    """An independent computation of SQUARES' out."""
    out = set(start)
    todo = [r for r, _ in out]
    while todo:
        r = todo.pop()
        if r < 12:
            z = sum(1 for x, y in points if -r - 1 <= x <= r + 1 and -r - 1 <= y <= r + 1)
            if (r + 1, z) not in out:
                out.add((r + 1, z))
                todo.append(r + 1)
    return out


def test_count_per_outer_binding() -> None:
    r = Reasoner(SQUARES, device="cpu")
    r.add_facts("point", POINTS)
    r.materialise()
    assert rows(r, "out") == squares(POINTS, {(0, 0)})
    assert (1, 4) in rows(r, "out") and (3, 6) in rows(r, "out")


def test_count_zero_for_empty_group() -> None:
    r = run(SQUARES)  # no points: every count is 0 (the zero alternative, inside recursion)
    assert rows(r, "out") == {(i, 0) for i in range(13)}


OPS = """
.decl w(y:number)
w(1). w(2). w(4).
.decl s(n:number, t:number)
s(0, 0). s(1, 0).
s(n + 1, t) :- s(n, _), n < 5, t = sum y : { w(y), y <= n }.
.decl m(n:number, v:number)
m(3, 0). m(1, 0).
m(n + 1, v) :- m(n, _), n < 8, v = max y : { w(y), y < n - 1 }.
.decl lo(n:number, v:number)
lo(6, 0).
lo(n - 1, v) :- lo(n, _), n > -3, v = min y : { w(y), y >= n - 3 }.
.decl e(x:number, y:number)
e(1, 1). e(1, 3). e(2, 2).
.decl t(x:number, n:number, c:number)
t(1, 0, 0). t(2, 0, 0).
t(x, n + 1, c) :- t(x, n, _), n < 3, c = count : { e(x, y), y <= n }.
"""


def test_sum_max_min_and_two_keys() -> None:
    r = run(OPS)
    # sum over an empty group is 0 (s(0) derives s(1, 0), also a fact)
    assert rows(r, "s") == {(0, 0), (1, 0), (2, 1), (3, 3), (4, 3), (5, 7)}
    # max over an empty group gives no row: the recursion stops there (m(1) derives nothing)
    assert rows(r, "m") == {(1, 0), (3, 0), (4, 1), (5, 2), (6, 2), (7, 4), (8, 4)}
    assert rows(r, "lo") == {(6, 0), (5, 4), (4, 2), (3, 1), (2, 1), (1, 1), (0, 1), (-1, 1),
                             (-2, 1), (-3, 1)}
    # two keys: x bound in the body, n only by the recursive rule
    assert rows(r, "t") == {(1, 0, 0), (1, 1, 0), (1, 2, 1), (1, 3, 1),
                            (2, 0, 0), (2, 1, 0), (2, 2, 0), (2, 3, 1)}


@pytest.mark.parametrize("text, where", [
    # the aggregate's body reads the recursive relation itself
    (".decl a(n:number)\na(0).\na(n + 1) :- a(n), n < 5, c = count : { a(y), y < n }, c >= 0.\n",
     (3, 30)),
    (".decl a(x:number)\na(x) :- a(y), x = count : { a(_) }, x < 3.\n", (2, 19)),
])
def test_body_reading_the_component_is_refused(text: str, where: tuple[int, int]) -> None:
    with pytest.raises(ProgramError) as e:
        run(text)
    assert e.value.loc is not None and (e.value.loc.line, e.value.loc.column) == where
    assert "recursion through an aggregate" in str(e.value)


def test_counters_and_explain_work() -> None:
    r = Reasoner(SQUARES, device="cpu", counting=True)
    r.add_facts("point", POINTS)
    r.materialise()
    assert rows(r, "out") == squares(POINTS, {(0, 0)})


@pytest.mark.parametrize("algorithm", [*ALGORITHMS, None])
def test_updates_match_rematerialisation(algorithm: str | None) -> None:
    rng = random.Random(7 if algorithm is None else len(algorithm))
    text = SQUARES + OPS
    points = set(POINTS[:3])
    w = {1, 2, 4}
    r = Reasoner(text, device="cpu", counting=True)
    r.add_facts("point", sorted(points))
    r.materialise()
    for _ in range(3):
        ins_p = {(rng.randrange(-4, 5), rng.randrange(-4, 5)) for _ in range(2)} - points
        del_p = set(rng.sample(sorted(points), min(2, len(points))))
        ins_w = {rng.randrange(0, 6)} - w
        del_w = set(rng.sample(sorted(w), 1))
        insert = {k: v for k, v in {"point": sorted(ins_p),
                                    "w": sorted((x,) for x in ins_w)}.items() if v}
        delete = {k: v for k, v in {"point": sorted(del_p),
                                    "w": sorted((x,) for x in del_w)}.items() if v}
        stats = r.update(insert=insert, delete=delete, algorithm=algorithm)
        assert "rematerialised" in stats.note
        points = (points - del_p) | ins_p
        w = (w - del_w) | ins_w
        fresh = Reasoner(text.replace("w(1). w(2). w(4).", ""), device="cpu")
        fresh.add_facts("point", sorted(points))
        fresh.add_facts("w", sorted((x,) for x in w))
        fresh.materialise()
        for name in ("out", "s", "m", "lo", "t"):
            assert rows(r, name) == rows(fresh, name), (algorithm, name)
        assert rows(r, "out") == squares(sorted(points), {(0, 0)})


def test_two_aggregates_in_one_recursive_clause() -> None:
    # both zero alternatives (count and sum over an empty group) come from the lookups
    r = run("""
    .decl p(x:number)
    p(1). p(2). p(3). p(5).
    .decl q(x:number)
    q(2).
    .decl o(n:number, c:number, s:number)
    o(0, 0, 0).
    o(n + 1, c, s) :- o(n, _, _), n < 4, c = count : { p(x), x <= n },
        s = sum x : { p(x), x <= n, !q(x) }.
    """)
    assert rows(r, "o") == {(0, 0, 0), (1, 0, 0), (2, 1, 1), (3, 2, 1), (4, 3, 4)}
