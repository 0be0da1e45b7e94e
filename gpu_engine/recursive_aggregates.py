"""Aggregates inside recursion: correlated aggregates over lower strata (Soufflé's reading).

Soufflé evaluates an aggregate of a recursive rule per binding of the rule's outer
variables, inside the fixpoint loop::

    out(r + 1, z) :- r < 30, out(r, _), z = count : { point(x, y), x <= r + 1 }.

When the aggregate's body reads only relations of lower strata (besides the outer
bindings it is correlated with), its value for a key is a fixed function of the key: the
front end has put the keys into the hidden relation ``@aggK.dom`` (the clause's literals
that do not read an aggregate result), so ``@aggK`` is ``{(k, f(k)) : k ∈ dom}`` and only
grows as ``dom`` grows.  :func:`mark_lookups` accepts such aggregates
(``Aggregate.lookup``) and refuses, at the aggregate, one whose body reads the recursive
component itself (no lattice semantics for that).  The engine then evaluates ``@aggK`` as
a member of the recursive stratum: each seminaive round aggregates the new keys of ``dom``
(its Δ) in one columnar evaluation grouped by the keys (:func:`lookup_rows`; the body is
joined from the key bindings, never per key in Python), and the rows are that round's Δ
of ``@aggK`` (each with one derivation).  ``count`` and ``sum`` yield 0 for a key without
instances: the clause's ``!@aggK(k, _), z = 0`` alternative (negation through recursion)
is dropped, the positive alternative reads the 0.

Incremental maintenance of a program with such a stratum rematerialises (every algorithm,
``gpu_engine.maintenance``): the stratum's values are exact, but no update algorithm
maintains the Δ-driven aggregate rows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpu_engine.kernels.backend import INDEX

from .ir import Aggregate, Atom, Negation, Program, ProgramError
from .rowset import RowSet, union_rows
from .stratify import _tarjan, dependencies

REMAT_NOTE = ("rematerialised: the program aggregates inside a recursive stratum "
              "(gpu_engine.recursive_aggregates), which no incremental algorithm maintains")


def mark_lookups(program: Program) -> None:
    """Mark the aggregates that sit in a recursive component as lookups (in place), drop
    the ``count`` zero alternatives that negate them; raise :class:`ProgramError` at an
    aggregate whose body reads its own recursive component."""
    if not program.aggregates:
        return
    deps = dependencies(program, program.rules, program.subsumptions)
    names = list(program.relations)
    comp_of = {n: i for i, c in enumerate(_tarjan(names, deps)) for n in c}
    marked: set[str] = set()
    for name, agg in list(program.aggregates.items()):
        comp = comp_of[name]
        if not any(comp_of[d] == comp for d in deps[name]):
            continue  # not recursive: a stratum of its own
        dom = f"{name}.dom"
        for rule in agg.rules:
            for lit in rule.body:
                rel = lit.relation if isinstance(lit, Atom) else \
                    lit.atom.relation if isinstance(lit, Negation) else None
                if rel is None or rel == dom or comp_of.get(rel) != comp:
                    continue
                shown = rel if not rel.startswith("@") else "an aggregate of the component"
                users = sorted(r for r, c in comp_of.items() if c == comp and
                               not r.startswith("@"))
                raise ProgramError(
                    f"recursion through an aggregate ('{agg.op}'): its body reads {shown}, "
                    f"which is recursive with {', '.join(users) or name} through the "
                    "aggregate's result; only aggregates whose body reads lower strata "
                    "(correlated with the recursive rule's variables) are supported",
                    agg.loc)
        eq = program.equality
        if eq is not None and comp_of.get(eq.relation) == comp:
            raise ProgramError(f"an aggregate ('{agg.op}') recursive with the equality "
                               f"relation {eq.relation} is not supported", agg.loc)
        if dom not in comp_of or comp_of[dom] != comp:
            raise ProgramError(f"recursion through an aggregate ('{agg.op}'): not "
                               "stratifiable", agg.loc)
        program.aggregates[name] = replace(agg, lookup=True)
        marked.add(name)
    if not marked:
        return
    kept = []
    for rule in program.rules:
        negated = [lit.atom.relation for lit in rule.body
                   if isinstance(lit, Negation) and lit.atom.relation in marked]
        if negated:
            if any(program.aggregates[n].op not in ("count", "sum") for n in negated):
                raise ProgramError("a negated aggregate relation inside recursion",
                                   rule.loc)
            continue  # count's / sum's zero alternative: the lookup yields the 0 itself
        kept.append(rule)
    program.rules[:] = kept


def lookup_rows(ev: Any, agg: Aggregate, version: Any, keys: RowSet) -> RowSet:
    """``agg``'s rows for the group keys ``keys`` (sorted distinct rows): one columnar
    aggregation over all of them; ``count`` and ``sum`` add ``(k, 0)`` for keys without
    instances (0 has the same bits in every numeric type)."""
    from .aggregates import evaluate

    be = ev.be
    k = agg.keys
    if not len(keys):
        return RowSet.empty(be, k + 1)
    rows = evaluate(ev, agg, version, keys)
    if agg.op not in ("count", "sum"):
        return rows
    have = RowSet.from_columns(be, rows.cols[:k], k) if len(rows) else RowSet.empty(be, k)
    missing = keys.minus(have) if len(have) else keys
    if not len(missing):
        return rows
    zeros = be.xp.zeros(len(missing), dtype=INDEX)
    zero_rows = RowSet.from_columns(be, (*missing.cols, zeros), k + 1)
    return union_rows(be, k + 1, [rows, zero_rows]) if len(rows) else zero_rows


def round_outputs(engine: Any, lookups: list[Aggregate], delta: dict[str, Any]) -> dict[
        str, RowSet]:
    """The Δ rows of each lookup aggregate for this round: its aggregate over the new keys
    of its domain relation (the previous round's Δ)."""
    out: dict[str, RowSet] = {}
    for agg in lookups:
        d = delta.get(f"{agg.relation}.dom")
        if d is None or not len(d):
            continue
        keys = d.compact() if hasattr(d, "compact") else d
        out[agg.relation] = lookup_rows(engine.evaluator, agg, engine.store.__getitem__, keys)
    return out


__all__ = ["REMAT_NOTE", "lookup_rows", "mark_lookups", "round_outputs"]
