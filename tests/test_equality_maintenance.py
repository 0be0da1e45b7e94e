"""Incremental maintenance with equality by rewriting (DRed≈, gpu_engine.equality_maintenance):
the paper's example (brief §1.2 items 1/2), class splits by deleted equalities, rule
constants across splits, insertions continuing Mat≈, the automatic choice and its
fallbacks, the store and the CLI; and a few random update sequences judged against
Remat≈ and the spelled-out reference (``make fuzz-eq-update`` runs 1,000)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from eq_generators import PAPER_31, RULE_CONSTANT_SPLIT, paper_31, rows  # noqa: E402
from eq_update_fuzz import run_sequence  # noqa: E402

from gpu_engine import Reasoner  # noqa: E402
from gpu_engine.give_up import GaveUp  # noqa: E402
from gpu_engine.stats import UpdateStats  # noqa: E402


@pytest.mark.parametrize("algorithm", ["dred_eq", "auto", None])
def test_paper_31_deletion_splits_classes(algorithm: str | None) -> None:
    """Brief §1.2 items 1/2: deleting R(a, d) splits both classes; the rewritten result
    (6 facts) contains the old one (3 facts): I' ⊇ I."""
    r = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    before = {n: rows(r, n, False) for n in ("R", "eq")}
    st = r.update(delete={"R": [("a", "d")]}, algorithm=algorithm)
    if algorithm == "dred_eq":
        assert st.algorithm == "dred≈" and "exploded 2 classes" in st.note
    else:  # auto: the deletion touches small merged classes, so DRed≈ (SPLIT_MEMBERS)
        assert st.algorithm == "dred≈" or "time budget" in st.note
    assert st.deleted == 1
    if st.algorithm != "remat≈":
        assert st.overdeleted == 3
    assert rows(r, "R") == rows(r, "R", False) == {("a", "b"), ("c", "d")}
    assert rows(r, "eq") == {(x, x) for x in "abcd"}
    assert sum(r.relation_sizes().values()) == 6
    for n, old in before.items():
        assert old <= rows(r, n, False)
    assert r.equivalence_classes().num_rows == 0
    st = r.update(insert={"R": [("a", "d")]}, algorithm=algorithm)  # merged again
    assert st.algorithm == "mat≈"  # insertions only: Mat≈ continues
    assert rows(r, "R", False) == {("a", "b")} and sum(r.relation_sizes().values()) == 12


def test_deleted_explicit_equality_splits_and_rule_constants_follow() -> None:
    """An explicit equality merges a class that a rule constant reads; deleting it
    splits the class, and the rule's constant is normalised back (brief pitfall 7)."""
    text = RULE_CONSTANT_SPLIT
    r = Reasoner(text, device="cpu")
    r.materialise()
    assert rows(r, "q") == {("a",), ("b",), ("z",)}
    st = r.update(delete={"same": [("a", "b")]}, algorithm="dred_eq")
    assert st.algorithm == "dred≈" and "exploded 1 classes" in st.note
    fresh = Reasoner(text.replace('same("a", "b").', ""), device="cpu", symbols=r.symbols)
    fresh.materialise()
    for n in ("same", "p", "q"):
        assert rows(r, n) == rows(fresh, n) and rows(r, n, False) == rows(fresh, n, False)
    assert rows(r, "q") == {("b",)}
    r.update(insert={"same": [("b", "a")]}, algorithm="dred_eq")
    assert rows(r, "q") == {("a",), ("b",), ("z",)}


def test_mixed_update_deletes_first() -> None:
    """Deleting and inserting at once (brief pitfall 8): deletions first, then E⁺."""
    r = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    st = r.update(delete={"R": [("a", "d")]}, insert={"R": [("c", "b")]},
                  algorithm="dred_eq")
    assert st.algorithm == "dred≈"
    assert rows(r, "R", False) == {("a", "b")}  # c≈a, d≈b merged again through R(c, b)
    assert sum(r.relation_sizes().values()) == 12


def test_deleting_explicit_fact_that_is_also_derived() -> None:
    r = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    r.update(insert={"R": [("c", "b")]})  # derived already (a≈c, b≈d): now also explicit
    st = r.update(delete={"R": [("c", "b")]}, algorithm="dred_eq")
    assert st.algorithm == "dred≈"
    assert sum(r.relation_sizes().values()) == 12 and rows(r, "R", False) == {("a", "b")}


def test_refusals_and_fallbacks() -> None:
    r = paper_31([("a", "b")])
    with pytest.raises(ValueError, match="use remat"):
        r.update(insert={"R": [("c", "b")]}, algorithm="dredc")
    with pytest.raises(ValueError, match="bf_eq"):
        r.update(insert={"R": [("c", "b")]}, algorithm="counting")
    assert rows(r, "R") == {("a", "b")}  # a refused update changes nothing
    # auto: deleting much of a large E rematerialises at once
    import gpu_engine.equality_maintenance as EM

    old = EM.LARGE_E
    EM.LARGE_E = 1
    try:
        st = r.update(delete={"R": [("a", "b")]})
    finally:
        EM.LARGE_E = old
    assert st.algorithm == "remat≈" and "auto" in st.note and rows(r, "R") == set()
    # programs with negation (of a relation without a domain column): Remat≈
    neg = Reasoner("""
        .decl same(x: symbol, y: symbol) equality
        .decl n(x: number)
        .decl m(x: number)
        .decl p(x: symbol, k: number)
        .output p
        n(1). m(2). p("a", 1). p("b", 1).
        same(x, y) :- p(x, k), p(y, k), !m(k).
    """, device="cpu")
    neg.materialise()
    st = neg.update(delete={"p": pa.table({"x": ["b"], "k": [1]})}, algorithm="dred_eq")
    assert st.algorithm == "remat≈" and "negation" in st.note
    assert rows(neg, "p") == {("a", 1)}


def test_budget_falls_back_to_remat() -> None:
    """A class whose every fact is overdeleted: past the budget, auto rematerialises and
    still gives Remat≈'s answer."""
    import gpu_engine.equality_maintenance as EM

    facts = [(f"s{i}", "o") for i in range(30)] + [("t", f"u{i}") for i in range(30)]
    r = paper_31(facts)
    old = EM.BUDGET, EM.BUDGET_TIMED, EM.LARGE_E
    EM.BUDGET, EM.BUDGET_TIMED, EM.LARGE_E = 0.01, 0.01, 1
    try:
        st = r.update(delete={"R": [("s0", "o")]})
    finally:
        EM.BUDGET, EM.BUDGET_TIMED, EM.LARGE_E = old
    assert st.algorithm == "remat≈" and "stopped" in st.note
    fresh = paper_31(facts[1:])
    assert rows(r, "R") == rows(fresh, "R") and rows(r, "eq") == rows(fresh, "eq")


def test_auto_remembers_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """After DRed≈ gave up under ``auto``, the next RETRY_AFTER deletions as large go to
    Remat≈ at once (noted), a smaller one tries DRed≈, each give-up in a row doubles the
    deletions sent to Remat≈, and the one after them tries again; every result is
    Remat≈'s."""
    import gpu_engine.equality_maintenance as EM

    facts = [(f"s{i}", "o") for i in range(30)] + [("t", f"u{i}") for i in range(30)]
    r = paper_31(facts)
    monkeypatch.setattr(EM, "RETRY_AFTER", 2)
    monkeypatch.setattr(EM, "LARGE_E", 1)
    monkeypatch.setattr(EM, "BUDGET", 0.0)
    monkeypatch.setattr(EM, "BUDGET_TIMED", 0.0)
    left = list(facts)

    def delete(*gone: tuple[str, str]) -> str:
        st = r.update(delete={"R": list(gone)})
        for g in gone:
            left.remove(g)
        fresh = paper_31(left)
        assert rows(r, "R") == rows(fresh, "R") and rows(r, "eq") == rows(fresh, "eq")
        return st.note

    pairs = iter([((f"s{i}", "o"), ("t", f"u{i}")) for i in range(30)])
    assert "DRed≈ stopped" in delete(*next(pairs))
    assert "gave up on a deletion of 2 facts lately (2 more" in delete(*next(pairs))
    assert "DRed≈ stopped" in delete(("s29", "o"))  # smaller: tried (and stopped again)
    # the second give-up in a row: twice RETRY_AFTER deletions skip the attempt (give_up)
    assert "gave up on a deletion of 1 facts lately (4 more" in delete(*next(pairs))
    for more in (3, 2, 1):
        assert f"({more} more" in delete(*next(pairs))
    assert "DRed≈ stopped" in delete(*next(pairs))  # tried again
    monkeypatch.setattr(EM, "BUDGET_TIMED", 0.5)
    monkeypatch.setattr(EM, "BUDGET", 0.5)
    note = delete(("s28", "o"))  # smaller: tried, and ran to its end (unless a loaded
    if "time budget" not in note:  # machine passed its minimum time budget)
        assert "stopped" not in note and r.engine.eq_gave_up is None, note


def test_time_budget_binds_overdeletion_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """DRed≈'s time budget is checked per overdeletion round: with none left, auto gives
    up at the first round and rematerialises; once overdeletion ended, DRed≈ runs to its
    end however long rederivation takes (giving up there would pay a whole Remat≈ more).
    Both give Remat≈'s answer."""
    import time

    import gpu_engine.equality_maintenance as EM

    facts = [("a", "b"), ("c", "d"), ("a", "d")]
    monkeypatch.setattr(EM, "BF_TIME", 0.0)
    monkeypatch.setattr(EM, "BF_MIN_SECONDS", 0.0)
    r = paper_31(facts)
    st = r.update(delete={"R": [("a", "d")]})
    assert st.algorithm == "remat≈" and "DRed≈ stopped, it ran longer" in st.note, st.note
    # a budget that a loaded machine's overdeletion rounds stay within (they take
    # milliseconds), and a rederivation that alone outlasts it
    monkeypatch.setattr(EM, "BF_MIN_SECONDS", 0.5)
    # the process's first split pays one-time costs (scipy's import for the components)
    # inside the budget: paid here first, by a DRed≈ without a budget
    paper_31(facts).update(delete={"R": [("a", "d")]}, algorithm="dred_eq")
    slow = EM._backward

    def backward(*args: object, **kw: object) -> object:  # a slow rederivation
        time.sleep(0.6)
        return slow(*args, **kw)

    monkeypatch.setattr(EM, "_backward", backward)
    r2 = paper_31(facts)
    st = r2.update(delete={"R": [("a", "d")]})
    assert st.algorithm == "dred≈", st.note
    for x in (r, r2):
        assert rows(x, "R") == {("a", "b"), ("c", "d")}
        assert rows(x, "eq") == {(v, v) for v in "abcd"}


def test_store_and_cli_update(tmp_path: Path) -> None:
    from gpu_engine.host.store import open_store, save_store

    prog = tmp_path / "p.dl"
    prog.write_text(PAPER_31.replace(".decl R(x: symbol, y: symbol)",
                                     ".decl R(x: symbol, y: symbol)\n.input R"))
    r = Reasoner(prog, device="cpu")
    r.add_facts("R", [("a", "b"), ("c", "d"), ("a", "d")])
    r.materialise()
    save_store(r, tmp_path / "db")
    back = open_store(tmp_path / "db", device="cpu")
    st = back.update(delete={"R": [("a", "d")]}, algorithm="dred_eq")
    assert st.algorithm == "dred≈" and sum(back.relation_sizes().values()) == 6
    save_store(back, tmp_path / "db")
    (tmp_path / "ins").mkdir()
    (tmp_path / "ins" / "R.facts").write_text("a\td\n")
    out = subprocess.run(
        [sys.executable, "-m", "gpu_engine.host.cli", "update", str(tmp_path / "db"),
         "--insert", str(tmp_path / "ins"), "--algorithm", "dred_eq", "--stats-json",
         str(tmp_path / "s.json"), "-D", "-"],
        capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    if "--stats-json" in out.stderr and "unrecognized" in out.stderr:
        pytest.skip("no --stats-json on update")
    assert out.returncode == 0, out.stderr
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["algorithm"] == "mat≈"
    again = open_store(tmp_path / "db", device="cpu")
    assert sum(again.relation_sizes().values()) == 12


@pytest.mark.parametrize("seed", range(6))
def test_random_update_sequences(seed: int, device: str) -> None:
    """Judge J4 on generated programs: after every step of a random sequence, DRed≈,
    auto and Remat≈ equal a fresh Remat≈ (rewritten rows, classes) and, expanded, the
    reference evaluation of the spelled-out program (on a GPU: small updates on the
    host twin, Remat≈ on the device)."""
    rec = run_sequence(seed, steps=5, device=device)
    assert rec["disagreements"] == [], rec


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_update_sequences_on_the_device_itself(seed: int, device: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The same on a GPU with its host twin off: DRed≈ and B/F≈ run on the device (on a
    real GPU, or on the CuPy stand-in of ``make gpu-standin-test``)."""
    if device == "cpu":
        pytest.skip("the CPU has no host twin: test_random_update_sequences covers it")
    monkeypatch.setenv("GPU_ENGINE_HOST_UPDATES", "0")
    rec = run_sequence(seed, steps=5, device=device)
    assert rec["disagreements"] == [], rec


def test_failed_update_restores_state() -> None:
    """An exception inside DRed≈ (here in the insertion rounds) leaves the materialisation
    and ρ of before the update."""
    r = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    before = {n: rows(r, n, False) for n in ("R", "eq")}
    rho = r.engine.rho().copy()
    eng = r.engine

    def boom(*args: object, **kw: object) -> None:
        raise RuntimeError("injected")

    eng._merge = boom  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="injected"):
        r.update(delete={"R": [("a", "d")]}, algorithm="dred_eq")
    del eng._merge
    assert {n: rows(r, n, False) for n in ("R", "eq")} == before
    assert (r.engine.rho()[:len(rho)] == rho).all()
    st = r.update(delete={"R": [("a", "d")]}, algorithm="dred_eq")  # and it still works
    assert st.algorithm == "dred≈" and sum(r.relation_sizes().values()) == 6


def test_streaming_sink_with_equality(tmp_path: Path) -> None:
    """The streaming sink (host/spark/exchange.py, without Spark) applies micro-batches
    of an equality store through the same path."""
    from gpu_engine.host.spark.exchange import StreamingUpdateSink
    from gpu_engine.host.store import open_store, save_store

    r = paper_31([("a", "b"), ("c", "d")])
    save_store(r, tmp_path / "db")
    sink = StreamingUpdateSink(tmp_path / "db", "R", op_column="op", device="cpu",
                              coalesce=False)  # one update per micro-batch
    st = sink.apply(pa.table({"x": ["a"], "y": ["d"], "op": ["+"]}), 1)
    assert st is not None and st.algorithm == "mat≈"
    st = sink.apply(pa.table({"x": ["a", "c"], "y": ["d", "b"], "op": ["-", "+"]}), 2)
    assert st is not None and (st.algorithm in ("dred≈", "b/f≈")  # auto: B/F≈ here,
                               or "time budget" in st.note)  # or Remat≈ past its budget
    back = open_store(tmp_path / "db", device="cpu")
    judge = paper_31([("a", "b"), ("c", "d"), ("c", "b")])
    for n in ("R", "eq"):
        assert rows(back, n) == rows(judge, n)


def test_rule_with_two_constants_of_one_class_splits_it() -> None:
    """`same("e", "g") :- r("x")` normalises to `same(e, e)`: still a non-reflexive
    equality rule (fuzz seed 748), so deleting r("x") splits {e, g}."""
    text = """
    .decl same(x: symbol, y: symbol) equality
    .decl r(x: symbol)
    .decl s(x: symbol)
    r("x"). s("g").
    same("e", "g") :- r("x").
    """
    r = Reasoner(text, device="cpu")
    r.materialise()
    assert ("e",) in rows(r, "s")
    st = r.update(delete={"r": [("x",)]}, algorithm="dred_eq")
    assert st.algorithm == "dred≈" and "exploded 1 classes" in st.note
    assert rows(r, "s") == {("g",)} and r.equivalence_classes().num_rows == 0


def test_host_twin_leaves_rematerialisation_to_the_device(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """With the host twin on (a GPU's small updates; ``always`` here), DRed≈ runs on the
    twin, but where Remat≈ is chosen (here: DRed≈ does not maintain aggregates) the
    twin's state is left as it was and the engine itself rematerialises."""
    monkeypatch.setenv("GPU_ENGINE_HOST_UPDATES", "always")
    text = (PAPER_31 + ".decl s(k: number)\ns(1). s(2).\n"
            ".decl n(c: number)\n.output n\nn(c) :- c = count : { s(_) }.\n")
    r = Reasoner(text, device="cpu")
    r.add_facts("R", [("a", "b"), ("c", "d"), ("a", "d")])
    r.materialise()
    st = r.update(delete={"R": [("a", "d")]}, algorithm="dred_eq")
    assert st.algorithm == "remat≈" and "(host twin)" not in st.device
    assert "on the device, the host twin's choice" in st.note
    assert rows(r, "n") == {(2,)} and rows(r, "R") == {("a", "b"), ("c", "d")}
    r2 = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    st = r2.update(delete={"R": [("a", "d")]}, algorithm="dred_eq")
    assert st.algorithm == "dred≈" and st.device.endswith("(host twin)")
    assert rows(r2, "R") == {("a", "b"), ("c", "d")}


def test_auto_on_a_device_rematerialises_without_the_twin_when_that_is_cheaper(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """auto on a GPU engine (the host twin on: ``always`` here) sends a deletion to the
    twin only when the twin's time budget (BF_TIME of the device's Remat≈) reaches
    TWIN_MIN_SECONDS, and not while the twin's fallback is remembered (``_lately``): the
    device rematerialises at once otherwise (the H200: Remat≈ 0.052 s on sameas 600k,
    auto through the twin 0.135 s).  Every result is Remat≈'s."""
    monkeypatch.setenv("GPU_ENGINE_HOST_UPDATES", "always")
    facts = [(f"s{i}", "o") for i in range(6)] + [("a", "b"), ("c", "d")]
    r = paper_31(facts)
    left = list(facts)

    def delete(gone: tuple[str, str], seconds: float) -> UpdateStats:
        r.engine.materialise_seconds = seconds
        st = r.update(delete={"R": [gone]})
        left.remove(gone)
        fresh = paper_31(left)
        assert rows(r, "R") == rows(fresh, "R") and rows(r, "eq") == rows(fresh, "eq")
        return st

    st = delete(("s0", "o"), 0.001)
    assert st.algorithm == "remat≈" and "(host twin)" not in st.device
    assert "the device rematerialises in about 0.001 s" in st.note
    st = delete(("s1", "o"), 100.0)
    assert st.device.endswith("(host twin)") and st.algorithm != "remat≈", st.note
    r.engine.twin().host.eq_gave_up = GaveUp("DRed≈", 1, 1)  # as after a fallback
    st = delete(("s2", "o"), 100.0)
    assert st.algorithm == "remat≈" and "(host twin)" not in st.device
    assert "gave up on a deletion of 1 facts lately (1 more" in st.note
    st = delete(("s3", "o"), 100.0)  # tries the twin again
    assert st.device.endswith("(host twin)"), st.note
