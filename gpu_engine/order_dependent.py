"""Features whose result depends on the order of evaluation: ``choice-domain`` relations
and the ``autoinc()`` counter.  Both are made deterministic here by fixing the order.

``choice-domain`` (a relation qualifier): each key (one attribute or a tuple of them) is
a functional dependency; a derived tuple is kept only if no kept tuple has the same value
on any key ("the first derived wins").  Our order: tuples already in the relation come
first; the new tuples of one evaluation step (the non-recursive rules of a stratum, or
one seminaive round) follow in lexicographic order of their stored values and are
chosen greedily: a tuple is kept when none of its keys is taken by the relation or by
a tuple kept before it.  Soufflé's order (its B-tree scans and insertions) is another
one, so where several choices are possible the chosen tuples may differ from Soufflé's,
but they always satisfy the dependencies (the property its tests check), and for a
single evaluation step over sorted inputs they coincide.

``autoinc()`` numbers the derivations 0, 1, 2, ... in the order the engine produces
them (strata in order, rules in program order, binding rows in join order).  It is
accepted only in non-recursive rules: in a recursive rule the numbers would feed back
into the fixpoint.

Neither is maintained incrementally: counters and DRed-style maintenance assume that a
fact's derivations do not depend on the order, so an update of such a program is a
rematerialisation (``remat``); another algorithm is refused.
"""

from __future__ import annotations

from gpu_engine.kernels.backend import Backend

from .ir import Call, Compare, Negation, Program, ProgramError, Rule, Term
from .rowset import RowSet
from .runs import RunSet


def _has_autoinc(t: Term) -> bool:
    return isinstance(t, Call) and (t.op == "autoinc" or any(_has_autoinc(a) for a in t.args))


def uses_autoinc(rule: Rule) -> bool:
    """Whether ``autoinc()`` occurs anywhere in the rule."""
    terms = list(rule.head.args)
    for lit in rule.body:
        if isinstance(lit, Compare):
            terms += [lit.left, lit.right]
        else:
            atom = lit.atom if isinstance(lit, Negation) else lit
            terms += list(atom.args)
    return any(_has_autoinc(t) for t in terms)


def check_program(program: Program, recursive_rules: list[Rule]) -> None:
    """Refuse ``autoinc()`` in recursive rules (the numbers would depend on rounds)."""
    for rule in recursive_rules:
        if uses_autoinc(rule):
            raise ProgramError("autoinc() in a recursive rule is not supported (its values "
                               "would depend on the evaluation order)", rule.loc)


def features(program: Program, rules: list[Rule]) -> list[str]:
    """The order-dependent features a program uses (for messages)."""
    out = []
    if any(r.choice for r in program.relations.values()):
        out.append("choice-domain")
    if program.subsumptions:
        out.append("subsumption")
    if any(uses_autoinc(r) for r in rules):
        out.append("autoinc()")
    return out


def choose(be: Backend, cur: RunSet, cand: RowSet,
           keys: tuple[tuple[int, ...], ...]) -> RowSet:
    """The candidate rows (sorted, distinct, none in ``cur``) that the choice keeps."""
    xp = be.xp
    n = len(cand)
    if n == 0 or not keys:
        return cand
    cols = cand.cols
    alive = xp.ones(n, dtype=bool)
    if len(cur):
        have = cur.compact().cols
        for key in keys:
            taken = RowSet.from_columns(be, tuple(have[i] for i in key), len(key))
            alive &= ~taken.contains(tuple(cols[i] for i in key))
    kept = xp.zeros(n, dtype=bool)
    while True:
        idx = xp.flatnonzero(alive)
        if len(idx) == 0:
            break
        first = xp.ones(len(idx), dtype=bool)
        for key in keys:  # first alive row (in row order) of each key value
            kc = tuple(cols[i][idx] for i in key)
            group = RowSet.from_columns(be, kc, len(key)).positions(kc)
            order = xp.argsort(group, kind="stable")
            g = group[order]
            head = xp.ones(len(g), dtype=bool)
            head[1:] = g[1:] != g[:-1]
            is_first = xp.zeros(len(idx), dtype=bool)
            is_first[order[head]] = True
            first &= is_first
        win = idx[first]  # conflict-free: each is the first of all its key groups
        kept[win] = True
        for key in keys:
            taken = RowSet.from_columns(be, tuple(cols[i][win] for i in key), len(key))
            alive &= ~taken.contains(tuple(cols[i] for i in key))
    return cand.select(kept)


def key_positions(attrs: tuple[str, ...], names: tuple[tuple[str, ...], ...]
                  ) -> tuple[tuple[int, ...], ...]:
    """Attribute names of each key as positions."""
    return tuple(tuple(attrs.index(a) for a in key) for key in names)

