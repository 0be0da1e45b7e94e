"""Fully dynamic updates, the safe part (paper 004, "FDU-lite"; brief §3.4).

Three pieces, each equal to strictly consecutive application by construction:

* :func:`compose` folds a sequence of updates ``U_1..U_n`` (encoded E⁺, E⁻ per relation)
  into one.  Per fact the *last* update mentioning it decides (order transparency: a newer
  operation is never cancelled by an older one, paper 004 §2 and transition rule 2 with
  sequence numbers); inside one update an insertion beats a deletion of the same fact, as
  :func:`~gpu_engine.maintenance.apply_update` normalises E⁻ := (E⁻ ∩ E) \\ E⁺.  The
  result is not normalised against E: ``apply_update`` does that, so deleting a fact that
  is not explicit, or inserting one that already is, is a no-op exactly as it would be
  when applied alone.  (The brief's net⁺/net⁻ recurrence over E_0 gives the same E_n.)
* :class:`RoundPoint` is what the maintenance algorithms offer their ``boundary`` hook
  between two rounds (paper 004 Algorithm 1's "computation step" is one round here).
  At a round boundary of an insertion phase (``Update.insert``, shared by DRed and
  DRed^c) ``inject`` accepts pure additions: they join the current Δ with c_nr bumped by
  one, exactly as E⁺ at the start of an update (brief §3.4 item 2: insertion is a least
  fixpoint over monotone rules, so extra seeds only enlarge it).  Additions are refused
  (the caller then waits or restarts) when they touch a fact the running update deletes,
  or a relation of a stratum that is already done.
* :class:`Restart`: raised by a hook to abort the running update; ``apply_update``
  restores the engine state taken at its start, so an aborted update leaves nothing.

The array work is host-side NumPy on purpose: encoded updates are host int64 columns
(``maintenance.Encoded``), composed before they reach a device.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .state import Encoded

Change = tuple[Encoded, Encoded]  # (insert, delete)


class Restart(Exception):
    """Abort the running update (raised by a boundary hook); the engine state is restored
    and the caller reruns the composed change."""


@dataclass
class RoundPoint:
    """A round boundary of a running update, as shown to a ``boundary`` hook.

    ``phase``: ``"start"`` (a stratum is about to be maintained), ``"overdelete"`` or
    ``"insert"``; ``stratum``: its index; ``round``: rounds of this phase so far;
    ``inject``: where additions may join the running insertion phase, a function taking
    encoded additions and returning whether it took them (all or none); ``interleave``
    (the interleaved mode, :mod:`gpu_engine.fdu_interleave`): a function taking a
    composed change (insertions, deletions) newer than the running update, returning
    whether it joined it (all or nothing)."""

    phase: str
    stratum: int
    round: int
    inject: Callable[[Encoded], bool] | None = None
    interleave: Callable[[Encoded, Encoded], bool] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Boundary = Callable[[RoundPoint], None]


def _cols(enc: Encoded, name: str, arity: int) -> tuple[list[np.ndarray], int]:
    cols, n = enc[name]
    if arity == 0:
        return [], int(n)
    out = [np.asarray(c, dtype=np.int64).reshape(-1)[:n] if n else np.zeros(0, np.int64)
           for c in cols]
    return out, int(n)


def compose(changes: Sequence[Change], arity: Mapping[str, int]) -> Change:
    """One update equal to applying ``changes`` (oldest first) one after the other.

    Per relation all mentioned rows are sorted with a priority ``2·i + [insert]`` (update
    ``i``); the row's highest priority decides: odd → inserted, even → deleted."""
    names: list[str] = []
    for ins, dele in changes:
        for n in (*ins, *dele):
            if n not in names:
                names.append(n)
    out_ins: Encoded = {}
    out_del: Encoded = {}
    for name in names:
        k = arity[name]
        parts: list[list[np.ndarray]] = []
        prios: list[np.ndarray] = []
        for i, (ins, dele) in enumerate(changes):
            for enc, bit in ((dele, 0), (ins, 1)):
                if name not in enc:
                    continue
                cols, n = _cols(enc, name, k)
                if n == 0:
                    continue
                if k == 0:  # a nullary relation: one possible fact
                    cols, n = [], 1
                parts.append(cols)
                prios.append(np.full(n, 2 * i + bit, dtype=np.int64))
        if not prios:
            continue
        prio = np.concatenate(prios)
        if k == 0:
            last = int(prio.max())
            (out_ins if last % 2 else out_del)[name] = ((), 1)
            continue
        cols = [np.concatenate([p[c] for p in parts]) for c in range(k)]
        order = np.lexsort((prio, *reversed(cols)))  # by the row, then priority
        cols = [c[order] for c in cols]
        prio = prio[order]
        last = np.ones(len(prio), dtype=bool)  # the last row of each group of equal rows
        if len(prio) > 1:
            differs = np.zeros(len(prio) - 1, dtype=bool)
            for c in cols:
                differs |= c[1:] != c[:-1]
            last[:-1] = differs
        is_ins = last & (prio % 2 == 1)
        is_del = last & (prio % 2 == 0)
        for mask, target in ((is_ins, out_ins), (is_del, out_del)):
            m = int(mask.sum())
            if m:
                target[name] = (tuple(c[mask] for c in cols), m)
    return out_ins, out_del


def size(change: Change) -> int:
    """Rows mentioned by a change (before normalisation)."""
    return sum(n for enc in change for _, n in enc.values())


def is_insertion_only(change: Change) -> bool:
    """Whether a change deletes nothing."""
    return not any(n for _, n in change[1].values())


__all__ = ["Boundary", "Change", "Encoded", "Restart", "RoundPoint", "compose", "size",
           "is_insertion_only"]


# --- the engine side: round boundaries of a running update ------------------------------


def at_boundary(u: Any, phase: str, s: Any, rnd: int,
                cand: dict[str, list[Any]] | None = None, counters: bool = False) -> None:
    """Call the update's boundary hook (if any) at a round boundary of stratum ``s``.

    ``cand`` (the insertion phase's candidate lists, keyed by the stratum's relations) makes
    the point injectable: see :func:`_inject`."""
    if phase != "start":
        u.stats.rounds += 1
    hook = getattr(u, "boundary", None)
    if hook is None:
        return
    inject = interleave = None
    if cand is not None and u.new_explicit is not None:
        def inject(enc: Encoded) -> bool:
            return _said(point, u, _inject(u, s, enc, cand, counters))
    if phase in ("start", "insert") and u.new_explicit is not None:
        def interleave(ins: Encoded, dele: Encoded) -> bool:
            from .fdu_interleave import interleave as run

            return _said(point, u, run(u, s, phase, ins, dele, cand, counters))
    point = RoundPoint(phase, s.index, rnd, inject, interleave)
    hook(point)


def _said(point: RoundPoint, u: Any, ok: bool) -> bool:
    """On a refusal, ``point.extra["refused"]``: the reason the engine gave."""
    if not ok:
        point.extra["refused"] = getattr(u, "fdu_refused", "") or "refused"
        u.fdu_refused = ""
    return ok


def _inject(u: Any, s: Any, enc: Encoded, cand: dict[str, list[Any]], counters: bool) -> bool:
    """Additions ``enc`` join the running update at a round boundary of stratum ``s``'s
    insertion phase, or are refused (nothing changed) when a row is deleted by the running
    update (E⁻ after normalisation), or is new and belongs to a stratum already done or to
    an aggregate's stratum.  Accepted rows that are not yet explicit are added to the new
    E; those of ``s`` join the candidates of the next Δ with c_nr + 1 (as line 41 of
    paper 000 Algorithm 2 does at the start), those of later strata join their E⁺."""
    from .rowset import RowSet, union_rows

    be = u.be
    stratum_of = {r: t for t in u.strata for r in t.relations}
    rows: dict[str, Any] = {}
    for name, (cols, n) in enc.items():
        if name not in u.arity:
            u.fdu_refused = f"relation {name} is not in the program"
            return False
        k = u.arity[name]
        if not n:
            continue
        dev = tuple(be.asarray(np.asarray(c, dtype=np.int64)[:n]) for c in cols)
        r = RowSet.from_columns(be, dev, k, n_rows=n)
        if len(u.e_minus[name]) and bool(u.e_minus[name].has(r).any()):
            u.fdu_refused = "an addition touches a fact the running update deletes"
            return False  # wait or restart
        r = r.select(~u.new_explicit[name].has(r))  # already explicit: nothing to do
        if not len(r):
            continue
        t = stratum_of.get(name)
        if t is None or t.index < s.index or t.aggregate is not None:
            u.fdu_refused = (f"relation {name}'s stratum is done or an aggregate's: only "
                             "the interleave policy redoes finished strata")
            return False
        rows[name] = r
    for name, r in rows.items():
        ne = u.new_explicit[name].append(r)
        u.new_explicit[name] = ne.compacted() if ne.worth_compacting() else ne
        u.e_plus[name] = union_rows(be, u.arity[name], [u.e_plus[name], r])
        u.stats.inserted += len(r)
        if name in cand:
            cand[name].append(r)
            if counters:
                u.state.bump(name, r, u.ones(r), False, +1)
    return True
