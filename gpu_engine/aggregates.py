"""Evaluation and maintenance of aggregate relations (:class:`gpu_engine.ir.Aggregate`).

An aggregate's hidden relation is computed columnar: the body is evaluated as a rule (the
engine's rule evaluation, instances not deduplicated), its head rows are sorted by group
key (and value), and each group is reduced by segment operations on the sorted array
(first/last element for min/max, differences of a cumulative sum for sum/mean, segment
lengths for count).  A ``distinct`` aggregate's head rows are made unique first (Soufflé's
materialised body).  With ``keys`` given, the evaluation starts from those group keys
only (correlated aggregates: only the groups an update touched are recomputed).

Maintenance (every algorithm, :func:`update_stratum`): the instances of the body that
an update removes or adds are the exact variants Π⟦old : D\\A, A\\D⟧ and
Π⟦new : A\\D, D\\A⟧ (as for a non-recursive rule with negation over lower strata); their
group keys are the touched groups.  Those groups are re-aggregated on the old and the
new state; rows that differ are deleted / inserted, each with exactly one
(non-recursive) derivation for the counters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpu_engine.kernels import keys as K
from gpu_engine.kernels.backend import INDEX
from gpu_engine.kernels.group import sequential_sums

from .ir import Aggregate, Atom, Negation, Rule
from .rowset import RowSet
from .rule_eval import Bindings, RuleEvaluator, concat_outputs
from .stratify import normalise_rule
from .values import float_decode, float_encode, unsigned_order, unsigned_to_float, wrap

Version = Callable[[str], Any]


def _rules(agg: Aggregate) -> list[Rule]:
    cache = _NORMALISED.get(id(agg))
    if cache is None or cache[0] is not agg:
        cache = (agg, [normalise_rule(r) for r in agg.rules])
        _NORMALISED[id(agg)] = cache
    return cache[1]


_NORMALISED: dict[int, tuple[Aggregate, list[Rule]]] = {}


def evaluate(ev: RuleEvaluator, agg: Aggregate, version: Version,
             keys: RowSet | None = None) -> RowSet:
    """The rows of ``agg``'s relation over the relation versions ``version(name)``
    (only the groups in ``keys``, a row set of group keys, when given)."""
    be = ev.be
    arity = len(agg.rules[0].head.args) if agg.rules else agg.keys
    outs = []
    saved, ev.compact = ev.compact, None  # multiplicities matter: no compaction
    try:
        for rule in _rules(agg):
            atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
            sources = [version(a.relation) for a in atoms]
            negs = [[(version(lit.atom.relation), False)] for lit in rule.body
                    if isinstance(lit, Negation)]
            initial = None
            if keys is not None:
                if not len(keys):
                    continue
                if agg.keys:
                    names = [a.name for a in rule.head.args[:agg.keys]]  # type: ignore[union-attr]
                    initial = Bindings(dict(zip(names, keys.cols)), len(keys))
            outs.extend(ev.evaluate(rule, sources, negs, initial=initial))
    finally:
        ev.compact = saved
    if not outs:
        return RowSet.empty(be, agg.keys + 1)
    cols, weights = concat_outputs(be, arity, outs)
    n = sum(o.n for o in outs)
    if agg.distinct:  # a set over the head (keys, target, the body's named variables)
        rows = RowSet.from_columns(be, cols, arity, n_rows=n)
        cols, n, weights = rows.cols, len(rows), None
    return reduce_groups(ev, agg, cols, n, weights)


def reduce_groups(ev: RuleEvaluator, agg: Aggregate, cols: tuple[Any, ...], n: int,
                  weights: Any = None) -> RowSet:
    """Group the head rows (keys..., value) by key and reduce each group (sorted array
    segment operations); one output row per group."""
    be, xp = ev.be, ev.be.xp
    k = agg.keys
    key_cols = cols[:k]
    val = cols[k] if agg.op != "count" else None
    w = weights if weights is not None else xp.ones(n, dtype=INDEX)
    floaty = agg.arg_type == "float"
    bits = ev.expr.bits
    sort_cols: list[Any] = []
    extreme = floaty and agg.op in ("min", "max")
    if extreme:  # Soufflé folds std::min/std::max from ±FLT_MAX: a NaN never wins
        d = float_decode(be, val, bits)
        d = xp.where(xp.isnan(d), xp.inf if agg.op == "min" else -xp.inf, d)
    if agg.ordered and floaty:  # the atom's rows in order (its arguments follow t)
        sort_cols.extend(reversed(cols[k + 1:]))
    elif val is not None:  # a float sum adds in the order of the stored bits otherwise
        sort_cols.append(d if extreme else unsigned_order(be, val, bits)
                         if agg.arg_type == "unsigned" else val)
    gid = K.rank_rows(be, key_cols) if k else xp.zeros(n, dtype=INDEX)
    sort_cols.append(gid)
    order = xp.lexsort(xp.stack(sort_cols)) if len(sort_cols) > 1 else xp.argsort(gid)
    g = gid[order]
    w = w[order]
    starts = xp.flatnonzero(xp.concatenate([xp.ones(1, dtype=bool), g[1:] != g[:-1]]))
    ends = xp.concatenate([starts[1:], xp.asarray([n], dtype=INDEX)])
    out_keys = tuple(c[order][starts] for c in key_cols)
    cw = xp.cumsum(w)
    cnt = cw[ends - 1] - xp.where(starts > 0, cw[xp.maximum(starts - 1, 0)], 0)
    if agg.op == "count":
        value = wrap(be, cnt, "number", bits)
    elif extreme:  # the word's largest finite float bounds the result (init value)
        top = float(np.finfo(np.float64 if bits == 64 else np.float32).max)
        pick = d[order][starts if agg.op == "min" else ends - 1]
        value = float_encode(be, xp.minimum(pick, top) if agg.op == "min"
                             else xp.maximum(pick, -top), bits)
    elif agg.op in ("min", "max"):
        value = val[order][starts if agg.op == "min" else ends - 1]
    else:
        v = val[order]
        if floaty:  # one value at a time in the word's float, as Soufflé's RamFloat
            s, _ = sequential_sums(be, float_decode(be, v, bits), w, starts, ends,
                                   np.float64 if bits == 64 else np.float32,
                                   mean=agg.op == "mean")
            value = float_encode(be, s, bits)
        elif agg.op == "sum":
            value = wrap(be, _segment_sum(xp, v * w, starts, ends), agg.type, bits)
        else:  # mean of integers
            if bits == 64:  # the sum in double precision: a 64-bit sum may wrap
                fv = unsigned_to_float(be, v, 64) if agg.arg_type == "unsigned" else \
                    v.astype(xp.float64)
                s = _float_segment_sum(be, fv * w, starts, len(g))
            else:
                s = _segment_sum(xp, v * w, starts, ends).astype(xp.float64)
            value = float_encode(be, s / cnt, bits)
    return RowSet.from_columns(be, (*out_keys, value.astype(INDEX)), k + 1)


def _float_segment_sum(be: Any, v: Any, starts: Any, n: int) -> Any:
    """Per-segment sums of float64 values, each accumulated within its own segment (a
    global cumulative sum would lose the small groups' precision)."""
    xp = be.xp
    if not be.is_gpu:
        return xp.add.reduceat(v, starts) if len(starts) else xp.zeros(0)
    import cupyx  # type: ignore[import-not-found]

    seg = xp.zeros(n, dtype=INDEX)
    seg[starts[1:]] = 1
    seg = xp.cumsum(seg)
    out = xp.zeros(len(starts), dtype=xp.float64)
    cupyx.scatter_add(out, seg, v)
    return out


def _segment_sum(xp: Any, v: Any, starts: Any, ends: Any) -> Any:
    """Per-segment sums of integers (exact: a global cumulative sum in int64)."""
    c = xp.cumsum(v)
    zero = xp.zeros(1, dtype=c.dtype)
    c = xp.concatenate([zero, c])
    return c[ends] - c[starts]


def update_stratum(u: Any, s: Any) -> None:
    """Maintain the aggregate relation of stratum ``s`` during update ``u``
    (a :class:`gpu_engine.forward_algorithms.Update`); see the module docstring."""
    from .affected import affected

    agg: Aggregate = s.aggregate
    st = u.state
    removed, added = u.removed(), u.added()
    if not (agg.reads & (set(removed) | set(added))):
        return
    be = u.be
    name = agg.relation
    touched: list[RowSet] = []
    saved, u.ev.compact = u.ev.compact, None
    try:
        for rule in _rules(agg):
            for pos, P, N in ((st.old, removed, added), (st.new, added, removed)):
                outs = affected(u.ev, rule, pos, pos, P, N)
                if outs:
                    cols, _ = concat_outputs(be, len(rule.head.args), outs)
                    n = sum(o.n for o in outs)
                    touched.append(RowSet.from_columns(be, cols[:agg.keys], agg.keys,
                                                       n_rows=n))
    finally:
        u.ev.compact = saved
    touched = [t for t in touched if len(t)]
    if not touched:
        return
    from .rowset import union_rows

    keys = union_rows(be, agg.keys, touched)
    old = evaluate(u.ev, agg, st.old, keys)
    new = evaluate(u.ev, agg, st.new, keys)
    gone = old.minus(new)
    fresh = new.minus(old)
    xp = be.xp
    if len(gone):
        st.bump(name, gone, xp.ones(len(gone), dtype=INDEX), False, -1)
        st.overdelete(name, gone)
        u.stats.overdeleted += len(gone)
    if len(fresh):
        st.bump(name, fresh, xp.ones(len(fresh), dtype=INDEX), False, +1)
        st.add(name, fresh)
        u.stats.added += len(fresh)
