"""An update queue with composition, injection and abort-and-restart (paper 004, FDU-lite).

Updates are submitted (:meth:`UpdateQueue.submit`) while another may be running.  The
queue's worker takes *everything* pending, composes it in order (:func:`gpu_engine.fdu.compose`:
an insertion later deleted, or a deletion later undone, costs nothing) and applies it as
one update.  While that update runs, new submissions are handled at its round boundaries
by the queue's ``policy``:

* ``"wait"``: they wait for the next composed update (strictly, no interaction).
* ``"inject"`` (default): the leading pending updates that only insert join the running
  insertion phase (``RoundPoint.inject``: their additions become part of the current Δ,
  c_nr bumped as at an update's start); everything else waits.
* ``"restart"``: as ``"inject"``, and a pending update that deletes aborts the running
  update (``fdu.Restart``: the engine state is restored, nothing is left behind), which is
  rerun as the composition of the aborted change and everything pending.  At most
  ``max_restarts`` aborts per update, then the rest waits (so every update finishes).
* ``"interleave"`` (paper 004's interleaved mode, :mod:`gpu_engine.fdu_interleave`):
  at a "start" or insertion boundary everything pending, deletions included, is composed
  and joins the running update (``RoundPoint.interleave``) without waiting.  When the
  engine refuses (a finished stratum would have to be redone) the update is aborted and
  restarted with the composition (at most ``max_restarts`` times, then the rest waits;
  ``interleave_fallback="wait"``: it waits at once).
  Round budget: at most ``max_interleaved`` steps and ``round_budget`` boundaries per
  update (and, when ``interleave_seconds`` is set, only while the update has run less
  than that: visibility comes at the commit, so a long-absorbing update delays every
  change in it); past them arrivals wait, so the running update ends (termination
  argument in the module docstring of ``fdu_interleave``).  Supported by the algorithms with round
  boundaries (``INTERLEAVE_ALGORITHMS``); the rematerialising ones are refused.

``max_batches`` (0: no bound) caps how many pending updates one composed update takes
(bounded composition: the rest forms the next update).

Admission window (``admit_seconds``; ``interleave_seconds`` is its older name, used by the
interleave policy alone).  A running update takes arrivals (injection, interleaving) and
is aborted for them (``restart``) only while it has run less than ``admit_seconds``;
past that it is closed and finishes with what it holds.  Why: a change is visible only at
its update's commit, so every batch admitted late delays all the batches already in the
update, and a restart late throws away the work done so far (a "restart storm": at 4×
overload on LUBM every arrival deletes, so an unbounded ``restart`` aborted 40 of 61
attempts).  With the window, an update's members wait at most its own composed cost plus
``admit_seconds`` of admitted work, and an aborted attempt wastes at most
``admit_seconds`` (``max_restarts`` of them per update).

``freeze_gc=True`` (opt-in: it is process-wide) collects once and moves every object alive
when the queue is made into the collector's permanent generation (``gc.freeze``), undone
by :meth:`UpdateQueue.close`.  The loaded engine is long-lived, and a full collection
traverses it: on LUBM(10) a generation-2 pass took 0.1-0.35 s, several times one batch's
service, inside the slowest 1 % of the batches; garbage made by updates is still
collected.

Every handle of a composed (or injected) update resolves together, when its change is
visible (``UpdateHandle.visible_at``); they share one :class:`UpdateStats` whose
``composed``, ``injected``, ``aborted`` and ``restarted`` say what the queue did.  An
update that fails fails every handle composed into it; the engine keeps its last state.

``background=True`` runs a worker thread (``Reasoner.submit``); ``background=False``
processes only in :meth:`UpdateQueue.drain` (the tests, the store's spool).  Reading the
engine while a background update runs is not supported: wait on the handle first.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_engine.fdu import Change, Encoded, Restart, RoundPoint, compose, is_insertion_only
from gpu_engine.stats import UpdateStats

POLICIES = ("wait", "inject", "restart", "interleave")
INTERLEAVE_ALGORITHMS = ("dred", "counting", "dredc", "bf", "bfc")

Apply = Callable[[Encoded, Encoded, Callable[[RoundPoint], None]], UpdateStats]


@dataclass
class UpdateHandle:
    """One submitted update: ``done()``, ``wait()``, and when it became visible."""

    seq: int
    change: Change
    batch_id: Any = None
    submitted_at: float = field(default_factory=time.perf_counter)
    visible_at: float | None = None
    stats: UpdateStats | None = None
    error: BaseException | None = None
    _event: threading.Event = field(default_factory=threading.Event, repr=False)

    def done(self) -> bool:
        """Whether the update was applied (its change is visible) or failed."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> UpdateStats:
        """Block until the change is visible; returns the statistics of the (composed)
        update that applied it, or raises its error."""
        if not self._event.wait(timeout):
            raise TimeoutError(f"update {self.seq} not applied after {timeout} s")
        if self.error is not None:
            raise self.error
        assert self.stats is not None
        return self.stats

    result = wait

    @property
    def delay(self) -> float | None:
        """Seconds from submission to visibility."""
        return None if self.visible_at is None else self.visible_at - self.submitted_at


class UpdateQueue:
    """Composes submitted updates and applies them with ``apply(insert, delete, hook)``."""

    def __init__(self, apply: Apply, arity: Mapping[str, int], *, policy: str = "inject",
                 max_restarts: int = 2, background: bool = True,
                 on_boundary: Callable[[RoundPoint], None] | None = None,
                 on_commit: Callable[[list[UpdateHandle], UpdateStats], None] | None = None,
                 max_interleaved: int = 16, round_budget: int = 256, max_batches: int = 0,
                 interleave_seconds: float | None = None,
                 interleave_fallback: str = "restart",
                 admit_seconds: float | None = None, freeze_gc: bool = False) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {policy!r}")
        self.apply = apply
        self.arity = dict(arity)
        self.policy = policy
        self.max_restarts = max_restarts
        self.max_interleaved = max_interleaved
        self.round_budget = round_budget
        self.max_batches = max_batches
        self.interleave_seconds = interleave_seconds
        self.admit_seconds = admit_seconds
        self.freeze_gc = bool(freeze_gc)
        if self.freeze_gc:
            gc.collect()
            gc.freeze()
        if interleave_fallback not in ("restart", "wait"):
            raise ValueError("interleave_fallback must be 'restart' or 'wait'")
        self.interleave_fallback = interleave_fallback
        self._started = 0.0
        self._interleaved = 0
        self._boundaries = 0
        self._refusals: list[str] = []
        self.background = background
        self.on_boundary = on_boundary  # called first at every boundary (tests: arrivals)
        self.on_commit = on_commit
        self.pending: list[UpdateHandle] = []
        self.history: list[UpdateStats] = []
        self._seq = 0
        self._lock = threading.Condition()
        self._running: list[UpdateHandle] | None = None
        self._restarts = 0
        self._thread: threading.Thread | None = None
        self._closed = False

    # --- submitting -------------------------------------------------------------------

    def submit(self, insert: Encoded | None = None, delete: Encoded | None = None,
               batch_id: Any = None) -> UpdateHandle:
        """Queue an update (encoded E⁺, E⁻ per relation); returns its handle."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the update queue is closed")
            h = UpdateHandle(self._seq, (dict(insert or {}), dict(delete or {})), batch_id)
            self._seq += 1
            self.pending.append(h)
            if self.background:
                self._start()
                self._lock.notify_all()
        return h

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything submitted so far is applied (``drain`` when not in the
        background)."""
        if not self.background:
            self.drain()
            return
        with self._lock:
            last = self.pending[-1] if self.pending else None
        if last is not None:
            last._event.wait(timeout)
        with self._lock:
            while self._running is not None or self.pending:
                self._lock.wait(0.05)

    def close(self) -> None:
        """Apply what is pending, then stop the worker."""
        self.flush()
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join()
        if self.freeze_gc:
            gc.unfreeze()
            self.freeze_gc = False

    # --- processing -------------------------------------------------------------------

    def drain(self) -> list[UpdateStats]:
        """Apply everything pending in the calling thread (composed updates until the queue
        is empty); returns their statistics."""
        out = []
        while True:
            with self._lock:
                if not self.pending:
                    return out
                batch = self._take()
                self._running = batch
            out.append(self._run(batch))

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._worker, name="gpu-engine-updates",
                                            daemon=True)
            self._thread.start()

    def _worker(self) -> None:
        while True:
            with self._lock:
                while not self.pending and not self._closed:
                    self._lock.wait()
                if not self.pending:
                    return
                batch = self._take()
                self._running = batch
            self._run(batch)

    def _take(self) -> list[UpdateHandle]:
        """The pending updates the next composed update takes (all, or ``max_batches``)."""
        k = len(self.pending) if self.max_batches <= 0 else self.max_batches
        batch, self.pending = self.pending[:k], self.pending[k:]
        return batch

    def _run(self, batch: list[UpdateHandle]) -> UpdateStats:
        """Apply ``batch`` (composed), restarting on ``Restart``; resolve its handles."""
        aborted = 0
        self._restarts = 0
        self._refusals = []
        interleaved = 0
        while True:
            n_before = len(batch)
            self._interleaved = 0
            self._boundaries = 0
            self._started = time.perf_counter()
            ins, dele = compose([h.change for h in batch], self.arity)
            try:
                stats = self.apply(ins, dele, self._hook)
            except Restart:
                interleaved += self._interleaved
                aborted += 1
                self._restarts += 1
                with self._lock:  # the aborted change and everything pending, in order
                    assert self._running is not None
                    batch = self._running + self.pending
                    self.pending = []
                    self._running = batch
                continue
            except BaseException as e:  # every composed handle fails; the state is restored
                with self._lock:
                    handles = list(self._running or batch)
                    self._running = None
                    self._lock.notify_all()
                for h in handles:
                    h.error = e
                    h._event.set()
                if not self.background:
                    raise
                return UpdateStats(algorithm="", device="", note=f"failed: {e}")
            break
        with self._lock:
            handles = list(self._running or batch)
            self._running = None
        stats.composed = len(handles)
        stats.injected = len(handles) - n_before
        stats.aborted = aborted
        stats.restarted = aborted
        stats.interleaved = interleaved + self._interleaved
        stats.refused = list(dict.fromkeys(self._refusals))
        if self.on_commit is not None:
            self.on_commit(handles, stats)
        now = time.perf_counter()
        for h in handles:
            h.stats = stats
            h.visible_at = now
            h._event.set()
        self.history.append(stats)
        with self._lock:
            self._lock.notify_all()
        return stats

    def _hook(self, point: RoundPoint) -> None:
        """A round boundary of the running update: arrivals (tests), then the policy."""
        if self.on_boundary is not None:
            self.on_boundary(point)
        self._boundaries += 1
        if self.policy == "wait" or not self._admitting():
            return
        with self._lock:
            if not self.pending or self._running is None:
                return
            if self.policy == "interleave":
                self._interleave(point)
                return
            refused = False
            if point.inject is not None:
                k = 0
                while k < len(self.pending) and is_insertion_only(self.pending[k].change):
                    k += 1
                if k:
                    ins, _ = compose([h.change for h in self.pending[:k]], self.arity)
                    if point.inject(ins):
                        self._running.extend(self.pending[:k])
                        del self.pending[:k]
                    else:
                        refused = True
                        self._refusals.append(point.extra.get("refused", "refused"))
            # abort for a deletion, or for additions touching what the update deletes
            if (self.policy == "restart" and self.pending
                    and (refused or not is_insertion_only(self.pending[0].change))
                    and self._restarts < self.max_restarts):
                raise Restart()


    def _admitting(self) -> bool:
        """Whether the running update is still inside its admission window."""
        limit = self.admit_seconds
        if limit is None and self.policy == "interleave":
            limit = self.interleave_seconds
        return limit is None or time.perf_counter() - self._started <= limit

    def _interleave(self, point: RoundPoint) -> None:
        """The ``interleave`` policy at a boundary (the queue's lock is held)."""
        assert self._running is not None
        if (point.interleave is None or self._interleaved >= self.max_interleaved
                or self._boundaries > self.round_budget):
            return  # an overdeletion round, or the budget is spent: arrivals wait
        k = len(self.pending)
        if self.max_batches > 0:
            k = max(0, min(k, self.max_batches - len(self._running)))
        if not k:
            return
        ins, dele = compose([h.change for h in self.pending[:k]], self.arity)
        if point.interleave(ins, dele):
            self._running.extend(self.pending[:k])
            del self.pending[:k]
            self._interleaved += 1
            return
        self._refusals.append(point.extra.get("refused", "refused"))
        if self.interleave_fallback == "restart" and self._restarts < self.max_restarts:
            raise Restart()


__all__ = ["INTERLEAVE_ALGORITHMS", "POLICIES", "UpdateHandle", "UpdateQueue"]


def reasoner_queue(reasoner: Any, *, policy: str = "inject", algorithm: str | None = None,
                   background: bool = True, max_restarts: int = 2,
                   **options: Any) -> UpdateQueue:
    """A queue applying composed updates to ``reasoner``'s engine with ``algorithm``
    (``options``: ``max_interleaved``, ``round_budget``, ``max_batches``,
    ``admit_seconds``, ``interleave_seconds``, ``interleave_fallback``, ``freeze_gc``)."""
    from gpu_engine.maintenance import apply_update, default_algorithm

    if policy == "interleave":
        alg = algorithm if algorithm not in (None, "auto") else default_algorithm(
            reasoner.engine)
        if getattr(reasoner.engine, "order_dependent", None):
            alg = "remat"
        if getattr(reasoner.engine, "equality", None) is not None:
            raise ValueError("the interleave policy does not support programs with an "
                             "equality relation (their updates are DRed≈/Remat≈)")
        if alg not in INTERLEAVE_ALGORITHMS:
            raise ValueError(f"the interleave policy needs round boundaries: {alg} has "
                             f"none; use one of {', '.join(INTERLEAVE_ALGORITHMS)}")

    def apply(ins: Encoded, dele: Encoded, hook: Callable[[RoundPoint], None]) -> UpdateStats:
        return apply_update(reasoner.engine, ins, dele, algorithm, hook)

    arity = {n: r.arity for n, r in reasoner.program.relations.items()}
    return UpdateQueue(apply, arity, policy=policy, background=background,
                       max_restarts=max_restarts, **options)


__all__ += ["reasoner_queue"]
