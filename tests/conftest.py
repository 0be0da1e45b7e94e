"""Shared test configuration: devices, the shared data folder, hypothesis profiles.

- ``device`` fixture: "cpu" always, "gpu" (marked ``gpu``) when CuPy sees a CUDA device.
  ``GPU_ENGINE_TEST_DEVICE=gpu`` runs only on the GPU (and fails loudly without one);
  ``GPU_ENGINE_TEST_DEVICE=cpu`` runs only on the CPU.
- ``shared_dir`` fixture: ``../shared`` next to the repository root, else ``$GPU_ENGINE_SHARED``.
- Hypothesis profiles: ``ci`` (default) and ``fuzz`` (when ``FUZZ_EXAMPLES`` is set).
- ``GPU_ENGINE_UPDATE_BUDGET=0``: the default update algorithm runs without its time budget.
- Under pytest-xdist (`make test`), the Spark tests share one worker (one JVM at a time).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

TESTS_DIR = Path(__file__).resolve().parent
# Test helpers (reference.py, generators.py, dc_adapter.py) import each other by module name,
# whatever pytest's import mode or the presence of a tests/__init__.py.
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

CI_EXAMPLES = 150

# The default update algorithm's time budget (gpu_engine.maintenance) is off in the tests, so
# that what an update does never depends on the machine's load; tests/test_default_budget.py
# turns it on.  Set here, so that the CLI's subprocesses inherit it too.
os.environ.setdefault("GPU_ENGINE_UPDATE_BUDGET", "0")

# `make test` (and CI) draws the same examples every run, so that a landing never depends on
# luck; campaigns draw new ones each time (below).
settings.register_profile(
    "ci",
    max_examples=CI_EXAMPLES,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES") or CI_EXAMPLES),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# A campaign (FUZZ_EXAMPLES, HD_EXAMPLES, FDU_EXAMPLES, ... set) draws new examples each run.
CAMPAIGN = any(v for k, v in os.environ.items() if k.endswith("_EXAMPLES"))
settings.load_profile("fuzz" if CAMPAIGN else "ci")


@functools.cache
def gpu_available() -> bool:
    """Whether CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount()) > 0
    except Exception:  # noqa: BLE001 - any failure means "no usable GPU"
        return False


def device_params() -> list[object]:
    """The devices the suite runs on (see the module docstring)."""
    gpu = pytest.param("gpu", marks=pytest.mark.gpu, id="gpu")
    only = os.environ.get("GPU_ENGINE_TEST_DEVICE", "").strip().lower()
    if only == "gpu":
        return [gpu]
    if only == "cpu" or not gpu_available():
        return [pytest.param("cpu", id="cpu")]
    return [pytest.param("cpu", id="cpu"), gpu]


@pytest.fixture(scope="session", params=device_params())
def device(request: pytest.FixtureRequest) -> str:
    """The engine device under test: "cpu" or "gpu"."""
    if request.param == "gpu" and not gpu_available():
        pytest.fail("GPU_ENGINE_TEST_DEVICE=gpu, but CuPy finds no CUDA device")
    return str(request.param)


@pytest.fixture(autouse=True)
def _small_kernels_per_test():
    """Every test starts with the compiled small-input kernels off and the process's
    update count at zero (``kernels/cpu_small.py``): they come on as they would in a
    fresh process (a large materialisation, or the eighth update within the test), so
    that which path a test takes does not depend on the tests run before it."""
    from gpu_engine.kernels import cpu_small

    cpu_small._on, cpu_small._updates = False, 0
    yield
    cpu_small._on, cpu_small._updates = False, 0


def locate_shared_dir() -> Path | None:
    """``../shared`` next to the repository root, else ``$GPU_ENGINE_SHARED``; None if absent."""
    sibling = TESTS_DIR.parents[1] / "shared"
    if sibling.is_dir():
        return sibling
    env = os.environ.get("GPU_ENGINE_SHARED")
    if env and Path(env).is_dir():
        return Path(env)
    return None


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared data folder (conformance cases, benchmark data); skips when absent."""
    found = locate_shared_dir()
    if found is None:
        pytest.skip(
            f"shared data folder not found: neither {TESTS_DIR.parents[1] / 'shared'} "
            "nor $GPU_ENGINE_SHARED exists"
        )
    return found


@functools.cache
def spark_missing() -> str | None:
    """Why no local Spark session can start here (None when one can)."""
    import shutil

    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "PySpark is not installed (pip install 'gpu-engine[spark]')"
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "no Java runtime for Spark (java not on PATH, JAVA_HOME unset)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``), the tests that use the session's Spark and those
    of the ``test_spark_*`` files (local clusters and Spark Connect servers) run on one
    worker (``--dist loadgroup``): one JVM at a time."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) \
                or item.path.name.startswith("test_spark_"):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole run (``local[2]``, UI off, 4 shuffle
    partitions, loopback binding, Python workers on this interpreter); marked tests only."""
    why = spark_missing()
    if why:
        pytest.skip(why)
    from gpu_engine.host.spark.adapter import local_session

    session = local_session("local[2]", app="gpu-engine-tests", shuffle_partitions=4)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def project_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path | None, str]:
    """This project's wheel, built once per run (``pip wheel`` in build isolation, which
    needs the package index): ``(path, "")``, or ``(None, why not)``."""
    import subprocess

    root = TESTS_DIR.parent
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                            str(out), str(root)], capture_output=True, text=True, timeout=600)
    found = sorted(out.glob("gpu_engine-*.whl"))
    if built.returncode or not found:
        return None, "could not build the wheel (no package index?): " + built.stderr[-500:]
    return found[0], ""
