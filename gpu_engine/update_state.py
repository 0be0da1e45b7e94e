"""The working state of one incremental update (paper 000's D, A, E⁻, E⁺ and counters).

Per relation the update keeps the old materialisation ``I`` (one sorted run, never
modified while the update runs) and, as run sets disjoint from each other:

* ``D``: overdeleted facts (a subset of ``I``);
* ``A_old``: added facts that were in ``I`` (necessarily in ``D``: rederived);
* ``A_new``: added facts that were not in ``I``;
* ``gone`` = ``D \\ A``: facts of ``I`` that are not in the new materialisation.

so that the versions the algorithms read are views over stored runs:
``I``, ``I \\ (D \\ A)``, ``I ∪ A`` and ``(I \\ D) ∪ A``.  Counter changes of facts in
``I`` are kept as a small overlay (distinct rows with their summed increments) over the
engine's counters, increments of facts outside ``I`` as a log.

:meth:`UpdateState.commit` makes the new relations and counters at the cost of the
change, not of the relations: ``D \\ A`` becomes a tombstone set of ``I``, ``A \\ I`` a
new run (``runs.RunSet``), and the overlay is added to the counters in place, as the
last step (nothing of the engine changes before it, so an update that fails before its
commit leaves the engine as it was).  A relation whose tombstones and small runs have
grown past an eighth of its largest run is rewritten as one run then (amortised O(1) per
change).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_engine.kernels.backend import INDEX, Backend

from . import counters as C
from .rowset import RowSet
from .rule_eval import RuleOutput, concat_outputs
from .runs import RunSet
from .views import View


@dataclass
class RelState:
    I: RunSet  # noqa: E741 - the paper's name
    D: RunSet
    A_old: RunSet
    A_new: RunSet
    gone: RunSet
    # counter increments of facts of I so far: (distinct rows, summed increments), for
    # c_nr (key False) and c_r (key True)
    overlay: dict[bool, tuple[RowSet, Any]] = field(default_factory=dict)
    new_log: list[tuple[RowSet, Any, bool]] = field(default_factory=list)
    # the last membership test in I (rows, mask): I does not change during the update,
    # and a round often tests the rows it has just counted
    memo: tuple[RowSet, Any] | None = None
    # where the rows of the last counter look-up lie in I (rows, counters.locate's
    # answer): the commit adds the overlay of the same rows at the same positions
    located: tuple[RowSet, list[tuple[int, Any, Any]]] | None = None

    def in_old(self, rows: RowSet) -> Any:
        """Mask over ``rows``: which are facts of ``I``."""
        m = self.memo
        if m is not None and m[0] is rows:
            return m[1]
        mask = self.I.has(rows)
        self.memo = (rows, mask)
        return mask


class _Relations(dict):
    """The :class:`RelState` of each relation, made on first use: an update pays for
    the relations it reads, not for every relation of the program."""

    def __init__(self, store: dict[str, RunSet]) -> None:
        super().__init__()
        self.store = store
        self.empty: dict[int, RunSet] = {}  # one per arity, shared (run sets are immutable)

    def __missing__(self, name: str) -> RelState:
        runs = self.store[name]
        e = self.empty.get(runs.arity)
        if e is None:
            e = self.empty[runs.arity] = RunSet.empty(runs.be, runs.arity)
        s = self[name] = RelState(runs, e, e, e, e)
        return s

    def __contains__(self, name: object) -> bool:
        return name in self.store


class UpdateState:
    """D, A and counters of every relation during one update."""

    def __init__(self, be: Backend, store: dict[str, RunSet], counters: dict[str, Any],
                 level: int) -> None:
        self.be = be
        self.level = level
        self.counters = counters
        self.store = store  # the old materialisation, I per relation
        self.rel: dict[str, RelState] = _Relations(store)  # (made on first use)
        self.touched: set[str] = set()  # relations whose D or A is not empty
        # D \ A and A \ I of the relations where they are not empty (kept in step by
        # note_change: the algorithms ask for them per stratum)
        self.gone_of: dict[str, RunSet] = {}
        self.new_of: dict[str, RunSet] = {}

    # --- views (paper 000's versions of the materialisation) ----------------------------

    def old(self, name: str) -> View:
        """``I``."""
        s = self.rel[name]
        return View.of(s.I)

    def mid(self, name: str) -> View:
        """``I \\ (D \\ A)``."""
        s = self.rel[name]
        return View.of(s.I).minus(s.gone)

    def old_plus(self, name: str) -> View:
        """``I ∪ A``."""
        s = self.rel[name]
        return View.of(s.I).plus(s.A_new)

    def new(self, name: str) -> View:
        """``(I \\ D) ∪ A``."""
        s = self.rel[name]
        return View.of(s.I).plus(s.A_new).minus(s.gone)

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
            self.note_change(name)

    def not_in_new(self, name: str, rows: RowSet) -> RowSet:
        """``rows \\ ((I \\ D) ∪ A)``."""
        s = self.rel[name]
        if len(rows) == 0:
            return rows
        n = len(rows)
        in_i = s.in_old(rows)
        out = (in_i & s.gone.contains(rows.cols, n)) | (~in_i & ~s.A_new.contains(rows.cols, n))
        got = rows.select(out)
        if got is not rows:
            s.memo = (got, in_i[out])  # add() tests the same rows next
        return got

    def add(self, name: str, delta: RowSet) -> None:
        """``A := A ∪ Δ_A`` for Δ_A disjoint from the new materialisation."""
        s = self.rel[name]
        if len(delta) == 0:
            return
        self.touched.add(name)
        in_i = s.in_old(delta)
        back, fresh = delta.select(in_i), delta.select(~in_i)
        if len(back):
            s.A_old = s.A_old.append(back)
            s.gone = RunSet.of(s.gone.compact().minus(back))
        s.A_new = s.A_new.append(fresh)
        self.note_change(name)

    def add_new(self, name: str, delta: RowSet) -> None:
        """``A := A ∪ Δ_A`` for Δ_A of facts not in ``I`` (nor in ``A``) that have one
        derivation each by a non-recursive rule (``C_nr = 1``, ``C_r = 0``): no test of
        membership in ``I``, the counters those of :meth:`bump` for new facts."""
        s = self.rel[name]
        if len(delta) == 0:
            return
        self.touched.add(name)
        s.A_new = s.A_new.append(delta)
        if self.level >= 1:
            s.new_log.append((delta, self.be.xp.ones(len(delta), dtype=INDEX), False))
        self.note_change(name)

    def note_change(self, name: str) -> None:
        """Keep :attr:`gone_of` and :attr:`new_of` in step with the relation's ``gone``
        and ``A_new`` (after any change of them)."""
        s = self.rel[name]
        for sets, part in ((self.gone_of, s.gone), (self.new_of, s.A_new)):
            if len(part):
                sets[name] = part
            else:
                sets.pop(name, None)

    # --- counters ---------------------------------------------------------------------

    def counter(self, name: str, rows: RowSet, recursive: bool) -> Any:
        """Current ``c_r`` (``recursive``) or ``c_nr`` of rows of ``I``."""
        s = self.rel[name]
        c = self.counters[name]
        loc = C.locate(s.I, rows)
        s.located = (rows, loc)
        out = C.gather(c.rec if recursive else c.nonrec, loc, len(rows), self.be)
        ov = s.overlay.get(recursive)
        if ov is not None and ov[0] is rows:  # the rows just bumped: aligned already
            out += ov[1]
        elif ov is not None and len(rows):
            orows, inc = ov
            hit = orows.has(rows)
            if bool(hit.any()):
                idx = self.be.xp.flatnonzero(hit)
                if rows.arity:
                    out[idx] += inc[orows.positions(tuple(col[idx] for col in rows.cols))]
                else:
                    out[idx] += inc[0]
        return out

    def bump(self, name: str, rows: RowSet, counts: Any, recursive: bool, sign: int) -> None:
        """Add ``sign * counts`` to the counters of ``rows`` (``C[F] := C[F] ± 1`` of
        paper 000, once per derivation)."""
        if self.level < (2 if recursive else 1) or len(rows) == 0:
            return
        s = self.rel[name]
        if sign < 0:  # decrements are of facts of I (instances over I): no look-up
            inside, cin, outside = rows, counts, None
        elif bool((in_i := s.in_old(rows)).all()):
            inside, cin, outside = rows, counts, None
        else:
            inside, cin = rows.select(in_i), counts[in_i]
            outside = (rows.select(~in_i), counts[~in_i])
        if len(inside):
            s.overlay[recursive] = _accumulate(self.be, inside.arity, s.overlay.get(recursive),
                                               inside, sign * cin)
        if outside is not None:
            if sign < 0:
                raise AssertionError(f"decrement of a counter of a fact not in {name}")
            s.new_log.append((outside[0], outside[1], recursive))

    # --- the end of the update -------------------------------------------------------

    def commit(self, explicit_only: dict[str, RunSet] | None = None
               ) -> tuple[dict[str, RunSet], dict[str, Any]]:
        """The new materialisation ``(I \\ D) ∪ A`` and its counters, per relation.

        ``explicit_only`` maps relations that no rule derives to their new explicit facts:
        their materialisation is E itself (shared) and their counters are c_nr = 1,
        c_r = 0 (new arrays only for new runs), so a small update costs no pass over a
        large EDB.  Counter arrays of runs that stay are updated in place, last."""
        xp = self.be.xp
        store: dict[str, RunSet] = {}
        counters: dict[str, Any] = {}
        in_place: list[tuple[str, bool, RowSet, Any]] = []
        explicit_only = explicit_only or {}
        for name, e in explicit_only.items():
            store[name] = e
            c = self.counters.get(name)
            if c is not None:
                old = {id(run): k for k, run in enumerate(self.store[name].runs)}
                nr, r = [], []
                for run in e.runs:
                    k = old.get(id(run))
                    nr.append(c.nonrec[k] if k is not None else xp.ones(len(run), dtype=INDEX))
                    r.append(c.rec[k] if k is not None else xp.zeros(len(run), dtype=INDEX))
                counters[name] = C.Counters(tuple(nr), tuple(r))
        made = self.rel
        for name, runs in self.store.items():
            if name in explicit_only:
                continue
            c = self.counters.get(name)
            s = dict.get(made, name)
            if s is None or (len(s.gone) == 0 and len(s.A_new) == 0 and not s.overlay):
                store[name] = runs  # (a relation never read is as it was)
                if c is not None:
                    counters[name] = c
                continue
            rs = s.I.without(s.gone.compact()) if len(s.gone) else s.I
            if c is None:
                store[name] = rs.append(s.A_new.compact()) if len(s.A_new) else rs
                continue
            cc = c
            if len(s.A_new):
                fresh = s.A_new.compact()
                nr = xp.zeros(len(fresh), dtype=INDEX)
                r = xp.zeros(len(fresh), dtype=INDEX)
                for rows, cnt, recursive in s.new_log:
                    if rows is fresh:  # (UpdateState.add_new's rows: aligned)
                        (r if recursive else nr)[:] += cnt
                        continue
                    live = fresh.has(rows)  # (a fact retracted by an interleaved update)
                    if not bool(live.all()):
                        rows, cnt = rows.select(live), cnt[live]
                    at = (fresh.positions(rows.cols) if rows.arity
                          else xp.zeros(len(rows), dtype=INDEX))
                    (r if recursive else nr)[at] += cnt
                # (counters of tombstoned rows that come back are overwritten in place:
                # meaningless entries of the old state)
                rs, cc = C.append_counted(rs, c, fresh, nr, r)
            for recursive, (orows, inc) in s.overlay.items():  # facts of I: in place
                # (rows of D \ A among them stay in their runs under a tombstone, where
                # their counters are meaningless until they come back and are overwritten:
                # they are updated with the others rather than sifted out)
                if len(orows):
                    in_place.append((name, recursive, orows, inc, _located(s, orows, rs)))
            store[name] = rs
            counters[name] = cc
        for name, recursive, rows, inc, loc in in_place:  # the last step: nothing fails after it
            c = counters[name]
            parts = C.add_at(store[name], c.rec if recursive else c.nonrec, rows, inc, loc)
            counters[name] = (C.Counters(c.nonrec, parts) if recursive
                              else C.Counters(parts, c.rec))
        for name in list(store):
            if store[name] is not self.store.get(name) and store[name].worth_compacting():
                if name in counters:
                    store[name], counters[name] = C.compacted(store[name], counters[name])
                else:
                    store[name] = store[name].compacted()
        if self.level < 2:  # recursive counters are not maintained: report none
            for name, c in counters.items():
                if any(bool(a.any()) for a in c.rec):
                    counters[name] = c.without_rec(self.be)
        return store, counters


def _located(s: RelState, rows: RowSet, new: RunSet) -> list[tuple[int, Any, Any]] | None:
    """Where ``rows`` lie in the relation's new runs, when the last counter look-up was
    of these rows and the runs holding them are still there, at the same places."""
    got = s.located
    if got is None or got[0] is not rows:
        return None
    old_runs, new_runs = s.I.runs, new.runs
    for i, _, _ in got[1]:
        if i >= len(new_runs) or new_runs[i] is not old_runs[i]:
            return None
    return got[1]


def _accumulate(be: Backend, arity: int, acc: tuple[RowSet, Any] | None, rows: RowSet,
                inc: Any) -> tuple[RowSet, Any]:
    """Distinct rows with summed increments: ``acc`` plus (``rows``, ``inc``)."""
    xp = be.xp
    if (acc is None or not len(acc[0])) and arity:  # a row set: distinct and sorted already
        return rows, xp.asarray(inc, dtype=INDEX)
    if acc is not None and len(acc[0]):
        cols = tuple(xp.concatenate([a, b]) for a, b in zip(acc[0].cols, rows.cols))
        w = xp.concatenate([acc[1], inc])
        n = len(acc[0]) + len(rows)
    else:
        cols, w, n = rows.cols, inc, len(rows)
    if arity == 0:
        return RowSet(be, (), xp.zeros(1, dtype=INDEX), None, 1), xp.asarray(
            [int(w.sum())], dtype=INDEX)
    return RowSet.from_columns(be, cols, arity, n, return_counts=True,
                               weights=xp.asarray(w, dtype=INDEX))


def multiset(be: Backend, arity: int, outs: list[RuleOutput]) -> tuple[RowSet, Any]:
    """Distinct head rows of rule outputs with their multiplicities (paper 000's ⊕)."""
    xp = be.xp
    if not outs:
        return RowSet.empty(be, arity), xp.zeros(0, dtype=INDEX)
    if len(outs) == 1 and outs[0].rows is not None and outs[0].weights is None:
        return outs[0].rows, xp.ones(outs[0].n, dtype=INDEX)  # distinct and sorted already
    n = sum(o.n for o in outs)
    cols, weights = concat_outputs(be, arity, outs)
    return RowSet.from_columns(be, cols, arity, n, return_counts=True, weights=weights)


__all__ = ["UpdateState", "multiset"]
