"""Compiled rule plans (``gpu_engine/rule_plan.py``): what a node and a step hold, that
evaluations reuse them, that rules equal by value share them, and that a symbol constant
is read from the dictionary per call (a rolled-back update may give its id to another
symbol)."""

from __future__ import annotations

import numpy as np
from gpu_engine.kernels.backend import get_backend

from gpu_engine.ir import Atom, Compare, Const, Negation, Rule, Var
from gpu_engine.rowset import RowSet
from gpu_engine.rule_eval import Bindings, RuleEvaluator
from gpu_engine.rule_plan import RulePlan
from gpu_engine.runs import RunSet
from host.dictionary import SymbolTable

X, Y, Z, W = Var("x"), Var("y"), Var("z"), Var("w")


def _rel(be, rows: list[tuple[int, ...]], arity: int) -> RunSet:
    cols = tuple(np.array([r[i] for r in rows], dtype=np.int64) for i in range(arity))
    return RunSet.of(RowSet.from_columns(be, cols, arity))


def _rows(outs) -> list[tuple[int, ...]]:
    return sorted(tuple(int(c[i]) for c in o.cols) for o in outs for i in range(o.n))


def test_nodes_and_steps() -> None:
    # h(x, w) :- a(x, y), b(y, z), w = z + 1, x < z, !c(z).
    w_def = Compare("=", W, Var("z"), "number")
    lt = Compare("<", X, Z, "number")
    neg = Negation(Atom("c", (Z,)))
    rule = Rule(Atom("h", (X, W)), (Atom("a", (X, Y)), Atom("b", (Y, Z)), w_def, lt, neg))
    plan = RulePlan(rule)
    root = plan.root(frozenset())
    assert root.atoms == (0, 1) and not root.filters and root.connected == (True, True)
    s = root.step(0)
    assert s.probe.key_pos == () and s.keep_new == (("x", 0), ("y", 1))
    mid = s.then
    assert mid.bound == {"x", "y"} and mid.atoms == (1,) and not mid.filters
    s2 = mid.step(1)
    assert s2.key_vars == ("y",) and s2.keep_old == ("x",) and s2.keep_new == (("z", 1),)
    end = s2.then
    assert [f.kind for f in end.filters] == ["bind", "test", "neg"]
    assert end.filters[2].probe.key_pos == (0,) and not end.pending
    assert root.step(0) is s and s.then is mid  # compiled once


def test_evaluations_reuse_the_plan_and_equal_rules_share_it() -> None:
    be = get_backend("cpu")
    ev = RuleEvaluator(be, SymbolTable())
    a = _rel(be, [(1, 2), (2, 3), (3, 4)], 2)
    rule = Rule(Atom("h", (X, Z)), (Atom("a", (X, Y)), Atom("a", (Y, Z))))
    want = [(1, 3), (2, 4)]
    assert _rows(ev.evaluate(rule, [a, a], {})) == want
    plan = ev.plans.plan(rule)
    root = plan.root(frozenset())
    steps = dict(root._steps)
    assert _rows(ev.evaluate(rule, [a, a], {})) == want
    assert ev.plans.plan(rule) is plan and root._steps == steps
    twin = Rule(Atom("h", (X, Z)), (Atom("a", (X, Y)), Atom("a", (Y, Z))))  # other objects
    other = ev.plans.plan(twin)
    assert other is not plan and other.root(frozenset()) is root
    assert other.atoms[0] is twin.body[0]  # atom_rank is keyed by the atoms' identity
    assert _rows(ev.evaluate(twin, [a, a], {})) == want
    # a start with bound variables (backward evaluation) has its own root
    start = Bindings({"x": np.array([2], dtype=np.int64)}, 1)
    assert _rows(ev.evaluate(rule, [a, a], {}, initial=start)) == [(2, 4)]
    assert plan.root(frozenset({"x"})) is not root


def test_symbol_constants_are_read_per_call() -> None:
    be = get_backend("cpu")
    symbols = SymbolTable()
    ev = RuleEvaluator(be, symbols)
    base = len(symbols)
    rule = Rule(Atom("h", (X,)), (Atom("t", (X, Const("p", "symbol"))),))
    # "p" is interned by the first evaluation; the table is then rolled back and another
    # symbol takes its id
    t = _rel(be, [(1, base), (2, base + 1)], 2)
    assert _rows(ev.evaluate(rule, [t], {})) == [(1,)]
    symbols.truncate(base)
    assert symbols.encode("q") == base and symbols.encode("p") == base + 1
    assert _rows(ev.evaluate(rule, [t], {})) == [(2,)]
