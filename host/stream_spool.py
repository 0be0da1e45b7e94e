"""Coalescing micro-batches into a store (the streaming sink's ``coalesce=True``, issue 17).

A micro-batch is checked (its operations and types, encoded into a scratch dictionary),
written durably to ``STORE/.stream/<batch id>.arrow`` (beside, fsynced, renamed) and the
call returns: the batch is accepted.  A background worker takes *all* spooled batches, in
batch-id order, under the store's lock, composes them (:func:`gpu_engine.fdu.compose`: a
fact added and removed within the spooled batches costs nothing), applies the composition
as one update and commits one store version whose metadata records the batch ids
(``extra.stream_batch``: the highest, ``extra.stream_batches``: all), then removes the
spooled files.  Exactly once: a batch id at or below the committed one, or already spooled,
is skipped; a crash leaves spooled batches on disk, applied by the next worker (whichever
sink instance starts next on the store); the commit of the ids and of the change is one
rename.  A failure in the worker is raised by the next ``apply``/``flush``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from gpu_engine.fdu import compose
from gpu_engine.stats import UpdateStats

STREAM = ".stream"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CoalescingStore:
    """The spool and worker of one sink; ``apply`` accepts, ``flush`` waits."""

    def __init__(self, store_dir: Path, relation: str, op_column: str | None,
                 algorithm: str | None, device: str,
                 on_commit: Callable[[Any, list[int], UpdateStats, list[str]], None]) -> None:
        self.store_dir = Path(store_dir)
        self.relation = relation
        self.op_column = op_column
        self.algorithm = algorithm
        self.device = device
        self.on_commit = on_commit  # (reasoner, batch ids, stats, changed outputs)
        self.outputs: list[str] | None = None
        self.reasoner: Any = None
        self._version: str | None = None
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._error: BaseException | None = None
        self.arrived: dict[int, float] = {}  # batch id -> perf_counter at acceptance
        self.visible: dict[int, float] = {}  # batch id -> perf_counter at commit

    @property
    def spool(self) -> Path:
        return self.store_dir / STREAM

    def _spooled(self) -> list[int]:
        if not self.spool.is_dir():
            return []
        return sorted(int(p.stem) for p in self.spool.iterdir()
                      if p.suffix == ".arrow" and p.stem.isdigit())

    # --- the caller's side ------------------------------------------------------------

    def apply(self, table: pa.Table, batch_id: int, check: Callable[[pa.Table], None],
              committed: Callable[[], int | None]) -> bool:
        """Spool one micro-batch; False when it was already committed or spooled."""
        self._raise()
        last = committed()
        if (last is not None and batch_id <= last) or batch_id in self._spooled():
            return False
        check(table)  # a bad batch raises here, before it is accepted
        self.spool.mkdir(exist_ok=True)
        tmp = self.spool / f".tmp-{batch_id}-{os.getpid()}"
        with pa.OSFile(str(tmp), "wb") as f, ipc.new_file(f, table.schema) as w:
            w.write_table(table)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.spool / f"{batch_id:020d}.arrow")
        _fsync_dir(self.spool)
        with self._cv:
            self.arrived[batch_id] = time.perf_counter()
            self._start()
            self._cv.notify_all()
        return True

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every spooled batch is committed; raises a worker failure."""
        with self._cv:
            self._start()
            self._cv.notify_all()
            deadline = None if timeout is None else time.monotonic() + timeout
            while (self._busy or self._spooled()) and self._error is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("spooled micro-batches not committed in time")
                self._cv.wait(0.05 if left is None else min(left, 0.05))
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            e, self._error = self._error, None
            raise e

    # --- the worker -------------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, daemon=True,
                                            name="gpu-engine-stream")
            self._thread.start()

    def _work(self) -> None:
        while True:
            with self._cv:
                if not self._spooled() or self._error is not None:
                    self._busy = False
                    self._cv.notify_all()
                    return
                self._busy = True
            try:
                self._commit_spooled()
            except BaseException as e:  # noqa: BLE001 - raised by the next apply/flush
                with self._cv:
                    self._error = e
                    self._busy = False
                    self.reasoner = None  # reopen the committed version next time
                    self._cv.notify_all()
                return

    def _commit_spooled(self) -> None:
        from .spark.exchange import _signature, output_relations, split_changes
        from .store import current_version, open_store, read_meta, save_store, store_lock

        with store_lock(self.store_dir):
            last = read_meta(self.store_dir).get("extra", {}).get("stream_batch")
            ids = self._spooled()
            for b in [b for b in ids if last is not None and b <= int(last)]:
                (self.spool / f"{b:020d}.arrow").unlink()  # committed before a crash
            ids = [b for b in ids if last is None or b > int(last)]
            if not ids:
                return
            cur = current_version(self.store_dir)
            if self.reasoner is None or self._version != cur:
                self.reasoner = open_store(self.store_dir, device=self.device)
            r = self.reasoner
            names = self.outputs if self.outputs is not None else output_relations(r)
            before = {n: (r.engine.size(n), _signature(r, n)) for n in names}
            changes = []
            for b in ids:
                with pa.memory_map(str(self.spool / f"{b:020d}.arrow")) as src:
                    table = ipc.open_file(src).read_all()
                ins, dele = split_changes(r, self.relation, table, self.op_column,
                                          f"micro-batch {b} for {self.relation}")
                changes.append(({self.relation: ins} if ins else {},
                                {self.relation: dele} if dele else {}))
            arity = {n: rel.arity for n, rel in r.program.relations.items()}
            ins, dele = compose(changes, arity)
            try:
                stats = r.update_encoded(ins, dele, self.algorithm)
                stats.composed = len(ids)
                self._version = save_store(r, self.store_dir, extra={
                    "stream_batch": ids[-1], "stream_batches": ids})
            except BaseException:
                self.reasoner = None
                raise
            for b in ids:
                (self.spool / f"{b:020d}.arrow").unlink()
        now = time.perf_counter()
        with self._cv:
            for b in ids:
                self.visible[b] = now
        changed = [n for n in names if (r.engine.size(n), _signature(r, n)) != before[n]]
        self.on_commit(r, ids, stats, changed)


__all__ = ["CoalescingStore", "STREAM"]
