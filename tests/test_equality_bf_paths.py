"""The cheaper paths of B/F≈ and auto (gpu_engine/equality_bf.py, backward_plan.py,
equality_maintenance._choose): F^π ∩ E′ through E′'s run index, the backward planner
shared with DRed≈ (filters, the one-atom membership shortcut), and auto's DRed≈ for
deletions that cannot reach an equality; each judged against a fresh Remat≈."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from eq_generators import rows  # noqa: E402
from eq_update_fuzz import run_sequence  # noqa: E402
from test_equality_bf import fresh, same_state  # noqa: E402

from gpu_engine import Reasoner, backward_plan, equality_explicit  # noqa: E402
from gpu_engine.affected import backward  # noqa: E402
from gpu_engine.backward_plan import join_backward  # noqa: E402
from gpu_engine.rowset import RowSet  # noqa: E402

KEYS = """
.decl key(x: symbol, k: symbol)
.decl attr(x: symbol, v: symbol)
.decl knows(x: symbol, y: symbol)
.decl same(x: symbol, y: symbol) equality
.decl fan(x: symbol, v: symbol)
.decl star(x: symbol)
same(x, y) :- key(x, k), key(y, k).
fan(x, v) :- knows(x, y), attr(y, v).
star(x) :- knows(x, "b").
"""
FACTS = {"key": [("a", "K"), ("b", "K"), ("c", "K"), ("d", "L"), ("e", "L"), ("f", "M")],
         "attr": [("a", "1"), ("b", "2"), ("d", "1"), ("f", "3")],
         "knows": [("a", "b"), ("c", "a"), ("d", "e"), ("e", "f"), ("f", "c"), ("b", "d")]}


@pytest.mark.parametrize("seed", range(3))
def test_explicit_members_by_index(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Line 40 through E′'s index (forced for every fact with a merged class): random
    sequences still equal Remat≈ and the spelled-out reference, and the index ran."""
    calls = []
    orig = equality_explicit._by_index

    def spy(*args):  # type: ignore[no-untyped-def]
        calls.append(1)
        return orig(*args)

    monkeypatch.setattr(equality_explicit, "EXPAND_MIN", 0)
    monkeypatch.setattr(equality_explicit, "_by_index", spy)
    found = 0
    for s in range(6):
        rec = run_sequence(2000 + 10 * seed + s, steps=4, paths_run=("bf_eq", "remat"))
        assert rec["disagreements"] == [], rec
        found += len(calls)
    assert found


def test_explicit_members_by_index_example(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deleting a key splits {a, b, c}; knows and attr rows of the class's members are
    found through the index of E′ (a later column's index included)."""
    monkeypatch.setattr(equality_explicit, "EXPAND_MIN", 0)
    r = fresh(KEYS, FACTS, Reasoner(KEYS, device="cpu"))
    st = r.update(delete={"key": [("b", "K")], "knows": [("e", "f")]}, algorithm="bf_eq")
    assert st.algorithm == "b/f≈"
    left = {n: [x for x in v if x not in (("b", "K"), ("e", "f"))] for n, v in FACTS.items()}
    assert same_state(r, fresh(KEYS, left, r))


def test_auto_runs_dred_when_no_equality_can_be_lost(monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    """auto: a deletion touching a merged class whose rows match no body atom of a rule
    reaching ``same`` cannot split a class, so DRed≈ runs; deleting a key may, so B/F≈
    (for classes of more than SPLIT_MEMBERS members; DRed≈ below)."""
    import gpu_engine.equality_maintenance as EM

    r = fresh(KEYS, FACTS, Reasoner(KEYS, device="cpu"))
    st = r.update(delete={"knows": [("a", "b")], "attr": [("a", "1")]}, algorithm="auto")
    # DRed≈ (or Remat≈ once DRed≈ passed its minimum time budget on a loaded machine)
    assert st.algorithm == "dred≈" or "DRed≈ stopped" in st.note, st.note
    left = {n: [x for x in v if x not in (("a", "b"), ("a", "1"))] for n, v in FACTS.items()}
    assert same_state(r, fresh(KEYS, left, r))
    monkeypatch.setattr(EM, "SPLIT_MEMBERS", 2)
    monkeypatch.setattr(EM, "PARTIAL", False)
    st = r.update(delete={"key": [("c", "K")]}, algorithm="auto")
    # B/F≈ (or Remat≈ once B/F≈ passed its minimum time budget on a loaded machine)
    assert st.algorithm == "b/f≈" or "B/F≈ stopped" in st.note, st.note
    left["key"].remove(("c", "K"))
    assert same_state(r, fresh(KEYS, left, r))
    # with DRed≈'s partial split, one member leaving a large class costs what its
    # facts touch: DRed≈
    monkeypatch.setattr(EM, "PARTIAL", True)
    monkeypatch.setattr(EM, "SPLIT_MEMBERS", 1)
    gone = ("e", "L")  # {d, e} loses e
    st = r.update(delete={"key": [gone]}, algorithm="auto")
    assert st.algorithm == "dred≈" or "DRed≈ stopped" in st.note, st.note
    left["key"].remove(gone)
    assert same_state(r, fresh(KEYS, left, r))


def test_join_backward_matches_the_evaluators_backward_query() -> None:
    """The shared planner finds the same instances as the evaluator's backward query,
    with a comparison filter and with the one-atom membership shortcut."""
    text = """
    .decl e(x: number, y: number)
    .decl p(x: number, y: number)
    .decl q(x: number, y: number)
    p(x, z) :- e(x, y), e(y, z), x < z.
    q(x, y) :- e(y, x).
    """
    r = Reasoner(text, device="cpu")
    r.add_facts("e", [(i, (i * 7 + 3) % 11) for i in range(11)] + [(1, 2), (2, 1), (2, 5)])
    r.materialise()
    eng = r.engine
    ev = eng.evaluator
    for rule in eng.rules:
        h = rule.head.relation
        facts = eng.store[h].compact() if hasattr(eng.store[h], "compact") else eng.store[h]
        cols = tuple(c for c in facts.cols)
        heads = RowSet.from_columns(eng.be, cols, len(cols))
        emit = tuple(sorted({t.name for a in rule.body if hasattr(a, "relation")
                             for t in a.args}))
        b = join_backward(ev, rule, heads, eng.store.__getitem__, eng.store.__getitem__, emit)
        got = set() if b is None else set(zip(*(b.cols[v].tolist() for v in ("#fact", *emit))))
        want = set()
        for o in backward(ev, rule, heads, eng.store.__getitem__, eng.store.__getitem__, emit):
            want |= set(zip(*(o.cols[i][:o.n].tolist() for i in range(len(emit) + 1))))
        assert got == want and len(got) >= len(heads) > 0
    assert rows(r, "p")


@pytest.mark.parametrize("seed", range(4))
def test_one_step_forward_finds_what_binding_each_fact_finds(seed: int) -> None:
    """DRed≈'s one-step check evaluated forwards from the distinct values that bind the
    first atom (``backward_plan._forward``, chosen when many candidates share them) says
    the same of every candidate as binding each fact: skewed data (a few sources with
    many edges), a comparison filter, a head constant, candidates half true."""
    text = """
    .decl e(x: number, y: number)
    .decl a(y: number, v: number)
    .decl f(x: number, v: number)
    .decl g(x: number, v: number)
    .decl h(x: number, t: number, v: number)
    f(x, v) :- e(x, y), a(y, v).
    g(x, v) :- e(x, y), a(y, v), v > x.
    h(x, 1, v) :- e(x, y), e(y, z), a(z, v).
    """
    rng = np.random.default_rng(seed)
    hubs = rng.integers(0, 200, 5)
    e = [(int(x), int(y)) for x in range(200) for y in rng.integers(0, 200, 2)]
    e += [(int(h), int(y)) for h in hubs for y in rng.integers(0, 200, 60)]
    a = [(y, int(v)) for y in range(200) for v in rng.integers(0, 30, 2)]
    r = Reasoner(text, device="cpu")
    r.add_facts("e", e)
    r.add_facts("a", a)
    r.materialise()
    eng = r.engine
    src = eng.store.__getitem__
    for rule in eng.rules:
        arity = len(rule.head.args)
        xs = np.concatenate([hubs, rng.integers(0, 200, 40)])
        cand = [(int(x), *((1,) if arity == 3 else ()), int(v)) for x in xs
                for v in range(30)]
        cols = tuple(np.array(c, dtype=np.int64) for c in zip(*cand))
        facts = RowSet.from_columns(eng.be, cols, arity)
        fwd = backward_plan._forward(eng.evaluator, rule, facts, src, src)
        assert fwd is not None, rule  # the estimate takes the forward path here
        want, _ = backward_plan.one_step(eng.evaluator, rule, facts, src, src, src, src)
        got, _ = backward_plan.one_step(eng.evaluator, rule, facts, src, src, src, src,
                                        forward=True)
        assert np.array_equal(fwd[0], want) and np.array_equal(got, want), rule
        assert 0 < int(want.sum()) < len(facts)
