"""Paper 000's generalised rule operators as columnar passes.

``affected`` computes the multiset Π⟦I^p, I^n : P, N⟧ (paper 000 §3.1 eq. (3) and §4.2):
one head row per rule instance whose positive atoms lie in ``I^p`` and whose negated
atoms miss ``I^n``, and that has a positive atom in ``P`` or a negated atom in ``N``.
Every such instance is enumerated exactly once, as in seminaive evaluation: in the
variant for positive atom i, atoms before i read ``I^p \\ P``, atom i reads ``P`` and
atoms after i read ``I^p``; instances with no positive atom in ``P`` are enumerated by
one variant per negated literal k (literal k holds in ``N``, literals before k do not).
For a negated literal with existential variables, "in N" means some matching fact is in
N (and none is in ``I^n``): the literal's truth changed between the two versions.

``rederivable`` evaluates rules "backwards" (DRed's one-step rederivation, paper 000
Algorithm 1 line 4): the head is bound to each candidate fact and the body is
evaluated as a query; it reports which candidates have at least one instance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpu_engine.kernels.backend import INDEX

from . import touch
from .expr import const_value
from .ir import Atom, Call, Compare, Const, Negation, Rule, Var
from .plan import Role, delta_variants
from .rowset import RowSet
from .rule_eval import Bindings, RuleEvaluator, RuleOutput
from .runs import RunSet
from .scan_rules import scan, scan_plan
from .touch import atom_consts
from .views import View

VersionOf = Callable[[str], View]


def affected(ev: RuleEvaluator, rule: Rule, pos: VersionOf, neg: VersionOf,
             P: dict[str, RunSet], N: dict[str, RunSet] | None = None) -> list[RuleOutput]:
    """Head rows (with repetitions) of Π⟦pos, neg : P, N⟧ for one rule."""
    if len(rule.body) == 1 and isinstance(rule.body[0], Atom) and touch.SHORTCUTS:
        # one atom: Π⟦..: P⟧ is a filter of P (scan_rules)
        p = P.get(rule.body[0].relation)
        if p is None or len(p) == 0 or not may_match(ev, rule.body[0], p):
            return []
        plan = scan_plan(rule, ev.symbols)
        got = scan(plan, p) if plan is not None else None
        if got is not None:
            return got
    N = N or {}
    atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
    negs = [lit for lit in rule.body if isinstance(lit, Negation)]
    out: list[RuleOutput] = []

    def without_p(name: str) -> View:
        p = P.get(name)
        return pos(name) if p is None else pos(name).minus(p)

    if not negs and ev.hd_plan is not None:  # a decomposed rule: variants per Δ node
        from .hd_affected import affected_by_nodes

        got = affected_by_nodes(ev, rule, atoms, pos, P, lambda a, d: may_match(ev, a, d))
        if got is not None:
            return got
    version = {Role.OLD: without_p, Role.DELTA: lambda r: P[r], Role.NEW: pos}
    for i, roles in delta_variants(atoms, lambda r: r in P and len(P[r]) > 0):
        p = P[atoms[i].relation]
        if not may_match(ev, atoms[i], p):
            continue
        sources: list[Any] = [version[role](b.relation) for b, role in zip(atoms, roles)]
        spec = [[(neg(m.atom.relation), False)] for m in negs]
        out.extend(ev.evaluate(rule, sources, spec, delta=p))
    for k, lit in enumerate(negs):
        n_k = N.get(lit.atom.relation)
        if n_k is None or len(n_k) == 0:
            continue
        sources = [without_p(b.relation) for b in atoms]
        spec: list[list[tuple[Any, bool]]] = []
        for kk, m in enumerate(negs):
            conds: list[tuple[Any, bool]] = [(neg(m.atom.relation), False)]
            n_m = N.get(m.atom.relation)
            if kk < k and n_m is not None and len(n_m):
                conds.append((n_m, False))
            if kk == k:
                conds.append((n_k, True))
            spec.append(conds)
        out.extend(ev.evaluate(rule, sources, spec))
    return out


def may_match(ev: RuleEvaluator, atom: Atom, delta: RunSet) -> bool:
    """False when no row of the (small) ``delta`` has the atom's constants, so the
    variant reading it is empty: a delta costs only the rules it can reach (on the CPU;
    on the GPU each look-up would cost a synchronisation)."""
    if delta.be.is_gpu:
        return True
    consts = atom_consts(atom, ev.symbols)
    if not consts:
        return True
    for run in delta.runs:  # (the answer is kept with the immutable run: idle() and
        key = ("match", consts)  # derive() ask the same question of the same delta)
        hit = run._indexes.get(key)
        if hit is None:
            hit = run._indexes[key] = all(run.has_value(q, v) for q, v in consts)
        if hit:
            return True
    return False


def bind_head(ev: RuleEvaluator, rule: Rule,
              facts: RowSet) -> tuple[dict[str, Any], Any, list[Compare]]:
    """The rule's head bound to each of ``facts``: columns per variable (and ``#fact``,
    the fact's index), the mask of facts that match its constants and repeated variables,
    and a comparison per head functor (``#hP = f(..)``, checked once the body binds it)."""
    xp = ev.be.xp
    n = len(facts)
    cols: dict[str, Any] = {"#fact": xp.arange(n, dtype=INDEX)}
    keep = xp.ones(n, dtype=bool)
    extra: list[Compare] = []
    for p, t in enumerate(rule.head.args):
        col = facts.cols[p]
        if isinstance(t, Var):
            if t.name in cols:
                keep &= cols[t.name] == col
            else:
                cols[t.name] = col
        elif isinstance(t, Const):
            keep &= col == const_value(t, ev.symbols)
        else:  # a functor: bind its value, check it once the body binds its variables
            assert isinstance(t, Call)
            v = f"#h{p}"
            cols[v] = col
            extra.append(Compare("=", Var(v), t, t.type, rule.loc))
    return cols, keep, extra


def backward(ev: RuleEvaluator, rule: Rule, facts: RowSet, pos: VersionOf, neg: VersionOf,
             emit: tuple[str, ...] = ()) -> list[RuleOutput]:
    """Instances of ``rule`` whose head is one of ``facts``, by evaluating the rule
    "backwards": the head is bound to each fact and the body is evaluated as a query,
    positive atoms over ``pos``, negated atoms missing ``neg``.  Each output row is one
    instance: the fact's index in ``facts`` followed by the values of ``emit``."""
    xp = ev.be.xp
    n = len(facts)
    cols, keep, extra = bind_head(ev, rule, facts)
    idx = xp.flatnonzero(keep)
    if n == 0 or len(idx) == 0:
        return []
    start = Bindings({v: c[idx] for v, c in cols.items()}, len(idx))
    query = Rule(Atom("#backward", tuple(Var(v) for v in ("#fact", *emit))),
                 rule.body + tuple(extra), rule.loc)
    sources = [pos(lit.relation) for lit in rule.body if isinstance(lit, Atom)]
    spec = [[(neg(lit.atom.relation), False)] for lit in rule.body if isinstance(lit, Negation)]
    return ev.evaluate(query, sources, spec, initial=start)


def rederivable(ev: RuleEvaluator, rule: Rule, facts: RowSet, pos: VersionOf,
                neg: VersionOf) -> tuple[Any, int]:
    """Mask over ``facts`` (rows of the rule's head relation): which have an instance of
    ``rule`` with positive atoms in ``pos`` and negated atoms missing ``neg``; and the
    number of instances matched (the cost of evaluating the rule backwards)."""
    hit = ev.be.xp.zeros(len(facts), dtype=bool)
    matched = 0
    for o in backward(ev, rule, facts, pos, neg):
        hit[o.cols[0]] = True
        matched += o.count
    return hit, matched


def mark_rederivable(be: Any, ev: RuleEvaluator, rules: list[Rule], rows: RowSet, hit: Any,
                     source: Any, old: Any, stats: Any, step: Any = None) -> None:
    """Set ``hit`` (in place) for each row of ``rows`` that one of ``rules`` (rules for
    the rows' relation) rederives (:func:`rederivable` over ``source``/``old``, or
    ``step(rule, rows)`` giving the same (mask, instances matched)), trying each rule on
    the rows not hit yet; adds the instances matched to ``stats.backward``."""
    for rule in rules:
        if bool(hit.all()):
            return
        rest = rows.select(~hit)
        got, matched = (rederivable(ev, rule, rest, source, old) if step is None
                        else step(rule, rest))
        stats.backward += matched
        hit[be.xp.flatnonzero(~hit)[got]] = True
