"""Bags kept per node across rounds and updates (gpu_engine.hd_bags, paper 003 inst_p^I).

After random updates under DRed^c (DRed^c-MOD where paper-002 modules apply) with
``decompose=all``: the facts and counters equal a rematerialisation's, every kept bag
equals its node's in-node join recomputed over the versions it is tagged with, and every
node's bag brought to the current facts (Algorithms 3 and 5: the difference of the
versions) equals the projection of its atoms' join over the current facts, with counts.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from generators import Program, render_program
from hypothesis import given, note, settings
from hypothesis import strategies as st
from test_hd import EXAMPLES, _naive_bag, _state, cyclic_programs

from gpu_engine import Reasoner, hd_bags, hd_eval
from gpu_engine.hd_bags import NodeBags
from gpu_engine.hd_eval import _bag
from gpu_engine.ir import Atom as IAtom
from gpu_engine.ir import Negation


@pytest.fixture(autouse=True)
def _always_decomposed(monkeypatch):
    monkeypatch.setattr(hd_eval, "SMALL_DELTA", 0)
    monkeypatch.setattr(hd_bags, "DIFF_SHARE", 1.0)  # tiny relations: bring forward always
    monkeypatch.setenv("GPU_ENGINE_HD_KEEP", "1")
    monkeypatch.setenv("GPU_ENGINE_DECOMPOSE", "all")


def _as_counter(bag, chi) -> Counter:
    cols = [bag.cols[v].tolist() for v in chi]
    return Counter({tuple(row): int(c) for *row, c in zip(*cols, bag.cnt.tolist())})


def _check_kept(r: Reasoner) -> int:
    """The invariant of the kept bags; returns how many bags were checked."""
    eng = r.engine
    kept: NodeBags | None = eng._state.hd_bags
    checked = 0
    plans = {p.key: p for rule in eng.rules if (p := eng.hd.plan(rule)) is not None}
    if kept is not None:  # each entry = Π_p over the versions it is tagged with
        for (key, p), entries in kept.entries.items():
            plan = plans.get(key)
            if plan is None:
                continue
            for e in entries:
                if plan.node_negs[p]:
                    continue  # (its negation versions are checked through the facts below)
                full: list = [None] * len(plan.rule.body)
                for q, i in enumerate(plan.node_atoms[p]):
                    full[i] = e.sources[q]
                fresh = _bag(eng.evaluator, plan, p, full, {})
                chi = plan.dec.chi[p]
                assert _as_counter(e.bag, chi) == _as_counter(fresh, chi), (str(plan.rule), p)
                checked += 1
    for rule in eng.rules:  # each node brought to the current facts = π_χ(⋈ λ(p)) there
        plan = eng.hd.plan(rule)
        if plan is None:
            continue
        atoms = [lit for lit in rule.body if isinstance(lit, IAtom)]
        for p, node in enumerate(plan.node_rules):
            if any(not isinstance(lit, IAtom) for lit in node.body):
                continue
            sources = [eng.store[a.relation] for a in atoms]
            if any(len(sources[i]) == 0 for i in plan.node_atoms[p]):
                continue
            negated = {lit.atom.relation: eng.store[lit.atom.relation]
                       for lit in rule.body if isinstance(lit, Negation)}
            bag = r.engine.hd.bags().bag(eng.evaluator, plan, p, sources, negated)
            want = _naive_bag(r, rule, [atoms[i] for i in plan.node_atoms[p]],
                              plan.dec.chi[p])
            assert _as_counter(bag, plan.dec.chi[p]) == want, (str(rule), p)
            checked += 1
    return checked


def _rows(facts: set[tuple[int, int]]) -> np.ndarray:
    return np.asarray(sorted(facts), dtype=np.int64).reshape(-1, 2)


@settings(max_examples=EXAMPLES, deadline=None)
@given(program=cyclic_programs(), data=st.data())
def test_kept_bags_after_updates(program: Program, data: st.DataObject, device: str) -> None:
    note(render_program(program))
    text = render_program(Program(program.relations, program.rules, facts={}))
    modules = data.draw(st.sampled_from(["auto", "off"]), label="modules")
    facts = {n: set(map(tuple, rows)) for n, rows in program.facts.items()}
    r = Reasoner(text, device=device, counting=True, modules=modules)
    for n, rows in facts.items():
        r.add_facts(n, _rows(rows))
    r.materialise()
    _check_kept(r)
    dom = st.integers(0, 7)
    for step in range(data.draw(st.integers(1, 4), label="updates")):
        delete = {n: set(data.draw(st.lists(st.sampled_from(sorted(rows)), max_size=6)))
                  if rows else set() for n, rows in facts.items()}
        insert = {n: set(data.draw(st.lists(st.tuples(dom, dom), max_size=6))) - rows
                  for n, rows in facts.items()}
        note(f"update {step}: -{delete} +{insert}")
        ins = {n: _rows(v) for n, v in insert.items() if v}
        dele = {n: _rows(v) for n, v in delete.items() if v}
        r.update(insert=ins, delete=dele, algorithm="dredc")
        facts = {n: (rows - delete[n]) | insert[n] for n, rows in facts.items()}
        _check_kept(r)
        fresh = Reasoner(text, device=device, counting=True, modules=modules)
        for n, rows in facts.items():
            fresh.add_facts(n, _rows(rows))
        fresh.materialise()
        assert _state(r, program) == _state(fresh, program)


def _pc(device: str) -> Reasoner:
    """The paper's running example (n = 8, k = 5) before materialisation."""
    n, k = 8, 5
    i = np.repeat(np.arange(n), k)
    j = np.tile(np.arange(1, k + 1), n)
    m = i * k + j
    b, c, d = 1000 + m, 2000 + m, 3000 + j
    r = Reasoner(PC, device=device, counting=True, decompose="all")
    r.add_facts("CW", np.concatenate([np.stack([i, b], 1), [[n, 2]]]))
    r.add_facts("CA", np.concatenate([np.stack([i, c], 1), [[n, 3]]]))
    r.add_facts("PC", np.concatenate([np.stack([b, d], 1), np.stack([c, d], 1)]))
    return r


PC = """
.decl CW(x:number, y:number)
.decl CA(x:number, y:number)
.decl PC(x:number, y:number)
.output PC
PC(x,y) :- CW(x,z1), CA(x,z2), PC(z1,y), PC(z2,y).
"""


def test_pc_bags_follow_updates(device: str) -> None:
    """The paper's example (n = 8, k = 5).  Here χ(p) = {x, y} (z1, z2 occur in one node
    only and are counted there), so a bag tuple (a_n, d_j) stands for its number of
    λ(p)-instantiations: the addition of Example 1 raises each node's count of (a_n, d_j)
    from 1 to 2 (pitfall 2: new bag instantiations, no new head fact), the deletion of
    Example 2 lowers node 2's back to 1; the bags are brought forward, not recomputed."""
    n, k = 8, 5
    r = _pc(device)
    r.materialise()
    eng = r.engine
    rule = next(x for x in eng.rules if eng.hd.plan(x) is not None)
    plan = eng.hd.plan(rule)
    kept = eng.hd.bags()

    def sizes() -> list[int]:
        src = [eng.store[a.relation] for a in rule.body if isinstance(a, IAtom)]
        return [int(kept.bag(eng.evaluator, plan, p, src, {}).cnt.sum()) for p in range(2)]

    assert [len(kept.bag(eng.evaluator, plan, p, [eng.store[a.relation] for a in rule.body
                                                  if isinstance(a, IAtom)], {}))
            for p in range(2)] == [n * k + k] * 2
    base = sizes()
    assert base == [n * k + k, n * k + k]  # (a_n, a_2, d_j) and (a_n, a_3, d_j) too
    before = kept.stats.computed
    r.update(insert={"CW": np.asarray([[n, 4]]), "CA": np.asarray([[n, 5]])})
    assert eng.size("PC") == 2 * n * k + n * k + k
    assert sizes() == [base[0] + k, base[1] + k]
    r.update(delete={"CA": np.asarray([[n, 3]])})
    assert sizes() == [base[0] + k, base[1]]
    assert kept.stats.computed == before  # brought forward by differences only
    _check_kept(r)


TR = """
.decl e(a0:number, a1:number)
.decl f(a0:number, a1:number)
.decl g(a0:number, a1:number)
.decl tr(a0:number, a1:number)
.output tr
tr(x, y) :- g(x, y).
tr(x, z) :- tr(x, y), tr(y, z).
tr(x, y) :- e(x, z), f(x, w), tr(z, y), tr(w, y).
"""


@pytest.mark.parametrize("decompose", ["off", "all"])
def test_dredc_mod_mixed_update_joins_rederived_facts(device: str, decompose: str) -> None:
    """DRed^c-MOD, one update deleting e(0,0) and inserting e(2,0): tr(0,0) is overdeleted
    and rederived, and the new instance e(2,0), f(2,0), tr(0,0), tr(0,0) gives tr(2,0)."""
    def rows(s: set[tuple[int, int]]) -> np.ndarray:
        return _rows(s)

    r = Reasoner(TR, device=device, counting=True, modules="auto", decompose=decompose)
    for n, v in {"e": {(0, 0), (0, 1)}, "f": {(0, 0), (2, 0), (0, 1)}, "g": {(1, 0)}}.items():
        r.add_facts(n, rows(v))
    r.materialise()
    r.update(insert={"e": rows({(2, 0)})}, delete={"e": rows({(0, 0)})}, algorithm="dredc")
    got = set(zip(*[c.to_pylist() for c in r.counters("tr").columns[:2]]))
    assert got == {(0, 0), (1, 0), (2, 0)}
