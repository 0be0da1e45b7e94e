"""Π⟦I^p : P⟧ of a decomposed rule with the labels at the level of nodes (paper 003
eq. 8-10: one variant per Δ node, not per Δ atom).

:func:`gpu_engine.affected.affected` enumerates a rule's instances with a positive atom
in ``P`` by one variant per changed atom (atoms before it read ``I^p ∖ P``, atoms after
it ``I^p``).  Any fixed order of the atoms gives each instance exactly once; taking the
atoms node by node (the decomposition's node order), the variants of one node q share
every other node's versions (nodes before q read ``I^p ∖ P``, nodes after it ``I^p``),
so they are evaluated together: the Δ bag of q,

    Δ_q = Σ_{j ∈ λ(q), changed} Π_q(λ(q)'s atoms before j: I^p ∖ P, j: P, after j: I^p),

is the root of one evaluation (:func:`gpu_engine.hd_eval.evaluate_decomposed` with
``root_bag``): the other nodes are evaluated once (restricted by the semi-join from Δ_q,
or read from their kept bags) and joined once, instead of once per changed atom of q.
The result is the same multiset of head rows with the same instance counts.

Used for rules without negated atoms (the variants for ``N`` stay per literal) whose
changed atoms are not all small: a node whose Δ holds at most ``hd_eval.SMALL_DELTA``
facts takes the per-atom variants (the ordinary evaluator, Δ first).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gpu_engine.kernels.backend import INDEX

from . import hd_eval
from .hd_eval import Table, _bag, evaluate_decomposed
from .rowset import RowSet

if TYPE_CHECKING:
    from .rule_eval import RuleEvaluator, RuleOutput


def affected_by_nodes(ev: RuleEvaluator, rule: Any, atoms: list[Any], pos: Any,
                      P: dict[str, Any], matches: Any) -> list[RuleOutput] | None:
    """Head rows (with repetitions as weights) of Π⟦pos : P⟧ for a decomposed ``rule``
    without negation, or None when the rule is not decomposed (the caller's per-atom
    variants apply).  ``matches(atom, delta)``: whether a Δ can match the atom."""
    plan = ev.hd_plan(rule) if ev.hd_plan is not None else None
    if plan is None:
        return None
    changed = {i for i, a in enumerate(atoms)
               if (d := P.get(a.relation)) is not None and len(d) and matches(a, d)}
    out: list[RuleOutput] = []
    if not changed:
        return out
    t0 = time.perf_counter()
    try:
        node_of = {i: q for q, node in enumerate(plan.node_atoms) for i in node}
        for q, node in enumerate(plan.node_atoms):
            delta_atoms = [i for i in node if i in changed]
            # versions of this node's variants: earlier nodes' atoms without P, later
            # nodes' with it; inside q per atom j (set below)
            base = [pos(a.relation) if node_of[i] > q else _without(pos, P, a.relation)
                    if node_of[i] < q else None for i, a in enumerate(atoms)]
            if not delta_atoms:
                continue
            size = sum(len(P[atoms[i].relation]) for i in delta_atoms)
            if size <= hd_eval.SMALL_DELTA:  # few facts: per-atom variants, Δ first
                for j in delta_atoms:
                    srcs = list(base)
                    for i in node:
                        a = atoms[i].relation
                        srcs[i] = (P[a] if i == j else _without(pos, P, a) if i < j
                                   else pos(a))
                    out.extend(ev.evaluate(rule, srcs, [], delta=srcs[j]))
                continue
            parts: list[Table] = []
            full = list(base)
            for j in delta_atoms:
                for i in node:
                    a = atoms[i].relation
                    full[i] = (P[a] if i == j else _without(pos, P, a) if i < j else pos(a))
                if any(len(full[i]) == 0 for i in node):
                    continue
                t = _bag(ev, plan, q, full, {}, delta=full[j])
                if len(t):
                    parts.append(t)
            if not parts:
                continue
            root = parts[0] if len(parts) == 1 else _merge(ev, plan.dec.chi[q], parts)
            srcs = list(base)
            for i in node:  # (read by no one: the root's bag is given)
                srcs[i] = pos(atoms[i].relation)
            if any(len(s) == 0 for s in srcs):
                continue
            out.extend(evaluate_decomposed(ev, plan, srcs, {}, None, root_bag=(q, root)))
    finally:
        if ev.rule_seconds is not None:
            key = rule.head.relation
            ev.rule_seconds[key] = ev.rule_seconds.get(key, 0.0) + time.perf_counter() - t0
    return out


def _without(pos: Any, P: dict[str, Any], name: str) -> Any:
    p = P.get(name)
    return pos(name) if p is None else pos(name).minus(p)


def _merge(ev: RuleEvaluator, chi: tuple[str, ...], parts: list[Table]) -> Table:
    """The sum of bags over χ (weighted group-count)."""
    xp = ev.be.xp
    if not chi:
        return Table({}, xp.asarray([int(sum(int(t.cnt.sum()) for t in parts))],
                                    dtype=INDEX))
    cols = tuple(xp.concatenate([t.cols[v] for t in parts]) for v in chi)
    w = xp.concatenate([t.cnt for t in parts])
    rs, cnt = RowSet.from_columns(ev.be, cols, len(chi), return_counts=True, weights=w)
    return Table(dict(zip(chi, rs.cols)), cnt)


__all__ = ["affected_by_nodes"]
