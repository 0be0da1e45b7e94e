"""Explaining a fact: a proof tree of minimal height, found by backward steps over indexes.

A fact's *height* is 0 when it is explicit and otherwise ``1 + max`` of the heights of the
body facts of its best rule instance (the round of a naive evaluation that first derives
it). The height of a fact depends only on the facts its proofs can use, its *backward
closure*, so explaining one fact does not need heights kept for the whole
materialisation by every update (which would add a cost to every maintenance algorithm);
it needs three columnar passes over the current materialisation:

1. **Backward closure.** Frontier by frontier, the rules whose head relation holds
   frontier facts are evaluated backwards with the head bound to those facts
   (:func:`gpu_engine.affected.backward`, the batched step of B/F's CHECK): every instance
   whose body facts hold in the materialisation is recorded, and its body facts not seen
   yet form the next frontier. Explicit facts are leaves.
2. **Heights.** Over the recorded instances, ``h(head) = min(h(head), 1 + max h(body))``
   as scatter-min passes until nothing changes (explicit facts start at 0, the others at
   infinity): at most one pass more than the answer's height.
3. **The proof.** From the fact down: an instance achieving its height, then the same for
   each body fact (each fact is expanded once; a repeated fact refers to its first node).

Negated literals, comparisons and bindings of an instance hold by construction (they are
evaluated against the materialisation), so a proof lists the positive body facts only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .affected import backward
from .expr import const_value
from .ir import Atom, Call, Compare, Const, ProgramError, Rule, Var
from .rowset import RowSet
from .views import View

MAX_INSTANCES = 50_000_000  # a backward closure larger than this is refused


@dataclass
class ProofNode:
    """One fact of a proof: encoded row, height, the rule instance that derives it
    (``None`` for an explicit fact) and the body facts' nodes."""

    relation: str
    row: tuple[int, ...]
    height: int
    rule: Rule | None = None
    children: list[ProofNode] = field(default_factory=list)
    repeated: bool = False  # already expanded elsewhere in the tree


@dataclass
class _Instances:
    """Instances of one rule found by the backward closure (host arrays)."""

    rule: Rule
    n: int
    head: tuple[np.ndarray, ...]
    body: list[tuple[str, tuple[np.ndarray, ...]]]  # per positive atom: relation, columns
    head_id: np.ndarray | None = None
    body_id: np.ndarray | None = None  # (instances, atoms)


def _normalise(rule: Rule) -> tuple[Rule, list[tuple[str, tuple[Var | Const, ...]]]]:
    """The rule with functor arguments of body atoms replaced by fresh variables bound by
    an equality, and its positive atoms as (relation, args) over variables and constants."""
    body: list[Any] = []
    atoms: list[tuple[str, tuple[Var | Const, ...]]] = []
    fresh = 0
    for lit in rule.body:
        if isinstance(lit, Atom):
            args: list[Var | Const] = []
            extra: list[Compare] = []
            for t in lit.args:
                if isinstance(t, Call):
                    fresh += 1
                    v = Var(f"#e{fresh}")
                    extra.append(Compare("=", v, t, t.type, lit.loc))
                    args.append(v)
                else:
                    args.append(t)
            body.append(Atom(lit.relation, tuple(args), lit.loc))
            body.extend(extra)
            atoms.append((lit.relation, tuple(args)))
        else:
            body.append(lit)
    return Rule(rule.head, tuple(body), rule.loc), atoms


class Explainer:
    """Proofs over one engine's current materialisation (``engine`` duck-typed: ``store``,
    ``explicit``, ``rules``, ``evaluator``, ``be``, ``symbols``, ``program``)."""

    def __init__(self, engine: Any) -> None:
        host = engine._host_reads() if hasattr(engine, "_host_reads") else None
        self.eng = host if host is not None else engine
        self.by_head: dict[str, list[tuple[Rule, Rule, list]]] = {}
        for rule in self.eng.rules:
            norm, atoms = _normalise(rule)
            self.by_head.setdefault(rule.head.relation, []).append((rule, norm, atoms))

    # --- the three passes ---------------------------------------------------------------

    def explain(self, relation: str, row: tuple[int, ...]) -> ProofNode | None:
        """The proof of minimal height of ``relation(row)`` (encoded values), or ``None``
        when the fact does not hold."""
        eng = self.eng
        be = eng.be
        rel = eng.program.relations.get(relation)
        if rel is None:
            raise ProgramError(f"unknown relation {relation!r}")
        if len(row) != rel.arity:
            raise ProgramError(f"{relation} has arity {rel.arity}, not {len(row)}")
        cols = tuple(be.asarray(np.asarray([v], dtype=np.int64)) for v in row)
        target = RowSet.from_columns(be, cols, rel.arity, 1)
        if not bool(be.to_host(eng.store[relation].has(target))[0]):
            return None
        visited, records = self._closure(relation, target)
        heights, offsets = self._heights(visited, records)
        return self._proof(relation, row, visited, records, heights, offsets)

    def _closure(self, relation: str, target: RowSet) -> tuple[dict[str, RowSet],
                                                                  list[_Instances]]:
        eng, be = self.eng, self.eng.be

        def version(name: str) -> View:
            return View.of(eng.store[name])

        visited: dict[str, RowSet] = {relation: target}
        frontier: dict[str, RowSet] = {relation: target}
        records: list[_Instances] = []
        total = 0
        while frontier:
            found: dict[str, list[tuple[Any, ...]]] = {}
            for name, facts in frontier.items():
                if name in eng.program.aggregates:  # an aggregate's row: a leaf
                    continue
                derived = facts.select(~eng.explicit[name].has(facts)) if len(
                    eng.explicit[name]) else facts
                if not len(derived):
                    continue
                for rule, norm, atoms in self.by_head.get(name, ()):
                    emit = tuple(dict.fromkeys(
                        a.name for _, args in atoms for a in args if isinstance(a, Var)))
                    for out in backward(eng.evaluator, norm, derived, version, version, emit):
                        n = out.n
                        total += n
                        if total > MAX_INSTANCES:
                            raise ProgramError(
                                f"the fact's backward closure exceeds {MAX_INSTANCES:,} rule "
                                "instances; explain a more specific fact")
                        by_var = dict(zip(emit, out.cols[1:]))
                        idx = out.cols[0]
                        head = tuple(be.to_host(c[idx]) for c in derived.cols)
                        body = []
                        for rel_name, args in atoms:
                            acols = tuple(
                                by_var[a.name] if isinstance(a, Var) else
                                be.xp.full(n, const_value(a, eng.symbols), dtype=np.int64)
                                for a in args)
                            body.append((rel_name, tuple(be.to_host(c) for c in acols)))
                            if args:
                                found.setdefault(rel_name, []).append(acols)
                            else:
                                found.setdefault(rel_name, [])
                        records.append(_Instances(rule, n, head, body))
            frontier = {}
            for name, parts in found.items():
                arity = eng.program.relations[name].arity
                if arity == 0:
                    rows = RowSet.from_columns(be, (), 0, 1)
                else:
                    cols = tuple(be.xp.concatenate([p[i] for p in parts]) for i in range(arity))
                    rows = RowSet.from_columns(be, cols, arity)
                seen = visited.get(name)
                new = rows if seen is None else rows.minus(seen)
                if len(new):
                    visited[name] = new if seen is None else seen.merge(new)
                    frontier[name] = new
        return visited, records

    def _heights(self, visited: dict[str, RowSet], records: list[_Instances]) -> tuple[
            np.ndarray, dict[str, int]]:
        eng = self.eng
        offsets: dict[str, int] = {}
        n = 0
        for name, rows in visited.items():
            offsets[name] = n
            n += len(rows)
        inf = np.iinfo(np.int64).max // 4
        h = np.full(n, inf, dtype=np.int64)
        for name, rows in visited.items():
            if name in eng.program.aggregates:  # aggregate rows are leaves, as explicit facts
                h[offsets[name]:offsets[name] + len(rows)] = 0
            elif len(eng.explicit[name]):
                mask = eng.be.to_host(eng.explicit[name].has(rows))
                h[offsets[name] + np.flatnonzero(mask)] = 0
        for rec in records:
            rec.head_id = self._ids(rec.rule.head.relation, rec.head, rec.n, visited, offsets)
            if rec.body:
                rec.body_id = np.stack([self._ids(r, c, rec.n, visited, offsets)
                                        for r, c in rec.body], axis=1)
            else:
                rec.body_id = np.zeros((len(rec.head_id), 0), dtype=np.int64)
        while True:
            before = h.copy()
            for rec in records:
                cand = _candidate(rec, h)
                np.minimum.at(h, rec.head_id, cand)
            if np.array_equal(before, h):
                return h, offsets

    def _ids(self, name: str, cols: tuple[np.ndarray, ...], n: int, visited: dict[str, RowSet],
             offsets: dict[str, int]) -> np.ndarray:
        """Ids (offset + position among the relation's visited facts) of ``n`` rows."""
        rows = visited[name]
        if rows.arity == 0:
            return np.full(n, offsets[name], dtype=np.int64)
        be = self.eng.be
        pos = be.to_host(rows.positions(tuple(be.asarray(c) for c in cols)))
        return offsets[name] + np.asarray(pos, dtype=np.int64)

    def _proof(self, relation: str, row: tuple[int, ...], visited: dict[str, RowSet],
               records: list[_Instances], h: np.ndarray,
               offsets: dict[str, int]) -> ProofNode:
        names = {offsets[n]: n for n in visited}
        starts = sorted(names)

        def locate(i: int) -> tuple[str, tuple[int, ...]]:
            k = starts[int(np.searchsorted(starts, i, side="right")) - 1]
            name = names[k]
            rows = visited[name]
            cols = tuple(int(self.eng.be.to_host(c[i - k : i - k + 1])[0]) for c in rows.cols)
            return name, cols

        target = int(self._ids(relation, tuple(np.asarray([v]) for v in row), 1, visited,
                               offsets)[0])
        expanded: set[int] = set()

        def node(i: int) -> ProofNode:
            name, cols = locate(i)
            out = ProofNode(name, cols, int(h[i]))
            if h[i] == 0 or i in expanded:
                out.repeated = h[i] > 0
                return out
            expanded.add(i)
            for rec in records:
                hit = np.flatnonzero(rec.head_id == i)
                if len(hit) == 0:
                    continue
                cand = _candidate(rec, h)[hit]
                best = np.flatnonzero(cand == h[i])
                if len(best):
                    j = hit[best[0]]
                    out.rule = rec.rule
                    out.children = [node(int(b)) for b in rec.body_id[j]]
                    return out
            raise AssertionError("no instance achieves the fact's height")  # pragma: no cover

        return node(target)


def _candidate(rec: _Instances, h: np.ndarray) -> np.ndarray:
    """``1 + max`` of the body heights of each instance (1 for an empty body)."""
    assert rec.body_id is not None
    if rec.body_id.shape[1] == 0:
        return np.ones(rec.body_id.shape[0], dtype=np.int64)
    return 1 + h[rec.body_id].max(axis=1)
