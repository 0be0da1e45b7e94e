"""Array backends: NumPy on the CPU, CuPy on a CUDA GPU, behind one small interface.

Every kernel takes a :class:`Backend` and calls ``be.xp`` (the array module) for its
array operations, so the same code runs on both.  Where the GPU wants a different
algorithm, the kernel branches on ``be.is_gpu``.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from . import oom
from .oom import DeviceOutOfMemory, FaultPlan, InjectedDeviceOOM, is_device_oom

INDEX = np.int64  # dtype of every column, key and index array


@functools.cache
def gpu_available() -> bool:
    """True when CuPy imports and finds at least one CUDA device."""
    if os.environ.get("GPU_ENGINE_DISABLE_GPU"):
        return False
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount()) > 0
    except Exception:
        return False


@dataclass
class Backend:
    """The active array module and its memory budget (in rows of int64 per join chunk)."""

    name: str
    xp: ModuleType
    join_chunk_rows: int = 1 << 25
    _stats: dict[str, Any] = field(default_factory=dict)
    # injected device out-of-memory faults (kernels.oom; GPU_ENGINE_FAKE_OOM): with a plan,
    # the NumPy backend stands in for a device that can run out of memory
    faults: FaultPlan | None = None

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    @property
    def is_device(self) -> bool:
        """Memory that can run out while the host's has room: the GPU, or a backend with
        injected faults standing in for it.  Its out-of-memory errors are retried with
        smaller join chunks and then sent to the CPU path (``gpu_engine.fallback``)."""
        return self.is_gpu or self.faults is not None

    def charge(self, rows: int, join: bool = False) -> None:
        """A join chunk (``join``) or a large allocation of ``rows`` int64 rows is about to
        be made: the fault-injection hook (nothing without a plan).  On CuPy, allocations
        are counted by the allocator instead (``oom.install_cupy_allocator``)."""
        if self.faults is not None and (join or not self.is_gpu):
            self.faults.event(rows, join)

    def free_memory(self) -> None:
        """Return cached device memory (CuPy's pools) after an out-of-memory error."""
        oom.free_device_memory(self.xp)

    def asarray(self, a: Any, dtype: Any = INDEX) -> Any:
        """Move ``a`` to this backend as a contiguous array of ``dtype``."""
        if self.is_gpu:
            return self.xp.ascontiguousarray(self.xp.asarray(a, dtype=dtype))
        return np.ascontiguousarray(np.asarray(a, dtype=dtype))

    def to_host(self, a: Any) -> np.ndarray:
        """Copy an array of this backend to a NumPy array."""
        if self.is_gpu and not isinstance(a, np.ndarray):
            return self.xp.asnumpy(a)
        return np.asarray(a)

    def empty(self, n: int = 0, dtype: Any = INDEX) -> Any:
        return self.xp.empty(n, dtype=dtype)

    def bincount(self, x: Any, minlength: int = 0) -> Any:
        """``xp.bincount`` (int64), also of an empty array: CuPy before PR #9951 takes
        the maximum of its input first and raises on an empty one."""
        if len(x) == 0:
            return self.xp.zeros(minlength, dtype=INDEX)
        return self.xp.bincount(x, minlength=minlength).astype(INDEX, copy=False)

    def scalar(self, a: Any) -> int:
        """A Python int from a 0-d array (a device-to-host sync on the GPU)."""
        return int(a)

    def peak_memory_bytes(self) -> int:
        """Peak device memory held by the CuPy pool (0 on the CPU)."""
        if not self.is_gpu:
            return 0
        pool = self.xp.get_default_memory_pool()
        return int(pool.total_bytes())


def get_backend(device: str = "auto", join_chunk_rows: int | None = None) -> Backend:
    """Return the backend for ``device`` in ``auto | cpu | gpu``.

    ``auto`` picks the GPU when CuPy finds one; ``gpu`` raises when there is none.
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"unknown device {device!r}: expected auto, cpu or gpu")
    use_gpu = device == "gpu" or (device == "auto" and gpu_available())
    if device == "gpu" and not gpu_available():
        raise RuntimeError("device='gpu' requested but CuPy finds no CUDA GPU")
    chunk = join_chunk_rows or int(os.environ.get("GPU_ENGINE_JOIN_CHUNK_ROWS", 1 << 25))
    faults = FaultPlan.from_env()
    if use_gpu:
        import cupy

        if faults is not None and faults.alloc_at:
            oom.install_cupy_allocator(faults, cupy)
        return Backend("gpu", cupy, chunk, faults=faults)
    return Backend("cpu", np, chunk, faults=faults)


def cpu_fallback(be: Backend) -> Backend:
    """The CPU backend that takes over from device ``be`` after it ran out of memory: NumPy,
    the configured join chunk (not the halved one), no injected faults."""
    chunk = int(os.environ.get("GPU_ENGINE_JOIN_CHUNK_ROWS", 1 << 25))
    return Backend("cpu", np, chunk)


__all__ = ["INDEX", "Backend", "DeviceOutOfMemory", "FaultPlan", "InjectedDeviceOOM",
           "cpu_fallback", "get_backend", "gpu_available", "is_device_oom"]
