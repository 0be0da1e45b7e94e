"""``recursive_iteration_cnt()`` and ``.decl D = debug_delta(R)`` (gpu_engine.iteration):
Soufflé's iteration numbering, the deltas per iteration, refusals, and updates."""

from __future__ import annotations

import pytest
from gpu_engine.host.reasoner import ProgramError, Reasoner
from materialised import rows, run

COUNTER = """
.decl R(x:number)
.decl R_debug = debug_delta(R)
R(0).
R(x + 1) :- R(x), recursive_iteration_cnt() < 100.
"""


def test_soufflés_numbering() -> None:
    r = run(COUNTER)
    assert rows(r, "R") == {(i,) for i in range(100)}
    assert rows(r, "R_debug") == {(i, i) for i in range(100)}


CHAIN = """
.decl e(x:number, y:number)
e(1, 2). e(2, 3). e(3, 4). e(4, 5).
.decl path(x:number, y:number)
.decl seen = debug_delta(path)
path(x, y) :- e(x, y).
path(x, z) :- path(x, y), e(y, z).
.decl third(x:number, y:number)
third(x, y) :- seen(x, y, 2).
.decl at(x:number, y:number, i:unsigned)
at(x, z, recursive_iteration_cnt()) :- at(x, y, _), e(y, z).
at(1, 1, 0).
"""


def test_deltas_of_a_transitive_closure() -> None:
    r = run(CHAIN)  # a TC module would not keep rounds: the stratum runs seminaive
    want = {(x, y, y - x - 1) for x in range(1, 5) for y in range(x + 1, 6)}
    assert rows(r, "seen") == want
    assert rows(r, "third") == {(1, 4), (2, 5)}  # read by a later stratum
    assert rows(r, "at") == {(1, 1, 0), (1, 2, 1), (1, 3, 2), (1, 4, 3), (1, 5, 4)}


def test_mutual_recursion_and_a_nullary_relation() -> None:
    text = """
    .decl a(x:number)
    .decl b(x:number)
    .decl da = debug_delta(a)
    .decl db = debug_delta(b)
    .decl go()
    .decl dgo = debug_delta(go)
    a(0).
    b(x + 1) :- a(x), x < 4.
    a(x + 1) :- b(x).
    go() :- b(3), go().
    go() :- a(2).
    """
    r = run(text)
    assert rows(r, "a") == {(0,), (2,), (4,)}
    assert rows(r, "b") == {(1,), (3,)}
    assert rows(r, "da") == {(0, 0), (2, 2), (4, 4)}
    assert rows(r, "db") == {(1, 1), (3, 3)}
    assert rows(r, "dgo") == {(0,)}  # a stratum of its own: go() :- a(2) is iteration 0


@pytest.mark.parametrize("text, where, words", [
    (".decl a(x:unsigned)\na(recursive_iteration_cnt()).\n", (2, 1), "outside a recursive"),
    (".decl a(x:number)\n.decl b(x:number)\nb(x) :- a(x), recursive_iteration_cnt() > 0.\n",
     (3, 1), "outside a recursive"),
    (".decl a(x:number)\n.decl d = debug_delta(a)\na(1).\n", (2, 7), "not recursive"),
    (".decl a(x:number)\n.decl d = debug_delta(b)\n", (2, 23), "undeclared"),
    (".decl a(x:number)\n.decl d = debug_delta(a)\na(x) :- a(x).\nd(1, 2).\n", (2, 7),
     "debug_delta relation"),
    (".decl a(x:number)\n.decl d = debug_delta(a)\na(x) :- a(x).\nd(x, 1) :- a(x).\n", (4, 1),
     "debug_delta relation"),
    (".decl a(x:number)\n.decl d = delta_debug(a)\n", (2, 11), "unknown relation kind"),
])
def test_refusals(text: str, where: tuple[int, int], words: str) -> None:
    with pytest.raises(ProgramError) as e:
        run(text)
    assert e.value.loc is not None and (e.value.loc.line, e.value.loc.column) == where, str(e.value)
    assert words in str(e.value)


def test_updates_rematerialise_and_counters_are_refused() -> None:
    r = Reasoner(CHAIN, device="cpu", counting=False)
    r.materialise()
    r.update(insert={"e": [(5, 6)]}, delete={"e": [(1, 2)]})  # default: rematerialises
    fresh = run(CHAIN.replace("e(1, 2). ", "e(5, 6). "))
    for name in ("path", "seen", "third", "at"):
        assert rows(r, name) == rows(fresh, name), name
    with pytest.raises(ValueError, match="use remat"):
        r.update(insert={"e": [(6, 7)]}, algorithm="dred")
    with pytest.raises(ProgramError, match="debug_delta"):
        Reasoner(CHAIN, device="cpu", counting=True)


def test_spark_refuses_debug_delta() -> None:
    from gpu_engine.host.lang.parser import parse_program

    pytest.importorskip("pyspark")
    from gpu_engine.host.spark.backend import SparkRunner

    prog = parse_program(CHAIN.split(".decl at")[0], "t.dl").program
    with pytest.raises(ProgramError, match="Spark backend does not support debug_delta"):
        SparkRunner(prog, None)  # type: ignore[arg-type]


LIMITS = """
.decl nat(x:number)
nat(0).
nat(x + 1) :- nat(x), x < 1000.
.limitsize nat(n=10)
.decl e(x:number, y:number)
e(1, 2). e(1, 3). e(2, 4). e(3, 5). e(4, 6). e(5, 7).
.decl r(x:number)
.decl rd = debug_delta(r)
r(1).
r(y) :- r(x), e(x, y).
.limitsize r(n=2)
.decl after(x:number)
after(x) :- r(x), x > 1.
"""


def test_limitsize_stops_the_loop() -> None:
    r = run(LIMITS)
    assert rows(r, "nat") == {(i,) for i in range(10)}
    # r holds 1 tuple < 2 after iteration 0: round 1 adds {2, 3}; round 2's {4, 5} is
    # computed but not added (the limit is checked before a round's tuples are added)
    assert rows(r, "r") == {(1,), (2,), (3,)}
    assert rows(r, "rd") == {(1, 0), (2, 1), (3, 1)}
    assert rows(r, "after") == {(2,), (3,)}
    r.update(insert={"e": [(1, 9)]})  # order-dependent: rematerialises
    assert rows(r, "r") == {(1,), (2,), (3,), (9,)}


@pytest.mark.parametrize("text, where, words", [
    (".decl a(x:number)\na(1).\n.limitsize a(n=3)\n", (3, 12), "not recursive"),
    (".decl a(x:number)\n.limitsize a(n=x)\n", (2, 12), "n=<count>"),
    (".decl a(x:number)\n.limitsize b(n=3)\n", (2, 12), "undeclared"),
])
def test_limitsize_refusals(text: str, where: tuple[int, int], words: str) -> None:
    with pytest.raises(ProgramError) as e:
        run(text)
    assert e.value.loc is not None and (e.value.loc.line, e.value.loc.column) == where, str(e.value)
    assert words in str(e.value)
