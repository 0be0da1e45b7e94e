"""Kept bags in the store (gpu_engine.hd_persist, host/store.py files H/): a reopened
store's bags equal fresh ones (and the saving engine's), are used as they are by the
first update (none recomputed), and updates after reopening stay exact: facts and
counters equal a rematerialisation's, every kept bag its recomputation.  (A node's bag
is saved when the node keeps one: ``_check_kept`` reads every node's bag over I.)"""

from __future__ import annotations

import json

import numpy as np
from generators import Program, render_program
from gpu_engine.host.store import open_store, read_meta, save_store
from hypothesis import given, note, settings
from hypothesis import strategies as st
from test_hd import EXAMPLES, _state, cyclic_programs
from test_hd_bags import PC, _always_decomposed, _as_counter, _check_kept, _pc, _rows  # noqa: F401

from gpu_engine import Reasoner
from gpu_engine.hd_eval import _bag
from gpu_engine.ir import Atom as IAtom


def _bags_over_store(r: Reasoner) -> dict:
    """(rule index, node) -> the kept bag over the current relations, as a Counter."""
    eng = r.engine
    out: dict = {}
    if eng.state.hd_bags is None:
        return out
    for key, dec in eng.state.decompositions.items():
        if dec is None:
            continue
        plan = eng.hd.plan(eng.rules[int(key)])
        sources = [eng.store[a.relation] for a in plan.rule_atoms]
        for p in range(len(plan.dec.nodes)):
            for e in eng.state.hd_bags.entries.get((plan.key, p), []):
                if all(a is b for a, b in zip(e.sources, (sources[i] for i in
                                                          plan.node_atoms[p]))):
                    out[(key, p)] = _as_counter(e.bag, plan.dec.chi[p])
    return out


def test_store_keeps_bags(tmp_path, device: str) -> None:
    """The paper's example saved and reopened: its two bags come back from H/ (equal to
    the saving engine's and to fresh in-node joins over the loaded relations), the
    first update brings them forward instead of computing them, and the counters of
    PC(a_n, d_j) go 1 → 4 → 2 as without the store."""
    r = _pc(device)
    r.materialise()
    _check_kept(r)  # (reads every node's bag over I: each node keeps one)
    save_store(r, tmp_path / "db")
    meta = read_meta(tmp_path / "db")
    assert [(b["rule"], b["node"]) for b in meta["hd_bags"]] == [("0", 0), ("0", 1)]
    assert all(b["file"] in meta["files"] for b in meta["hd_bags"])  # checksummed
    saved = _bags_over_store(r)
    back = open_store(tmp_path / "db", device=device)
    eng = back.engine
    got = _bags_over_store(back)
    assert got == saved and len(got) == 2
    plan = eng.hd.plan(eng.rules[0])
    src = [eng.store[a.relation] for a in eng.rules[0].body if isinstance(a, IAtom)]
    for p in range(2):  # equal to a fresh in-node join over the loaded relations
        assert got[("0", p)] == _as_counter(_bag(eng.evaluator, plan, p, src, {}),
                                            plan.dec.chi[p])
    kept = eng.hd.bags()
    n = 8
    back.update(insert={"CW": np.asarray([[n, 4]]), "CA": np.asarray([[n, 5]])})
    back.update(delete={"CA": np.asarray([[n, 3]])})
    assert kept.stats.computed == 0  # the saved bags were brought forward
    _check_kept(back)
    fresh = _pc(device)
    fresh.add_facts("CW", np.asarray([[n, 4]]))
    fresh.add_facts("CA", np.asarray([[n, 5]]))
    fresh.materialise()
    fresh.update(delete={"CA": np.asarray([[n, 3]])})
    for name in ("CW", "CA", "PC"):
        a, b = back.counters(name), fresh.counters(name)
        assert sorted(zip(*[c.to_pylist() for c in a.columns])) == \
            sorted(zip(*[c.to_pylist() for c in b.columns]))


def test_store_without_bags_loads(tmp_path, device: str) -> None:
    """A store whose metadata lists no bags (older stores, decompose=off) reopens and
    rebuilds bags on use; a bag of a decomposition chosen again is not imported."""
    r = _pc(device)
    r.materialise()
    _check_kept(r)
    save_store(r, tmp_path / "db")
    meta = json.loads(next((tmp_path / "db").glob("v*/meta.json")).read_text())
    assert meta["hd_bags"]
    back = open_store(tmp_path / "db", device=device)
    back.engine.hd.replan()  # decompositions chosen again: the kept bags are dropped
    back.update(delete={"CA": np.asarray([[8, 3]])})
    _check_kept(back)
    off = Reasoner(PC, device=device, counting=True, decompose="off")
    save_store(off, tmp_path / "off")
    assert "hd_bags" not in read_meta(tmp_path / "off")


@settings(max_examples=max(EXAMPLES // 5, 5), deadline=None)
@given(program=cyclic_programs(), data=st.data())
def test_kept_bags_through_store(tmp_path_factory, program: Program, data: st.DataObject,
                                 device: str) -> None:
    """Generated cyclic programs: materialise, save, reopen (bags equal the saving
    engine's), then random updates: facts and counters equal a rematerialisation's and
    every kept bag its recomputation (``_check_kept``)."""
    note(render_program(program))
    text = render_program(Program(program.relations, program.rules, facts={}))
    facts = {n: set(map(tuple, rows)) for n, rows in program.facts.items()}
    r = Reasoner(text, device=device, counting=True)
    for n, rows in facts.items():
        r.add_facts(n, _rows(rows))
    r.materialise()
    _check_kept(r)  # (reads every node's bag over I: each node keeps one)
    db = tmp_path_factory.mktemp("db")
    save_store(r, db)
    back = open_store(db, device=device)
    assert _bags_over_store(back) == _bags_over_store(r)
    _check_kept(back)
    dom = st.integers(0, 7)
    for step in range(data.draw(st.integers(1, 3), label="updates")):
        delete = {n: set(data.draw(st.lists(st.sampled_from(sorted(rows)), max_size=6)))
                  if rows else set() for n, rows in facts.items()}
        insert = {n: set(data.draw(st.lists(st.tuples(dom, dom), max_size=6))) - rows
                  for n, rows in facts.items()}
        note(f"update {step}: -{delete} +{insert}")
        back.update(insert={n: _rows(v) for n, v in insert.items() if v},
                    delete={n: _rows(v) for n, v in delete.items() if v}, algorithm="dredc")
        facts = {n: (rows - delete[n]) | insert[n] for n, rows in facts.items()}
        _check_kept(back)
        fresh = Reasoner(text, device=device, counting=True)
        for n, rows in facts.items():
            fresh.add_facts(n, _rows(rows))
        fresh.materialise()
        assert _state(back, program) == _state(fresh, program)


@settings(max_examples=max(EXAMPLES // 5, 5), deadline=None)
@given(program=cyclic_programs(), data=st.data())
def test_node_variants_beside_small_ones(program: Program, data: st.DataObject,
                                         device: str) -> None:
    """Π⟦I^p : P⟧ by Δ nodes (gpu_engine.hd_affected) where a node's Δ is large and by
    changed atoms (the ordinary evaluator) where it holds at most SMALL_DELTA = 2 facts,
    in one update: facts and counters equal a rematerialisation's."""
    from gpu_engine import hd_eval

    saved = hd_eval.SMALL_DELTA
    hd_eval.SMALL_DELTA = 2
    try:
        text = render_program(Program(program.relations, program.rules, facts={}))
        facts = {n: set(map(tuple, rows)) for n, rows in program.facts.items()}
        r = Reasoner(text, device=device, counting=True)
        for n, rows in facts.items():
            r.add_facts(n, _rows(rows))
        r.materialise()
        dom = st.integers(0, 7)
        for step in range(data.draw(st.integers(1, 3), label="updates")):
            delete = {n: set(data.draw(st.lists(st.sampled_from(sorted(rows)), max_size=6)))
                      if rows else set() for n, rows in facts.items()}
            insert = {n: set(data.draw(st.lists(st.tuples(dom, dom), max_size=6))) - rows
                      for n, rows in facts.items()}
            note(f"update {step}: -{delete} +{insert}")
            r.update(insert={n: _rows(v) for n, v in insert.items() if v},
                     delete={n: _rows(v) for n, v in delete.items() if v}, algorithm="dredc")
            facts = {n: (rows - delete[n]) | insert[n] for n, rows in facts.items()}
            fresh = Reasoner(text, device=device, counting=True)
            for n, rows in facts.items():
                fresh.add_facts(n, _rows(rows))
            fresh.materialise()
            assert _state(r, program) == _state(fresh, program)
    finally:
        hd_eval.SMALL_DELTA = saved
