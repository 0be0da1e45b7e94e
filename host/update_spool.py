"""Concurrent ``gpu-engine update`` processes on one store: a spool of pending updates that
the holder of the store's lock composes and commits (paper 004 composition, issue 17).

Layout, beside ``CURRENT`` and ``LOCK``::

    STORE/.spool/<ns>-<pid>-<rand>/        one pending update (renamed into place whole)
        insert/  delete/                   copies of the fact directories given
        options.json                       algorithm, modules, format
    STORE/.spool/<entry>.done.json         the result for a waiting process

Protocol.  A process copies its fact directories into a spool entry (written beside, then
renamed: an entry is complete or absent), then waits for the store's lock.  The lock holder
first settles entries that the current version already applied (its metadata lists their
names: a crash between commit and clean-up), then takes every pending entry in arrival
order, composes consecutive entries with the same options (:func:`gpu_engine.fdu.compose`)
and applies them, and commits *one* store version whose metadata records the names of all
entries it applied (``extra.fdu_applied``): the composed updates are committed atomically
or not at all.  It then writes each other entry's result file and removes the entries.  A
process that gets the lock and finds its result file prints it and is done.  An entry whose
facts cannot be read is left for its own process, which reports the error.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpu_engine.fdu import compose
from gpu_engine.stats import UpdateStats

SPOOL = ".spool"


def spool_dir(store: str | Path) -> Path:
    return Path(store) / SPOOL


def spool_update(store: str | Path, insert: str | None, delete: str | None,
                 options: dict[str, Any]) -> str:
    """Copy an update's fact directories into the spool; returns the entry's name."""
    d = spool_dir(store)
    tag = uuid.uuid4().hex
    tmp = d / f".tmp-{os.getpid()}-{tag}"
    for _ in range(5):  # another process may remove the empty spool folder meanwhile
        d.mkdir(exist_ok=True)
        try:
            tmp.mkdir()
            break
        except FileNotFoundError:
            continue
    try:
        for part, src in (("insert", insert), ("delete", delete)):
            if src is not None:
                if not Path(src).is_dir():
                    raise FileNotFoundError(f"{src}: no such fact directory")
                shutil.copytree(src, tmp / part)
        (tmp / "options.json").write_text(json.dumps(options))
        name = f"{time.time_ns():020d}-{os.getpid()}-{tag[:8]}"
        os.rename(tmp, d / name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return name


def withdraw(store: str | Path, name: str) -> None:
    """Remove an entry (its update failed)."""
    shutil.rmtree(spool_dir(store) / name, ignore_errors=True)
    _tidy(store)


def _tidy(store: str | Path) -> None:
    """Remove the spool folder when it is empty (a store looks as it did)."""
    try:
        os.rmdir(spool_dir(store))
    except OSError:
        pass


def take_result(store: str | Path, name: str) -> UpdateStats | None:
    """The result another process left for entry ``name`` (removed once read)."""
    f = spool_dir(store) / f"{name}.done.json"
    if not f.exists():
        return None
    d = json.loads(f.read_text())
    f.unlink()
    _tidy(store)
    return UpdateStats(**d)


def _pending(store: str | Path) -> list[str]:
    d = spool_dir(store)
    return sorted(p.name for p in d.iterdir()
                  if p.is_dir() and not p.name.startswith(".")) if d.is_dir() else []


def _finish(store: str | Path, name: str, stats: UpdateStats | None) -> None:
    d = spool_dir(store)
    if stats is not None:
        tmp = d / f".{name}.done.tmp"
        tmp.write_text(json.dumps(stats.to_dict()))
        os.replace(tmp, d / f"{name}.done.json")
    shutil.rmtree(d / name, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(item: str) -> int | None:
    """The pid in an entry's, a temporary's or a result's name."""
    parts = item.lstrip(".").split("-")
    k = 1 if parts[0] in ("tmp",) or parts[0].isdigit() and len(parts[0]) == 20 else None
    try:
        return int(parts[k]) if k is not None and len(parts) > k else None
    except ValueError:
        return None


def settle(store: str | Path, applied: list[str]) -> None:
    """Under the lock, before anything else: entries the committed version already applied
    (a crash between commit and clean-up) get their results; whatever belongs to a process
    that no longer exists is removed (an update whose process was killed before its commit
    is not applied: it never reported success)."""
    d = spool_dir(store)
    if not d.is_dir():
        return
    for p in sorted(d.iterdir()):
        pid = _owner(p.name)
        dead = pid is not None and not _alive(pid)
        if p.is_dir() and not p.name.startswith("."):
            if dead:
                shutil.rmtree(p, ignore_errors=True)
            elif p.name in applied:
                _finish(store, p.name, UpdateStats(algorithm="", device="",
                                                   note="applied by an earlier commit"))
        elif dead:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
    _tidy(store)


def _key(opts: dict[str, Any]) -> tuple[Any, Any]:
    return opts.get("algorithm"), opts.get("modules")


def _read_entry(r: Any, store: str | Path, name: str, own: str,
                read: Callable[[Any, Path, str], dict[str, Any]],
                own_dirs: tuple[str | None, str | None]) -> tuple[dict[str, Any], Any] | None:
    """(options, change) of a spooled entry; None when another process's facts cannot be
    read (left for its own process, which reports the error)."""
    d = spool_dir(store) / name
    try:
        opts = json.loads((d / "options.json").read_text())
        fmt = opts.get("format", "file")
        if name == own:
            change = tuple(read(r, Path(src), fmt) if src is not None else {}
                           for src in own_dirs)
        else:
            change = tuple(read(r, d / part, fmt) if (d / part).is_dir() else {}
                           for part in ("insert", "delete"))
    except Exception:
        if name == own:
            raise
        return None
    return opts, change


def apply_spool(r: Any, store: str | Path, own: str,
                read: Callable[[Any, Path, str], dict[str, Any]],
                own_dirs: tuple[str | None, str | None] = (None, None),
                policy: str = "wait",
                arrivals: Callable[[], None] | None = None
                ) -> tuple[UpdateStats, list[str]]:
    """Compose and apply every pending entry (``own`` included) to ``r``; returns the stats
    of the update holding ``own`` and the names applied (to record in the commit).
    ``read(r, directory, format)`` reads and encodes one fact directory; the own entry is
    read from ``own_dirs`` (its original directories: errors name the user's files).

    ``policy`` (``gpu-engine update --fdu``) says what happens to entries spooled while an
    update runs: ``wait`` (they wait for the next lock holder), or ``inject``, ``restart``,
    ``interleave``: the spool is polled at the running update's round boundaries and new
    entries with the same options join the update queue (``host/update_queue.py``) of this
    process, whose policy injects, restarts or interleaves them; what does not join runs
    next, under the same lock, and everything is committed as one version.  ``arrivals``
    (tests) is called at every boundary before the spool is polled."""
    if policy != "wait":
        return _apply_queued(r, store, own, read, own_dirs, policy, arrivals)
    from gpu_engine.maintenance import apply_update

    arity = {n: rel.arity for n, rel in r.program.relations.items()}
    groups: list[tuple[tuple[Any, Any], list[tuple[str, Any]]]] = []
    for name in _pending(store):
        got = _read_entry(r, store, name, own, read, own_dirs)
        if got is None:
            continue
        opts, change = got
        key = _key(opts)
        if groups and groups[-1][0] == key:
            groups[-1][1].append((name, change))
        else:
            groups.append((key, [(name, change)]))
    applied: list[str] = []
    own_stats: UpdateStats | None = None
    results: dict[str, UpdateStats] = {}
    for (algorithm, modules), members in groups:
        if modules and modules != r.engine.modules:
            r.engine.set_modules(modules)
        ins, dele = compose([c for _, c in members], arity)
        try:
            stats = apply_update(r.engine, ins, dele, algorithm)
        except Exception:
            if any(name == own for name, _ in members):
                raise
            continue  # the engine is restored; their own processes report the error
        stats.composed = len(members)
        for name, _ in members:
            results[name] = stats
            applied.append(name)
            if name == own:
                own_stats = stats
    r._spool_results = results
    assert own_stats is not None
    return own_stats, applied


POLL_SECONDS = 0.005  # the spool is listed at most this often during an update


class _Group:
    """Consecutive spool entries with the same options, applied through one update queue;
    entries spooled meanwhile join it at round boundaries (``poll``)."""

    def __init__(self, r: Any, store: str | Path, own: str,
                 read: Callable[[Any, Path, str], dict[str, Any]],
                 own_dirs: tuple[str | None, str | None], seen: set[str]) -> None:
        self.r, self.store, self.own, self.read, self.own_dirs = r, store, own, read, own_dirs
        self.seen = seen
        self.key: tuple[Any, Any] | None = None
        self.closed = False
        self.last = 0.0
        self.queue: Any = None
        self.handles: list[tuple[str, Any]] = []
        self.arrivals: Callable[[], None] | None = None
        self.policy = "inject"

    def take(self, names: list[str]) -> None:
        """Read and submit ``names`` (spool order) until one has other options."""
        for name in names:
            got = _read_entry(self.r, self.store, name, self.own, self.read, self.own_dirs)
            if got is None:
                self.seen.add(name)
                continue
            opts, change = got
            if self.key is None:
                self.key = _key(opts)
                self.start()
            elif _key(opts) != self.key:
                self.closed = True  # it and what follows wait for the next group
                return
            self.seen.add(name)
            self.handles.append((name, self.queue.submit(*change, batch_id=name)))

    def start(self) -> None:
        from .update_queue import reasoner_queue

        assert self.key is not None
        algorithm, modules = self.key
        if modules and modules != self.r.engine.modules:
            self.r.engine.set_modules(modules)
        self.queue = reasoner_queue(self.r, policy=self.policy, algorithm=algorithm,
                                    background=False)
        self.queue.on_boundary = self.poll

    def poll(self, _point: Any) -> None:
        """A round boundary of the running update: new spool entries join the queue."""
        if self.arrivals is not None:
            self.arrivals()
        now = time.perf_counter()
        if self.closed or now - self.last < POLL_SECONDS:
            return
        self.last = now
        new = [n for n in _pending(self.store) if n not in self.seen]
        if new:
            self.take(new)


def _apply_queued(r: Any, store: str | Path, own: str,
                  read: Callable[[Any, Path, str], dict[str, Any]],
                  own_dirs: tuple[str | None, str | None], policy: str,
                  arrivals: Callable[[], None] | None) -> tuple[UpdateStats, list[str]]:
    """``apply_spool`` with an update queue: entries spooled during an update join it by
    ``policy``.  Entries are taken in spool order; one whose options differ from the
    running group's closes the group (it and everything after it form the next group), so
    the entries are applied in spool order, with the result of applying them one by one."""
    seen: set[str] = set()
    applied: list[str] = []
    results: dict[str, UpdateStats] = {}
    own_stats: UpdateStats | None = None
    while True:
        names = [n for n in _pending(store) if n not in seen]
        if not names:
            break
        g = _Group(r, store, own, read, own_dirs, seen)
        g.policy, g.arrivals = policy, arrivals
        g.take(names)
        if g.queue is None:
            continue
        while g.queue.pending:
            try:
                g.queue.drain()
            except Exception:
                if any(name == own and h.error is not None for name, h in g.handles):
                    raise
                # the engine is restored; their own processes report the error
        for name, h in g.handles:
            if h.error is None and h.stats is not None:
                results[name] = h.stats
                applied.append(name)
                if name == own:
                    own_stats = h.stats
    r._spool_results = results
    assert own_stats is not None
    return own_stats, applied


def finish_all(r: Any, store: str | Path, own: str) -> None:
    """After the commit: results for the other processes, entries removed."""
    for name, stats in getattr(r, "_spool_results", {}).items():
        _finish(store, name, None if name == own else stats)
    _tidy(store)


__all__ = ["apply_spool", "finish_all", "settle", "spool_update", "take_result", "withdraw"]
