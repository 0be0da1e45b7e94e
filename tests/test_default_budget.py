"""The default update algorithm's time budget (``gpu_engine.maintenance.DEFAULT_TIME``):
past it, DRed^c's overdeletion stops and the update rematerialises, keeping the counters;
a named algorithm runs to its end.  Every result is a fresh materialisation's."""

from __future__ import annotations

from pathlib import Path

import pytest
from generators import Program, programs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_update import EXAMPLES, non_recursive, run_sequence

import gpu_engine.maintenance as M
from gpu_engine import Reasoner
from gpu_engine.give_up import MAX_SKIP, GaveUp, after_give_up, skips

TC = """
.decl e(x: number, y: number)
.decl p(x: number, y: number)
.output p
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), e(y, z).
"""
EDGES = [(i, i + 1) for i in range(30)] + [(0, 5), (3, 9)]


def reasoner(edges: list[tuple[int, int]], device: str = "cpu") -> Reasoner:
    r = Reasoner(TC, device=device, counting=True)
    r.add_facts("e", edges)
    r.materialise()
    return r


def paths(r: Reasoner) -> list[str]:
    return sorted(r.render("p").splitlines())


@pytest.fixture(autouse=True)
def budget_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ENGINE_UPDATE_BUDGET", "1")  # (conftest turns it off)


@pytest.fixture
def no_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M, "DEFAULT_MIN_SECONDS", 0.0)
    monkeypatch.setattr(M, "DEFAULT_TIME", 0.0)


def test_the_budget_can_be_turned_off(no_time: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ENGINE_UPDATE_BUDGET", "0")
    assert reasoner(EDGES).update(delete={"e": [(10, 11)]}).algorithm == "dredc"


def test_default_rematerialises_past_its_budget(no_time: None) -> None:
    r = reasoner(EDGES)
    st = r.update(delete={"e": [(10, 11)]})
    assert st.algorithm == "remat2c" and "dredc's overdeletion ran past its time budget" \
        in st.note, st.note
    left = [x for x in EDGES if x != (10, 11)]
    assert paths(r) == paths(reasoner(left))
    assert r.engine.counting == 2  # the counters DRed^c leaves: ready for the next one
    st = r.update(delete={"e": [(20, 21)]}, algorithm="dredc")  # named: runs to its end
    left.remove((20, 21))
    assert st.algorithm == "dredc" and paths(r) == paths(reasoner(left))
    st = r.update(insert={"e": [(10, 11)]})  # insertions: no overdeletion, no budget
    assert st.algorithm == "dredc" and paths(r) == paths(reasoner([*left, (10, 11)]))


def test_a_fallback_is_remembered(no_time: None) -> None:
    """After a fallback, the next deletion as large rematerialises at once (noted), a
    smaller one tries, and each give-up in a row doubles the deletions that skip the
    attempt (DEFAULT_RETRY_AFTER = 1, then 2, 4, ...: gpu_engine.give_up)."""
    r = reasoner(EDGES)
    left = list(EDGES)

    def delete(*gone: tuple[int, int]) -> str:
        st = r.update(delete={"e": list(gone)})
        for g in gone:
            left.remove(g)
        assert st.algorithm == "remat2c" and paths(r) == paths(reasoner(left))
        return st.note

    assert "past its time budget" in delete((10, 11), (11, 12))
    assert "gave up on a deletion of 2 facts lately (1 more" in delete((12, 13), (13, 14))
    assert "past its time budget" in delete((14, 15))  # smaller: tries (the second in a row)
    assert "gave up on a deletion of 1 facts lately (2 more" in delete((15, 16))
    assert "gave up on a deletion of 1 facts lately (1 more" in delete((16, 17))
    assert "past its time budget" in delete((17, 18))  # tries again: the third give-up
    assert r.engine.default_gave_up == GaveUp("dredc", 1, 4, 3)
    r.update(insert={"e": [(10, 11)]})  # insertions leave the memory alone
    left.append((10, 11))
    assert r.engine.default_gave_up == GaveUp("dredc", 1, 4, 3)
    assert "lately (4 more" in delete((18, 19))
    st = r.update(delete={"e": [(100, 101)]})  # a no-op deletion: nothing to skip
    assert st.algorithm == "dredc" and st.deleted == 0, st.note
    r.engine.default_gave_up = GaveUp("dredc", 1, 0, 3)  # skips spent: the next tries
    r.engine.materialise_seconds = None  # (no budget: it runs to its end)
    assert r.update(delete={"e": [(19, 20)]}).algorithm == "dredc"
    left.remove((19, 20))
    assert r.engine.default_gave_up is None and paths(r) == paths(reasoner(left))


def test_skips_double_up_to_a_bound() -> None:
    rec = None
    for n in range(1, 7):
        rec = after_give_up(rec, "dredc", 5, 1)
        assert rec.skip == min(MAX_SKIP, 2 ** (n - 1)) and rec.streak == n
    assert after_give_up(rec, "dred", 5, 1) == GaveUp("dred", 5, 1, 1)  # another algorithm
    assert skips(rec, "dredc", 4) == (False, rec)  # smaller
    assert skips(rec, "dredc", 5)[1].skip == rec.skip - 1


def test_no_budget_after_a_quick_materialisation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M, "DEFAULT_TIME", 0.0)  # DEFAULT_MIN_SECONDS as shipped
    r = reasoner(EDGES)
    r.engine.materialise_seconds = M.DEFAULT_MIN_SECONDS / 2  # (not timed: set)
    assert r.update(delete={"e": [(10, 11)]}).algorithm == "dredc"


def test_host_twin_past_its_budget_leaves_rematerialising_to_the_device(
        no_time: None, monkeypatch: pytest.MonkeyPatch, device: str) -> None:
    """With the host twin on (a GPU's small updates; ``always`` on the CPU), the twin
    gives up and the engine itself rematerialises, from the state as it was."""
    monkeypatch.setenv("GPU_ENGINE_HOST_UPDATES", "always")
    r = reasoner(EDGES, device)
    st = r.update(delete={"e": [(10, 11)]})
    assert st.algorithm == "remat2c" and "(host twin)" not in st.device
    assert "the host twin's choice" in st.note, st.note
    left = [x for x in EDGES if x != (10, 11)]
    assert paths(r) == paths(reasoner(left))
    # a no-op: counted by what it removes (none), so not rematerialised; and kept on the
    # engine, whose twin is stale after the fallback (no copy of the state for nothing)
    st = r.update(delete={"e": [(100, 101)]})
    assert st.algorithm == "dredc" and "(host twin)" not in st.device, st.note
    assert st.deleted == 0 and paths(r) == paths(reasoner(left))
    st = r.update(delete={"e": [(12, 13)]})  # remembered: the device at once
    left.remove((12, 13))
    assert st.algorithm == "remat2c" and "(host twin)" not in st.device
    assert "gave up on a deletion of 1 facts lately" in st.note, st.note
    assert paths(r) == paths(reasoner(left))
    st = r.update(delete={"e": [(20, 21)]}, algorithm="dredc")
    left.remove((20, 21))
    assert st.device.endswith("(host twin)") and paths(r) == paths(reasoner(left))


def test_the_store_keeps_the_materialisation_time(tmp_path: Path) -> None:
    """A store opened on the device that wrote it keeps the budget's basis (the CLI's
    ``update`` opens a store for every update); another device starts without one."""
    from gpu_engine.host.store import open_store, read_meta, save_store

    r = reasoner(EDGES)
    save_store(r, tmp_path / "db")
    seconds = r.engine.materialise_seconds
    assert seconds and read_meta(tmp_path / "db")["materialise_seconds"] == seconds
    assert open_store(tmp_path / "db", device="cpu").engine.materialise_seconds == seconds


@settings(max_examples=max(10, EXAMPLES // 4), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs(), data=st.data())
def test_budgeted_default_sequences(program: Program, data: st.DataObject, device: str) -> None:
    """Generated programs and update sequences with the default algorithm under budgets
    drawn so that it gives up always, sometimes or never (fallbacks, skips, streaks, on the
    engine or its host twin): relations, E and counters stay exact, as without a budget."""
    if data.draw(st.booleans(), label="strip recursion"):
        program = non_recursive(program)  # the default is then Counting: never budgeted
    saved = (M.DEFAULT_TIME, M.DEFAULT_MIN_SECONDS)
    M.DEFAULT_TIME = data.draw(st.sampled_from([0.0, 1e-4, 0.05, 1e6]), label="budget")
    M.DEFAULT_MIN_SECONDS = 0.0
    try:
        run_sequence(program, data, (None,), device, budgeted=True)
    finally:
        M.DEFAULT_TIME, M.DEFAULT_MIN_SECONDS = saved
