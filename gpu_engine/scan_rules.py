"""Rules whose body is one positive atom, evaluated over a delta as a filter.

Most rules of ontology programs copy or rename facts (``B(x) :- A(x)``,
``R(x, y) :- T(x, "p", y)``): their Π⟦..: P⟧ over a delta P is the rows of P that
match the atom's constants and repeated variables, projected onto the head.  The general
evaluator builds a join index of the delta (a sort) and binding tables for that; here it
is one mask and one gather per column, with the same result: one head row per rule
instance (each matching fact is exactly one instance: the atom binds every variable),
in the rows' order.  The plan (which columns are compared with which constants, which
column each head argument takes) is made once per rule and symbol table.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from gpu_engine.kernels import keys as K
from gpu_engine.kernels.backend import INDEX

from .expr import const_value
from .ir import Atom, Const, Rule, Var
from .rowset import RowSet
from .rule_eval import RuleOutput
from .runs import RunSet

_LIMIT = 1 << 16


@dataclass(frozen=True)
class ScanPlan:
    """One-atom rule: ``consts`` (column, value) and ``equal`` (column, column) select
    facts of ``relation``; head argument i is column ``head[i][0]`` of the fact, or the
    constant ``head[i][1]`` when the column is -1."""

    relation: str
    consts: tuple[tuple[int, int], ...]
    equal: tuple[tuple[int, int], ...]
    head: tuple[tuple[int, int], ...]
    # the head rows of sorted distinct facts come out sorted and distinct: the head takes
    # fact columns in increasing order and every other column is a constant or repeats
    # a column the head takes
    ordered: bool = False
    # the head row determines the fact (every column is a constant, taken by the head or
    # a repeat of one it takes): each head row has exactly one instance
    injective: bool = False


_plans: weakref.WeakKeyDictionary[Any, dict[int, tuple[Rule, ScanPlan | None]]] = \
    weakref.WeakKeyDictionary()


def scan_plan(rule: Rule, symbols: Any) -> ScanPlan | None:
    """The rule's scan plan, or None when its body is not one positive atom of variables
    and constants with a head of variables and constants (cached)."""
    try:
        table = _plans.get(symbols)
        if table is None:
            table = _plans[symbols] = {}
    except TypeError:  # a symbol table that cannot be weakly referenced: no cache
        table = {}
    hit = table.get(id(rule))
    if hit is not None and hit[0] is rule:
        return hit[1]
    plan = _make(rule, symbols)
    if len(table) >= _LIMIT:
        table.clear()
    table[id(rule)] = (rule, plan)
    return plan


def _make(rule: Rule, symbols: Any) -> ScanPlan | None:
    if len(rule.body) != 1 or not isinstance(rule.body[0], Atom):
        return None
    atom = rule.body[0]
    consts, equal, first = [], [], {}
    for q, t in enumerate(atom.args):
        if isinstance(t, Const):
            consts.append((q, const_value(t, symbols)))
        elif isinstance(t, Var):
            if t.name in first:
                equal.append((first[t.name], q))
            else:
                first[t.name] = q
        else:
            return None
    head = []
    for t in rule.head.args:
        if isinstance(t, Var) and t.name in first:
            head.append((first[t.name], 0))
        elif isinstance(t, Const):
            head.append((-1, const_value(t, symbols)))
        else:
            return None
    taken = [q for q, _ in head if q >= 0]
    fixed = {q for q, _ in consts} | {b for a, b in equal if a in taken}
    injective = all(q in fixed or q in taken for q in range(len(atom.args)))
    ordered = injective and taken == sorted(set(taken))
    return ScanPlan(atom.relation, tuple(consts), tuple(equal), tuple(head), ordered,
                    injective)


def scan(plan: ScanPlan, src: RunSet) -> list[RuleOutput] | None:
    """The head rows of the rule's instances over ``src`` (None: ``src`` has
    tombstones, which the general evaluator handles)."""
    if src.dead:
        return None
    out: list[RuleOutput] = []
    for run in src.runs:
        xp = run.be.xp
        cols = run.cols
        mask = None
        for q, v in plan.consts:
            m = cols[q] == v
            mask = m if mask is None else (mask & m)
        for a, b in plan.equal:
            m = cols[a] == cols[b]
            mask = m if mask is None else (mask & m)
        if mask is None:
            n, pick = len(run), None
        else:
            pick = xp.flatnonzero(mask)
            n = len(pick)
        if n == 0:
            continue
        head = tuple(xp.ascontiguousarray((cols[q] if pick is None else cols[q][pick])
                                          if q >= 0 else xp.full(n, v, dtype=INDEX))
                     for q, v in plan.head)
        rows = (_as_rows(run.be, head, n, _head_spec(plan, run.spec))
                if plan.ordered and len(src.runs) == 1 else None)
        out.append(RuleOutput(head, n, rows=rows))
    return out


_head_specs: dict[tuple[ScanPlan, K.KeySpec], K.KeySpec | None] = {}


def _head_spec(plan: ScanPlan, spec: K.KeySpec | None) -> K.KeySpec | None:
    """A key layout for the head rows of facts packed with ``spec``: each head column
    taken from a fact keeps that column's field (its values lie in it), a constant gets a
    one-bit field at its value; None when ``spec`` is None (cached)."""
    if spec is None or len(plan.head) < 2:
        return None
    key = (plan, spec)
    hit = _head_specs.get(key, False)
    if hit is not False:
        return hit
    mins, maxs = [], []
    for q, v in plan.head:
        lo = spec.offsets[q] if q >= 0 else v
        mins.append(lo)
        maxs.append(lo + (1 << spec.widths[q]) - 1 if q >= 0 else v)
    out = K.make_spec(mins, maxs)
    if len(_head_specs) >= _LIMIT:
        _head_specs.clear()
    _head_specs[key] = out
    return out


def _as_rows(be: Any, cols: tuple[Any, ...], n: int, spec: K.KeySpec | None = None
             ) -> RowSet | None:
    """Sorted distinct columns as a row set, without sorting (None: ranked keys);
    ``spec``: a layout known to hold them."""
    if len(cols) == 1:
        return RowSet(be, cols, cols[0], None, n)
    if not cols:
        return None
    if spec is None:
        spec = K.make_spec(*K.column_ranges(be, cols), headroom=1)
        if spec is None:
            return None
    return RowSet(be, cols, K.pack(be, cols, spec), spec, n)


__all__ = ["ScanPlan", "scan", "scan_plan"]
