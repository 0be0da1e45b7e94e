"""Out of device memory: recognising it, and injecting it for tests and campaigns.

**Real device out-of-memory errors** (:func:`is_device_oom`):

* ``cupy.cuda.memory.OutOfMemoryError`` (a ``MemoryError``): raised by CuPy's memory pool
  when ``cudaMalloc`` still fails after the pool has released its cached free blocks and
  run the garbage collector, or when an allocation would pass the pool's limit
  (``cupy.get_default_memory_pool().set_limit(size=...)`` or ``CUPY_GPU_MEMORY_LIMIT``);
* ``cupy_backends.cuda.api.runtime.CUDARuntimeError`` with status
  ``cudaErrorMemoryAllocation`` and ``cupy_backends.cuda.api.driver.CUDADriverError`` with
  ``CUDA_ERROR_OUT_OF_MEMORY`` (allocations that bypass the pool), and a ``MemoryError``
  whose text names one of those (a C++ ``bad_alloc`` from Thrust or CUB);
* Numba's ``numba.cuda.cudadrv.driver.CudaAPIError`` with code ``CUDA_ERROR_OUT_OF_MEMORY``
  (kernels launched through Numba);
* :class:`DeviceOutOfMemory` and :class:`InjectedDeviceOOM` (below).

They are recognised by class name and status code, so this module imports neither CuPy
nor Numba.  A ``MemoryError`` of NumPy is *host* memory: never a device OOM.

**Injection** (``GPU_ENGINE_FAKE_OOM``, or :meth:`FaultPlan.parse` assigned to
``Backend.faults``): a comma-separated plan of

* ``join=N``: the N-th join chunk (the expansion of a join's output) raises;
* ``alloc=N``: the N-th large allocation raises (on the NumPy backend: join outputs and
  sorts, counted by the kernels through ``Backend.charge``; on CuPy: every allocation,
  through an allocator installed in front of the default memory pool);
* ``rows=M``: every join chunk of more than M rows raises (a device with room for join
  chunks of M rows: the retries with smaller chunks get through);
* ``repeat=K``: a counted fault (``join``/``alloc``) also fires at the next K-1 events
  (default 1; ``repeat=0``: at every event from then on, so retries fail too).

A backend with a plan counts as a device even when it is the NumPy one ("the NumPy
backend standing in for the device"): the engine retries with smaller chunks and falls
back to a fresh CPU backend (without a plan) exactly as it would from a GPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

ENV = "GPU_ENGINE_FAKE_OOM"
# the smallest join chunk (rows) that the retries halve down to before falling back
FLOOR_ENV = "GPU_ENGINE_OOM_FLOOR_ROWS"
DEFAULT_FLOOR_ROWS = 1 << 16

_CUDA_OOM_CODES = {2}  # cudaErrorMemoryAllocation == CUDA_ERROR_OUT_OF_MEMORY == 2


class DeviceOutOfMemory(MemoryError):
    """The device ran out of memory (a CUDA error that is no ``MemoryError``, rewrapped by
    :func:`as_memory_error`, so that ``except MemoryError`` sees every out-of-memory)."""


class InjectedDeviceOOM(DeviceOutOfMemory):
    """A device out-of-memory raised by a :class:`FaultPlan`."""


def as_memory_error(exc: BaseException) -> MemoryError:
    """``exc`` (a device OOM) as a ``MemoryError``."""
    return exc if isinstance(exc, MemoryError) else DeviceOutOfMemory(describe(exc))


def floor_rows() -> int:
    """The smallest join chunk the retries try (``GPU_ENGINE_OOM_FLOOR_ROWS``)."""
    try:
        return max(1, int(os.environ.get(FLOOR_ENV) or DEFAULT_FLOOR_ROWS))
    except ValueError:
        return DEFAULT_FLOOR_ROWS


def is_device_oom(exc: BaseException) -> bool:
    """Whether ``exc`` says the *device* ran out of memory (see the module docstring)."""
    if isinstance(exc, DeviceOutOfMemory):
        return True
    cls = type(exc)
    name, module = cls.__name__, cls.__module__ or ""
    if name == "OutOfMemoryError" and module.startswith("cupy"):
        return True
    if isinstance(exc, MemoryError) and any(  # std::bad_alloc of Thrust/CUB temporaries,
            k in str(exc) for k in ("cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY")):
        return True  # as Cython translates it
    if name in ("CUDARuntimeError", "CUDADriverError", "CudaAPIError"):
        code = getattr(exc, "status", getattr(exc, "code", None))
        try:
            if code is not None and int(code) in _CUDA_OOM_CODES:
                return True
        except (TypeError, ValueError):
            pass
        text = str(exc)
        return "OUT_OF_MEMORY" in text or "MemoryAllocation" in text
    return False


def describe(exc: BaseException) -> str:
    """One line for a device OOM (CuPy's message names the bytes it asked for)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


@dataclass
class FaultPlan:
    """Injected device out-of-memory faults (see the module docstring)."""

    join_at: int = 0
    alloc_at: int = 0
    max_rows: int = 0
    repeat: int = 1
    spec: str = ""
    joins: int = 0  # join chunks seen
    allocs: int = 0  # counted allocations seen
    fired: int = 0  # faults raised

    @staticmethod
    def parse(spec: str) -> FaultPlan:
        """``join=N``, ``alloc=N``, ``rows=M``, ``repeat=K``, comma-separated."""
        plan = FaultPlan(spec=spec)
        keys = {"join": "join_at", "alloc": "alloc_at", "rows": "max_rows", "repeat": "repeat"}
        for part in spec.replace(";", ",").split(","):
            part = part.strip()
            if not part:
                continue
            key, _, value = part.partition("=")
            if key.strip() not in keys:
                raise ValueError(f"{ENV}: unknown fault {key.strip()!r} in {spec!r} "
                                 "(join=N, alloc=N, rows=M, repeat=K)")
            try:
                n = int(value)
            except ValueError:
                raise ValueError(f"{ENV}: {part!r} needs a whole number") from None
            if n < 0:
                raise ValueError(f"{ENV}: {part!r} must not be negative")
            setattr(plan, keys[key.strip()], n)
        return plan

    @staticmethod
    def from_env() -> FaultPlan | None:
        """The plan of ``GPU_ENGINE_FAKE_OOM`` (None when unset); the latest one made is
        also :func:`last_plan` (campaigns read its counts after an in-process run)."""
        global _LAST
        spec = os.environ.get(ENV, "").strip()
        if not spec:
            return None
        _LAST = FaultPlan.parse(spec)
        return _LAST

    def _due(self, seen: int, at: int) -> bool:
        if not at or seen < at:
            return False
        return self.repeat == 0 or seen < at + self.repeat

    def event(self, rows: int, join: bool, count_alloc: bool = True) -> None:
        """One join chunk (``join``) or allocation of ``rows`` int64 rows: raise when due."""
        why = ""
        if join:
            self.joins += 1
            if self._due(self.joins, self.join_at):
                why = f"join chunk {self.joins}"
        if count_alloc and not join:
            self.allocs += 1
            if self._due(self.allocs, self.alloc_at):
                why = f"allocation {self.allocs}"
        if not why and join and self.max_rows and rows > self.max_rows:
            why = f"{rows:,} rows > rows={self.max_rows:,}"
        if why:
            self.fired += 1
            raise InjectedDeviceOOM(f"injected by {ENV}={self.spec} ({why})")


_LAST: FaultPlan | None = None


def last_plan() -> FaultPlan | None:
    """The plan most recently made from ``GPU_ENGINE_FAKE_OOM`` in this process."""
    return _LAST


def install_cupy_allocator(plan: FaultPlan, cupy: Any) -> None:
    """Count every CuPy allocation against ``plan`` (``alloc=N``), in front of the default
    memory pool (``cupy.cuda.set_allocator``)."""
    pool = cupy.get_default_memory_pool()

    def malloc(size: int) -> Any:
        plan.event(size // 8, join=False)
        return pool.malloc(size)

    cupy.cuda.set_allocator(malloc)


def free_device_memory(xp: Any) -> None:
    """Release what the CuPy pools cache (device and pinned host memory); a no-op on NumPy.
    CuPy's pool already does this (and collects garbage) before it reports an OOM; here it
    also returns the blocks freed since (the failed attempt's arrays, freed by reference
    counting once its exception is gone), so the retry or the CPU path starts clean."""
    get_pool = getattr(xp, "get_default_memory_pool", None)
    if get_pool is None:
        return
    try:
        get_pool().free_all_blocks()
        xp.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:  # noqa: BLE001 - freeing is best effort, never a new failure
        pass
