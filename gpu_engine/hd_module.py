"""The hypertree-decomposition module of an engine (paper 003): which rules are decomposed,
their decompositions, and the plans :class:`RuleEvaluator` evaluates them by.

``Engine.decompose`` is ``auto`` (rules whose body is cyclic, the paper's "combined"
approach, where the cost model expects the pairwise plan to build over twice the
decomposition's rows: :func:`gpu_engine.decomposition.worth_decomposing`), ``all`` (every rule with two or more positive atoms that fits: for testing) or
``off``.  A rule's decomposition is chosen the first time the rule is evaluated, by the
cost model of :mod:`gpu_engine.decomposition` over the sizes and distinct counts of the
relations at that moment (the lower strata are complete by then; relations still empty
count as the largest relation), and is kept in the engine state
(``EngineState.decompositions``, saved in the store's ``meta.json``) so that later
updates and reopened stores use the same one (paper 003 §7: fixed once chosen).
:meth:`HDModule.replan` chooses them again over the current facts (``--decompose
replan``) and drops the kept bags (:mod:`gpu_engine.hd_bags`), which the new
decompositions rebuild on use from I: any decomposition gives the same facts and
counters.

Rules of aggregate strata, of strata with subsumption or choice-domain relations, and
internal rules (queries, module joins) are never decomposed.
"""

from __future__ import annotations

from typing import Any

from .decomposition import Decomposition, decompose
from .hd_bags import NodeBags, keeping
from .hd_eval import HDPlan
from .ir import Rule

MODES = ("auto", "all", "off")


class HDModule:
    """Decompositions of one engine's rules (state in ``engine.state``)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.index: dict[int, int] = {}
        for s in engine.strata:
            if s.aggregate is not None or s.subsumptions or any(
                    engine.program.relations[r].choice for r in s.relations):
                continue
            for r in s.rules:
                self.index[id(r)] = next(i for i, x in enumerate(engine.rules) if x is r)
        self._plans: dict[int, tuple[Any, HDPlan]] = {}
        self._stats: dict[tuple[str, int], tuple[int, int]] = {}
        engine.evaluator.hd_bags = self.active_bags

    def active_bags(self) -> NodeBags | None:
        """The kept bags where they are read now (:func:`gpu_engine.hd_bags.keeping`)."""
        return self.bags() if keeping(bool(self.engine._state.materialised)) else None

    def bags(self) -> NodeBags:
        """The kept bags of the engine's current state (gpu_engine.hd_bags)."""
        st = self.engine._state
        if st.hd_bags is None:
            st.hd_bags = NodeBags()
        return st.hd_bags

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"decompose must be one of {', '.join(MODES)}, not {mode!r}")
        for st in self._states():
            if mode != st.decompose:
                st.decompose = mode
                st.decompositions = {}
                st.hd_bags = None
        self._plans = {}

    def replan(self) -> None:
        """Choose every decomposition again over the current facts (lazily, per rule)."""
        for st in self._states():
            st.decompositions = {}
            st.hd_bags = None  # the bags of the new decompositions are built on use
        self._plans = {}

    def _states(self) -> list[Any]:
        """The engine's state and, when a GPU engine's host twin is current, the twin's."""
        a, b = self.engine._state, self.engine.current_state()
        return [a] if a is b else [a, b]

    def plan(self, rule: Rule) -> HDPlan | None:
        """The plan of a decomposed rule, or None (the rule is evaluated as usual)."""
        st = self.engine._state
        if st.decompose == "off":
            return None
        i = self.index.get(id(rule))
        if i is None:
            return None
        key = str(i)
        decs = st.decompositions
        if key not in decs:
            self._stats = {}
            d = decompose(rule, self._stat, st.decompose)
            decs[key] = None if d is None else d.to_json()
        got = decs[key]
        if got is None:
            return None
        cached = self._plans.get(i)
        if cached is not None and cached[0] is got:
            return cached[1]
        plan = HDPlan.build(rule, Decomposition.from_json(got))
        self._plans[i] = (got, plan)
        return plan

    def describe(self, rule: Rule) -> str:
        """``hd w=2 {..} {..}`` for a decomposed rule, else ``""``."""
        p = self.plan(rule)
        return "" if p is None else "hd " + p.dec.describe(rule)

    def _stat(self, relation: str, col: int) -> tuple[int, int]:
        """(rows, distinct values of column ``col``) of a relation now; an empty relation
        counts as the largest one, with distinct rows."""
        key = (relation, col)
        if key not in self._stats:
            store = self.engine._state.store
            rs = store.get(relation)
            n = len(rs) if rs is not None else 0
            if n == 0:
                big = max((len(r) for r in store.values()), default=1)
                self._stats[key] = (big, big)
            else:
                rows = rs.compact()
                xp = rows.be.xp
                if rows.arity:  # column 0 of a run is sorted; others are sorted here
                    c = rows.cols[col] if col == 0 else xp.sort(rows.cols[col])
                    d = 1 + int(xp.count_nonzero(c[1:] != c[:-1]))
                else:
                    d = 1
                self._stats[key] = (n, d)
        return self._stats[key]


__all__ = ["HDModule", "MODES"]
