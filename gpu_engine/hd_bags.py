"""Bags kept per node across rounds and updates (paper 003: inst_p^I, maintained by
Add, Algorithm 3, and Del, Algorithm 5), with multiplicities.

A kept bag is the in-node result Π_p of one node ``p`` of a decomposed rule over one
choice of versions of its atoms' relations, grouped onto χ(p) with the number of
λ(p)-instantiations per tuple (pitfall 3 of the notes: counts are carried through the
projection).  It is *tagged* with the versions it was computed over (the RunSet / View
objects, kept alive by the entry so that their identities stay unique).  When an
evaluation asks for the node's bag over other versions, the bag is brought there by the
difference of the versions rather than recomputed:

* a version is a signed sum of immutable sorted runs: a RunSet is its runs minus its
  tombstone sets, a View its included RunSets minus its excluded ones (each a subset of
  the rows it is taken from, so the indicator of the version is exactly this sum);
* the difference between the tagged and the asked version of atom j is then a few runs
  added (new facts: Δ⁺) and a few taken away (tombstones, excluded sets, runs merged
  away: Δ⁻);
* Π_p is linear in each atom's indicator, so (eq. 7's telescoping over the node's atoms
  a_1..a_m)
  Π_p(new) − Π_p(old) = Σ_j Σ_{d ∈ Δ_j} ±Π_p(new_1..new_{j−1}, d, old_{j+1}..old_m):
  Algorithm 3 lines 1-3 (inst_p^{I⋅⋅Δ⁺} := Π_p[I, Δ⁺] ∖ inst_p^I, here as the count
  increments) and Algorithm 5 lines 1-3 (inst_p^{I⋅⋅Δ⁻} := Π_p[I, Δ⁻] ∩ inst_p^I, the
  decrements), merged into the bag afterwards (Alg. 3 lines 6-9, Alg. 5 lines 7-10) by a
  signed weighted group-count, dropping tuples whose count reaches 0 (pitfall 6: all
  increments are computed against the old bag before the merge).

A node whose relations did not change is reused as it is, so an update touches only the
bags its delta reaches.  Red (Algorithm 6) needs no bag of its own: the engine's DRed^c
decides rederivation by its exact counters (the oracle O of line 7), and the facts it
puts back reach the bags as Δ⁺ runs of the next version asked for.  A difference larger
than :data:`DIFF_SHARE` of the asked versions' rows (a large update) is not brought
forward (the node's bags stay for the versions they are tagged with) and lets the
caller evaluate the node restricted by its semi-join; a bag is built from scratch only for an evaluation whose Δ is small beside the node (else the rounds
of a large update would each build it again: Exp, 25 % deletion, 48.5 s against 27.0 s
without kept bags); a change of a negated atom's version or a version that is no
signed sum of runs is not brought forward either.  At most :data:`ENTRIES` versions are
kept per node (a seminaive round reads a node over ``I ∖ Δ`` and over ``I``; the next
round's ``I ∖ Δ`` is this one's ``I``).

The bags live in the engine state (``EngineState.hd_bags``, saved with a store and
tagged with the loaded relations when it is reopened: :mod:`gpu_engine.hd_persist`;
cleared when a decomposition is chosen again): a tag is a version, so
a stale entry (a failed update's, another engine's) is never wrong, only unused.
Measured (docs/ARCHITECTURE.md), keeping pays in updates and not while materialising
(every round's difference is merged into bags that the next round reads once), so by
default bags are kept in incremental updates only (:func:`keeping`;
``GPU_ENGINE_HD_KEEP=1`` always, ``0`` never: every bag recomputed per evaluation,
restricted by the semi-join from the Δ node).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpu_engine.kernels.backend import INDEX

from .rowset import RowSet
from .runs import RunSet
from .views import View

if TYPE_CHECKING:
    from .hd_eval import HDPlan, Table
    from .rule_eval import RuleEvaluator

ENTRIES = 2  # versions kept per node
# a difference of more rows than this share of the asked versions is not brought forward:
# LUBM(10) L+C, 25 % deletion: 4.9 s bringing bags forward by up to half, 2.9 s without
# kept bags (the restricted evaluation groups only the rows its semi-join lets through,
# a forward regroups the whole bag)
DIFF_SHARE = 0.1


def keeping(materialised: bool) -> bool:
    """Whether bags are kept and read: ``GPU_ENGINE_HD_KEEP`` ``update`` (the default: in
    incremental updates of a materialisation, not while materialising), ``1`` (always) or
    ``0`` (never: every bag recomputed per evaluation)."""
    how = os.environ.get("GPU_ENGINE_HD_KEEP", "update")
    return how == "1" or (how != "0" and materialised)


@dataclass
class Entry:
    """One kept bag: Π_p over ``sources`` (the node's atoms' versions, in node order) with
    the negated atoms' versions ``negs``."""

    sources: tuple[Any, ...]
    negs: tuple[Any, ...]
    bag: Table


@dataclass
class BagStats:
    hits: int = 0  # same versions
    updated: int = 0  # brought forward by a difference
    computed: int = 0  # computed in full
    skipped: int = 0  # too far: dropped, evaluated restricted instead


@dataclass
class NodeBags:
    """The kept bags of an engine state: (rule key, node) -> entries, newest last."""

    entries: dict[tuple[Any, int], list[Entry]] = field(default_factory=dict)
    stats: BagStats = field(default_factory=BagStats)

    def clear(self) -> None:
        self.entries.clear()

    def bag(self, ev: RuleEvaluator, plan: HDPlan, p: int, sources: list[Any],
            negated: Any, may_skip: bool = False, build: bool = True) -> Table | None:
        """Π_p over ``sources`` (the rule's positive atoms' versions; only node ``p``'s
        are read) and ``negated``, with counts: kept, brought forward, or computed.
        ``may_skip``: when the node's kept bags are all too far from these versions
        (a large update), answer None (the caller evaluates the node restricted by
        its semi-join); with ``may_skip`` and not ``build`` (a large Δ) a
        node without a usable bag is not built either (None)."""
        from .hd_eval import _bag

        key = (plan.key, p)
        srcs = tuple(sources[i] for i in plan.node_atoms[p])
        negs = _neg_versions(plan, p, negated)
        kept = self.entries.setdefault(key, [])
        for e in reversed(kept):
            if all(a is b for a, b in zip(e.sources, srcs)) and _same(e.negs, negs):
                self.stats.hits += 1
                return e.bag
        best: tuple[int, Entry, list[list[tuple[RowSet, int]]]] | None = None
        total = sum(len(s) for s in srcs)
        for e in reversed(kept):
            if not _same(e.negs, negs):
                continue
            diffs = [_diff(a, b) for a, b in zip(e.sources, srcs)]
            if any(d is None for d in diffs):
                continue
            size = sum(len(r) for d in diffs for r, _ in d)  # type: ignore[union-attr]
            if size <= DIFF_SHARE * total and (best is None or size < best[0]):
                best = (size, e, diffs)  # type: ignore[assignment]
        if best is None and may_skip and (kept or not build):
            self.stats.skipped += 1  # (the kept ones stay: other variants may ask for them)
            return None
        if best is not None:
            bag = _forward(ev, plan, p, sources, negated, best[1], srcs, best[2])
            self.stats.updated += 1
        else:
            bag = _bag(ev, plan, p, sources, negated)
            self.stats.computed += 1
        kept.append(Entry(srcs, negs, bag))
        if len(kept) > ENTRIES:
            del kept[0]
        return bag


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _neg_versions(plan: HDPlan, p: int, negated: Any) -> tuple[Any, ...]:
    """The versions node ``p``'s negated atoms test against (identities compared)."""
    if not plan.node_negs[p]:
        return ()
    if isinstance(negated, dict):
        from .ir import Negation

        return tuple(negated[lit.atom.relation] for lit in plan.node_rules[p].body
                     if isinstance(lit, Negation))
    return tuple(v for k in plan.node_negs[p] for c in negated[k] for v in c)


def _terms(src: Any, sign: int, out: dict[int, tuple[RowSet, int]]) -> bool:
    """Add the signed runs of a version to ``out`` (id -> (run, coefficient)); False
    when the version is of another kind."""
    if isinstance(src, RunSet):
        for r in src.runs:
            _add(out, r, sign)
        for d in src.dead:
            _add(out, d, -sign)
        return True
    if isinstance(src, View):
        return (all(_terms(i, sign, out) for i in src.include)
                and all(_terms(x, -sign, out) for x in src.exclude))
    return False


def _add(out: dict[int, tuple[RowSet, int]], r: RowSet, c: int) -> None:
    got = out.get(id(r))
    out[id(r)] = (r, c + (got[1] if got else 0))


def _diff(old: Any, new: Any) -> list[tuple[RowSet, int]] | None:
    """new − old as signed runs (coefficient ±k), or None when not comparable."""
    if old is new:
        return []
    if old.arity != new.arity or old.arity == 0:
        return None
    acc: dict[int, tuple[RowSet, int]] = {}
    if not (_terms(new, 1, acc) and _terms(old, -1, acc)):
        return None
    return [(r, c) for r, c in acc.values() if c != 0 and len(r)]


def _forward(ev: RuleEvaluator, plan: HDPlan, p: int, sources: list[Any], negated: Any,
             e: Entry, srcs: tuple[Any, ...], diffs: list[list[tuple[RowSet, int]]]
             ) -> Table:
    """The entry's bag brought to the versions ``srcs`` (the telescoping sum above)."""
    from .hd_eval import Table, _bag

    be, xp = ev.be, ev.be.xp
    chi = list(plan.dec.chi[p])
    parts: list[Table] = [e.bag]
    atoms = plan.node_atoms[p]
    for j, d in enumerate(diffs):
        for run, c in d:
            full = list(sources)
            for q, i in enumerate(atoms):
                full[i] = srcs[q] if q < j else e.sources[q]
            piece = RunSet.of(run)
            full[atoms[j]] = piece
            t = _bag(ev, plan, p, full, negated, delta=piece)
            if len(t):
                parts.append(Table(t.cols, t.cnt * c))
    if len(parts) == 1:
        return e.bag
    if not chi:
        n = int(sum(int(t.cnt.sum()) for t in parts))
        return Table({}, xp.asarray([n] if n else [], dtype=INDEX))
    cols = tuple(xp.concatenate([t.cols[v] for t in parts]) for v in chi)
    w = xp.concatenate([t.cnt for t in parts])
    rs, cnt = RowSet.from_columns(be, cols, len(chi), return_counts=True, weights=w)
    keep = cnt != 0
    return Table({v: c[keep] for v, c in zip(chi, rs.cols)}, cnt[keep])


__all__ = ["NodeBags", "BagStats", "keeping", "ENTRIES", "DIFF_SHARE"]
