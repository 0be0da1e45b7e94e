"""The working state of one incremental update (paper 000's D, A, E⁻, E⁺ and counters).

Per relation the update keeps the old materialisation ``I`` (one sorted run, never
modified while the update runs) and, as run sets disjoint from each other:

* ``D``: overdeleted facts (a subset of ``I``);
* ``A_old``: added facts that were in ``I`` (necessarily in ``D``: rederived);
* ``A_new``: added facts that were not in ``I``;
* ``gone`` = ``D \\ A``: facts of ``I`` that are not in the new materialisation.

so that the versions the algorithms read are views over stored runs:
``I``, ``I \\ (D \\ A)``, ``I ∪ A`` and ``(I \\ D) ∪ A``.  Counters are working copies
of ``c_nr`` / ``c_r`` aligned with ``I``'s rows (copied on first write), plus a log of
increments for facts outside ``I``.  :meth:`UpdateState.commit` builds the new
relations and counters; nothing of the engine changes before it, so an update that
fails leaves the engine as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernels.backend import INDEX, Backend

from .rowset import RowSet
from .rule_eval import RuleOutput
from .runs import RunSet
from .views import View


@dataclass
class RelState:
    I: RowSet  # noqa: E741 - the paper's name
    D: RunSet
    A_old: RunSet
    A_new: RunSet
    gone: RunSet
    nr: Any = None  # working c_nr aligned with I (None: unchanged)
    r: Any = None
    new_log: list[tuple[RowSet, Any, bool]] = field(default_factory=list)


class UpdateState:
    """D, A and counters of every relation during one update."""

    def __init__(self, be: Backend, store: dict[str, RunSet], counters: dict[str, Any],
                 level: int) -> None:
        self.be = be
        self.level = level
        self.counters = counters
        self.rel: dict[str, RelState] = {}
        self.touched: set[str] = set()  # relations whose D or A is not empty
        for name, runs in store.items():
            empty = RunSet.empty(be, runs.arity)
            self.rel[name] = RelState(runs.compact(), empty, empty, empty, empty)

    # --- views (paper 000's versions of the materialisation) ----------------------------

    def old(self, name: str) -> View:
        """``I``."""
        s = self.rel[name]
        return View(s.I.arity, (RunSet.of(s.I),))

    def mid(self, name: str) -> View:
        """``I \\ (D \\ A)``."""
        s = self.rel[name]
        return View(s.I.arity, (RunSet.of(s.I),)).minus(s.gone)

    def old_plus(self, name: str) -> View:
        """``I ∪ A``."""
        s = self.rel[name]
        return View(s.I.arity, (RunSet.of(s.I),)).plus(s.A_new)

    def new(self, name: str) -> View:
        """``(I \\ D) ∪ A``."""
        s = self.rel[name]
        return View(s.I.arity, (RunSet.of(s.I),)).plus(s.A_new).minus(s.gone)

    def removed(self, name: str) -> RunSet:
        """``D \\ A`` (final once the relation's stratum is done)."""
        return self.rel[name].gone

    def added(self, name: str) -> RunSet:
        """``A \\ D`` = ``A \\ I``."""
        return self.rel[name].A_new

    # --- D and A ----------------------------------------------------------------------

    def not_deleted(self, name: str, rows: RowSet) -> RowSet:
        """``rows \\ D``."""
        return self.rel[name].D.new_rows(rows)

    def overdelete(self, name: str, delta: RowSet) -> None:
        """``D := D ∪ Δ_D`` (Δ_D ⊆ I \\ D)."""
        s = self.rel[name]
        if len(delta):
            self.touched.add(name)
            s.D = s.D.append(delta)
            s.gone = s.gone.append(delta)

    def not_in_new(self, name: str, rows: RowSet) -> RowSet:
        """``rows \\ ((I \\ D) ∪ A)``."""
        s = self.rel[name]
        if len(rows) == 0:
            return rows
        n = len(rows)
        in_i = s.I.has(rows)
        out = (in_i & s.gone.contains(rows.cols, n)) | (~in_i & ~s.A_new.contains(rows.cols, n))
        return rows.select(out)

    def add(self, name: str, delta: RowSet) -> None:
        """``A := A ∪ Δ_A`` for Δ_A disjoint from the new materialisation."""
        s = self.rel[name]
        if len(delta) == 0:
            return
        self.touched.add(name)
        in_i = s.I.has(delta)
        back, fresh = delta.select(in_i), delta.select(~in_i)
        if len(back):
            s.A_old = s.A_old.append(back)
            s.gone = RunSet.of(s.gone.compact().minus(back))
        s.A_new = s.A_new.append(fresh)

    # --- counters ---------------------------------------------------------------------

    def counter(self, name: str, rows: RowSet, recursive: bool) -> Any:
        """Current ``c_r`` (``recursive``) or ``c_nr`` of rows of ``I``."""
        s = self.rel[name]
        arr = s.r if recursive else s.nr
        if arr is None:
            c = self.counters[name]
            arr = c.rec if recursive else c.nonrec
        return arr[s.I.positions(rows.cols)]

    def bump(self, name: str, rows: RowSet, counts: Any, recursive: bool, sign: int) -> None:
        """Add ``sign * counts`` to the counters of ``rows`` (``C[F] := C[F] ± 1`` of
        paper 000, once per derivation)."""
        if self.level < (2 if recursive else 1) or len(rows) == 0:
            return
        s = self.rel[name]
        in_i = s.I.has(rows)
        if bool(in_i.all()):
            inside, cin, outside = rows, counts, None
        else:
            inside, cin = rows.select(in_i), counts[in_i]
            outside = (rows.select(~in_i), counts[~in_i])
        if len(inside):
            attr = "r" if recursive else "nr"
            arr = getattr(s, attr)
            if arr is None:
                c = self.counters[name]
                arr = (c.rec if recursive else c.nonrec).copy()
                setattr(s, attr, arr)
            arr[s.I.positions(inside.cols)] += sign * cin
        if outside is not None:
            if sign < 0:
                raise AssertionError(f"decrement of a counter of a fact not in {name}")
            s.new_log.append((outside[0], outside[1], recursive))

    # --- the end of the update -------------------------------------------------------

    def commit(self, explicit_only: dict[str, RowSet] | None = None
               ) -> tuple[dict[str, RunSet], dict[str, Any]]:
        """The new materialisation ``(I \\ D) ∪ A`` and its counters, per relation.

        ``explicit_only`` maps relations that no rule derives to their new explicit facts:
        their materialisation is E itself (shared, not rebuilt) and their counters are
        c_nr = 1, c_r = 0, so a small update costs no second pass over a large EDB."""
        from .engine import Counters

        xp = self.be.xp
        store: dict[str, RunSet] = {}
        counters: dict[str, Any] = {}
        explicit_only = explicit_only or {}
        for name, e in explicit_only.items():
            store[name] = RunSet.of(e)
            if self.counters.get(name) is not None:
                counters[name] = Counters(xp.ones(len(e), dtype=INDEX),
                                          xp.zeros(len(e), dtype=INDEX))
        for name, s in self.rel.items():
            if name in explicit_only:
                continue
            c = self.counters.get(name)
            nr = s.nr if s.nr is not None else (c.nonrec if c is not None else None)
            r = s.r if s.r is not None else (c.rec if c is not None else None)
            if len(s.gone) == 0 and len(s.A_new) == 0:
                store[name] = RunSet.of(s.I)
                if c is not None:
                    counters[name] = Counters(nr, r)
                continue
            gone = s.gone.compact()
            remove = s.I.positions(gone.cols) if len(gone) else xp.zeros(0, dtype=INDEX)
            merged, pos_k, _ = s.I.replaced(remove, s.A_new.compact())
            store[name] = RunSet.of(merged)
            if c is None:
                continue
            keep = xp.ones(s.I.n, dtype=bool)
            keep[remove] = False
            if len(merged) == int(keep.sum()):  # nothing added: kept rows stay in order
                new_nr, new_r = nr[keep], r[keep]
            else:
                new_nr = xp.zeros(len(merged), dtype=INDEX)
                new_r = xp.zeros(len(merged), dtype=INDEX)
                new_nr[pos_k] = nr[keep]
                new_r[pos_k] = r[keep]
            for rows, cnt, recursive in s.new_log:
                (new_r if recursive else new_nr)[merged.positions(rows.cols)] += cnt
            counters[name] = Counters(new_nr, new_r)
        if self.level < 2:  # recursive counters are not maintained: report none
            for name, c in counters.items():
                counters[name] = Counters(c.nonrec, xp.zeros_like(c.nonrec))
        return store, counters


def multiset(be: Backend, arity: int, outs: list[RuleOutput]) -> tuple[RowSet, Any]:
    """Distinct head rows of rule outputs with their multiplicities (paper 000's ⊕)."""
    xp = be.xp
    if not outs:
        return RowSet.empty(be, arity), xp.zeros(0, dtype=INDEX)
    from .engine import concat_outputs

    n = sum(o.n for o in outs)
    cols, weights = concat_outputs(be, arity, outs)
    return RowSet.from_columns(be, cols, arity, n, return_counts=True, weights=weights)


def union_rows(be: Backend, arity: int, parts: list[RowSet]) -> RowSet:
    """The union of row sets (as one sorted run)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return RowSet.empty(be, arity)
    if len(parts) == 1:
        return parts[0]
    if arity == 0:
        return parts[0]
    cols = tuple(be.xp.concatenate([p.cols[c] for p in parts]) for c in range(arity))
    return RowSet.from_columns(be, cols, arity)


__all__ = ["UpdateState", "multiset", "union_rows"]
