"""The columnar engine: explicit facts, strata and seminaive materialisation.

Seminaive evaluation with exact delta variants (DESIGN.md): for a recursive rule whose
body atoms of the current stratum are at positions p_1..p_k, variant i evaluates atom
p_i over Δ, atoms p_j (j < i) over I \\ Δ (the previous version) and atoms p_j (j > i)
over I (the current version, which includes Δ).  Every rule instance is thereby
considered exactly once, so the number of output rows of all variants of all rounds is
the exact number of derivations of each fact; with ``counting=True`` the engine keeps
these multiplicities as the non-recursive counter ``c_nr`` (rules with no atom of their
own stratum) and the recursive counter ``c_r``, aligned with the rows of each relation
(the counters of DRed^c, paper 000 §4).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernels.backend import INDEX, Backend

from .ir import Atom, Negation, Program, ProgramError, Rule, SymbolTable
from .rowset import RowSet
from .rule_eval import RuleEvaluator, RuleOutput
from .stats import MaterialisationStats, RuleStats, StratumStats
from .stratify import Stratum, all_rules, stratify

ProgressHook = Callable[[str, int, int], None]


@dataclass
class Counters:
    """Derivation counters aligned with a relation's rows."""

    nonrec: Any
    rec: Any


@dataclass
class Engine:
    """Holds a program's relations on one backend and materialises them."""

    program: Program
    be: Backend
    symbols: SymbolTable
    counting: bool = False
    explicit: dict[str, RowSet] = field(default_factory=dict)
    store: dict[str, RowSet] = field(default_factory=dict)
    counters: dict[str, Counters] = field(default_factory=dict)
    progress: ProgressHook | None = None

    def __post_init__(self) -> None:
        self.rules: list[Rule] = all_rules(self.program)
        self.strata: list[Stratum] = stratify(self.program, self.rules)
        self.evaluator = RuleEvaluator(self.be, self.symbols)
        for name, rel in self.program.relations.items():
            self.explicit.setdefault(name, RowSet.empty(self.be, rel.arity))
        self.store = dict(self.explicit)
        self.materialised = False

    # --- facts --------------------------------------------------------------------------

    def add_facts(self, relation: str, cols: list[np.ndarray] | tuple[Any, ...],
                  n_rows: int | None = None) -> int:
        """Add encoded explicit facts (one int64 column per attribute); returns new rows."""
        rel = self._relation(relation)
        dev = tuple(self.be.asarray(c) for c in cols)
        if len(dev) != rel.arity:
            raise ValueError(f"{relation} has arity {rel.arity}, got {len(dev)} columns")
        n = n_rows if rel.arity == 0 else (len(dev[0]) if dev else 0)
        union, delta, _ = self.explicit[relation].add(dev, n_rows=n)
        self.explicit[relation] = union
        self.materialised = False
        return len(delta)

    def _relation(self, name: str):
        try:
            return self.program.relations[name]
        except KeyError:
            raise ProgramError(f"unknown relation {name!r}") from None

    # --- materialisation ----------------------------------------------------------------

    def materialise(self) -> MaterialisationStats:
        """Compute the materialisation from the explicit facts (from scratch)."""
        t0 = time.perf_counter()
        stats = MaterialisationStats(device=self.be.name)
        self.store = dict(self.explicit)
        self.counters = {}
        if self.counting:
            for name, rs in self.store.items():
                z = self.be.xp.zeros(len(rs), dtype=INDEX)
                self.counters[name] = Counters(z, z.copy())
        for k, stratum in enumerate(self.strata):
            if self.progress:
                self.progress("stratum", k, len(self.strata))
            if not stratum.rules:
                continue
            stats.strata.append(self._evaluate_stratum(stratum))
        stats.seconds = time.perf_counter() - t0
        stats.facts = sum(len(r) for r in self.store.values())
        stats.derivations = sum(s.derivations for s in stats.strata)
        stats.peak_device_bytes = self.be.peak_memory_bytes()
        self.materialised = True
        return stats

    def _evaluate_stratum(self, s: Stratum) -> StratumStats:
        t0 = time.perf_counter()
        st = StratumStats(index=s.index, relations=list(s.relations), recursive=s.recursive)
        rstats = {id(r): RuleStats(str(r), r.loc) for r in s.rules}
        before = {r: len(self.store[r]) for r in s.relations}
        in_stratum = set(s.relations)
        # non-recursive rules: once, over the complete lower strata
        outputs: dict[str, list[RuleOutput]] = {r: [] for r in s.relations}
        for rule in s.nonrecursive_rules:
            self._fire(rule, [self.store[a.relation] for a in _atoms(rule)], outputs, rstats)
        delta: dict[str, RowSet] = {}
        for r in s.relations:
            union, d = self._absorb(r, outputs[r], recursive=False)
            self.store[r] = union
            delta[r] = self.store[r] if s.recursive else d
        st.iterations = 1
        # recursive rules: seminaive rounds with exact delta variants
        prev = {r: RowSet.empty(self.be, self.store[r].arity) for r in s.relations}
        while s.recursive and any(len(delta[r]) for r in s.relations):
            st.iterations += 1
            if self.progress:
                self.progress("iteration", st.iterations, s.index)
            outputs = {r: [] for r in s.relations}
            for rule in s.recursive_rules:
                atoms = _atoms(rule)
                rec = [i for i, a in enumerate(atoms) if a.relation in in_stratum]
                for vi, p in enumerate(rec):
                    if len(delta[atoms[p].relation]) == 0:
                        continue
                    sources = []
                    for i, a in enumerate(atoms):
                        if a.relation not in in_stratum:
                            sources.append(self.store[a.relation])
                        elif i == p:
                            sources.append(delta[a.relation])
                        elif i in rec[:vi]:
                            sources.append(prev[a.relation])
                        else:
                            sources.append(self.store[a.relation])
                    self._fire(rule, sources, outputs, rstats)
            new_delta = {}
            for r in s.relations:
                prev[r] = self.store[r]
                union, d = self._absorb(r, outputs[r], recursive=True)
                self.store[r] = union
                new_delta[r] = d
            delta = new_delta
        st.rules = list(rstats.values())
        st.derivations = sum(r.derivations for r in st.rules)
        st.facts = sum(len(self.store[r]) - before[r] for r in s.relations)
        st.seconds = time.perf_counter() - t0
        return st

    def _fire(self, rule: Rule, sources: list[RowSet], outputs: dict[str, list[RuleOutput]],
              rstats: dict[int, RuleStats]) -> None:
        t0 = time.perf_counter()
        negated = {lit.atom.relation: self.store[lit.atom.relation]
                   for lit in rule.body if isinstance(lit, Negation)}
        outs = self.evaluator.evaluate(rule, sources, negated)
        outputs[rule.head.relation].extend(outs)
        rs = rstats[id(rule)]
        rs.derivations += sum(o.n for o in outs)
        rs.evaluations += 1
        rs.seconds += time.perf_counter() - t0

    def _absorb(self, name: str, outs: list[RuleOutput], recursive: bool
                ) -> tuple[RowSet, RowSet]:
        """Add rule outputs to relation ``name``; update counters; return (I', Δ)."""
        cur = self.store[name]
        xp = self.be.xp
        if not outs:
            return cur, RowSet.empty(self.be, cur.arity)
        n = sum(o.n for o in outs)
        if cur.arity:
            cols = tuple(xp.concatenate([o.cols[c] for o in outs]) for c in range(cur.arity))
        else:
            cols = ()
        union, delta, info = cur.add(cols, n_rows=n, return_counts=self.counting)
        if self.counting and info is not None:
            pos_old, pos_in, cnt = info
            c = self.counters[name]
            nonrec, rec = c.nonrec, c.rec
            if pos_old is not None:
                nonrec, rec = _realign(xp, nonrec, pos_old, len(union)), _realign(
                    xp, rec, pos_old, len(union))
            target = rec if recursive else nonrec
            target[pos_in] += cnt  # positions are distinct: one per distinct derived row
            self.counters[name] = Counters(nonrec, rec)
        return union, delta

    # --- access -------------------------------------------------------------------------

    def columns(self, name: str) -> tuple[np.ndarray, ...]:
        """The materialised rows of ``name`` as host int64 columns (sorted)."""
        rs = self.store[name]
        return tuple(self.be.to_host(c) for c in rs.cols)

    def size(self, name: str) -> int:
        return len(self.store[name])


def _atoms(rule: Rule) -> list[Atom]:
    return [lit for lit in rule.body if isinstance(lit, Atom)]


def _realign(xp: Any, arr: Any, pos_old: Any, n: int) -> Any:
    out = xp.zeros(n, dtype=INDEX)
    out[pos_old] = arr
    return out

