"""The Spark backend on a standalone cluster whose executors do not have this package.

The test starts a standalone master and one worker (PySpark's own jars through
``bin/spark-class`` of the pip-installed ``pyspark``) on 127.0.0.1 with ephemeral ports,
and gives the executors a Python that has only ``numpy`` and ``pyarrow`` (no
``gpu_engine``, no Numba, no SciPy): a venv linking just those two from this
environment (tests/isolated_python.py).  A driver process runs programs with
``backend="spark"`` on the decomposed path (the local engine inside ``mapInArrow`` on the
executors) against ``spark://127.0.0.1:PORT`` and compares every relation with the local
engine; a probe task reports where the executors imported ``gpu_engine`` from (the zip
the backend shipped, host/spark/ship.py).  Master, worker, executors and driver are
killed at the end whatever happens.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import spark_missing
from isolated_python import python_without_package

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
START_SECONDS = 90  # for master and worker to come up
DRIVER_SECONDS = 300

DRIVER = r"""
import json, sys
import pyarrow as pa
from gpu_engine import Reasoner
from gpu_engine.host.spark import adapter as sa

master, executor_python = sys.argv[1], sys.argv[2]
spark = sa.local_session(master, app="gpu-engine-cluster-test", conf={
    "spark.pyspark.python": executor_python,
    "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
    "spark.executor.memory": "512m", "spark.cores.max": "2",
    "spark.task.maxFailures": "1"})


def probe(batches):
    import importlib.util, sys
    import pyarrow as pa
    import gpu_engine
    from gpu_engine.host.spark import backend_local  # noqa: F401 - what the tasks import
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({
        "where": [gpu_engine.__file__], "python": [sys.executable],
        "numba": [importlib.util.find_spec("numba") is not None]})


schema = "where string, python string, numba boolean"
seen = sa.to_arrow(sa.map_in_arrow(spark.range(0, 4, 1, 2), probe, schema)).to_pylist()

PROGRAM = '''
.decl e(a:symbol, b:symbol)
.decl blocked(a:symbol)
.decl w(a:number, b:number)
.decl p(a:symbol, b:symbol)
.decl d(a:number, b:number)
.decl far(a:symbol)
p(x, y) :- e(x, y), !blocked(y).
p(x, z) :- p(x, y), e(y, z), !blocked(z).
d(x, y) :- w(x, y).
d(x, z) :- d(x, y), w(y, z), z < 40.
far(x) :- p(x, _), !p(_, x).
'''
n = 30
edges = {"a": [f"v{i}" for i in range(n)] + ["v3", "v7"],
         "b": [f"v{(i + 1) % n}" for i in range(n)] + ["v20", "v1"]}
facts = {"e": pa.table(edges), "blocked": pa.table({"a": ["v13"]}),
         "w": pa.table({"a": pa.array(range(50), pa.int32()),
                        "b": pa.array([(3 * i + 1) % 50 for i in range(50)], pa.int32())})}
local = Reasoner(PROGRAM, device="cpu")
remote = Reasoner(PROGRAM, backend="spark", spark=spark, device="cpu", local_finish_rows=0)
for name, table in facts.items():
    local.add_facts(name, table)
    remote.add_facts(name, table)
local.materialise()
remote.materialise()
rows = lambda t: sorted(map(repr, zip(*(c.to_pylist() for c in t.columns))))
same = {name: rows(local.relation(name)) == rows(remote.relation(name))
        for name in ("p", "d", "far")}
print(json.dumps({"probe": seen, "same": same, "sizes": remote.relation_sizes(),
                  "paths": [s["path"] for s in remote.runner.stats["strata"]]}))
spark.stop()
"""


def _pyspark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _start(cmd: list[str], log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes], deadline: float) -> str:
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        found = re.search(pattern, text)
        if found:
            return found.group(1) if found.groups() else found.group(0)
        if proc.poll() is not None:
            break
        time.sleep(0.25)
    raise AssertionError(f"{log.name}: no {pattern!r}\n" + log.read_text(errors="replace")[-3000:])


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """End ``proc`` and everything it started (its own process group)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # executors and Python workers of the group
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[str]:
    """A standalone master and worker on 127.0.0.1 (ephemeral ports); the master URL."""
    why = spark_missing()
    if why:
        pytest.skip(why)
    home = _pyspark_home()
    spark_class = home / "bin" / "spark-class"
    if not spark_class.is_file():
        pytest.skip(f"no {spark_class}")
    conf = tmp_path / "standalone.conf"
    conf.write_text("spark.master.rest.enabled false\nspark.ui.enabled false\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOCAL_DIRS=str(tmp_path), SPARK_WORKER_DIR=str(tmp_path / "work"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        deadline = time.monotonic() + START_SECONDS
        master = _start([str(spark_class), "org.apache.spark.deploy.master.Master",
                         "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                         "--properties-file", str(conf)], tmp_path / "master.log", env, tmp_path)
        procs.append(master)
        url = _wait_for(tmp_path / "master.log", r"Starting Spark master at (spark://\S+)",
                        master, deadline)
        worker = _start([str(spark_class), "org.apache.spark.deploy.worker.Worker", url,
                         "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                         "--cores", "2", "--memory", "1g", "--work-dir", str(tmp_path / "work"),
                         "--properties-file", str(conf)], tmp_path / "worker.log", env, tmp_path)
        procs.append(worker)
        _wait_for(tmp_path / "worker.log", r"Successfully registered with master", worker,
                  deadline)
        yield url
    finally:
        for proc in reversed(procs):
            _kill(proc)


def test_backend_on_a_cluster_without_the_package(cluster: str, tmp_path: Path) -> None:
    executor_python = python_without_package(tmp_path / "executor-venv", ("numpy", "pyarrow"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_PYTHON", None)
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, cluster, str(executor_python)],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = driver.communicate(timeout=DRIVER_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(driver.pid, signal.SIGKILL)
        out, err = driver.communicate()
        raise AssertionError("the driver did not finish in time\n" + err[-3000:]) from None
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert driver.returncode == 0, err[-5000:]
    res = json.loads(out.strip().splitlines()[-1])
    for seen in res["probe"]:
        # the executors ran the venv's Python and imported the shipped zip
        assert Path(seen["python"]).parent == executor_python.parent
        assert re.search(r"gpu_engine-[^/]+\.zip/gpu_engine/__init__\.py$", seen["where"]), seen
        assert not seen["numba"]
    assert res["same"] == {"p": True, "d": True, "far": True}
    assert res["sizes"]["p"] > 0 and res["sizes"]["d"] > 0
    assert "decomposed" in res["paths"]


CONNECT = r"""
import json
import pyarrow as pa
from pyspark.sql import SparkSession
from gpu_engine import Reasoner
from gpu_engine.host.spark import adapter as sa

spark = SparkSession.builder.remote("local[2]").getOrCreate()
PROGRAM = '''
.decl e(a:symbol, b:symbol)
.decl p(a:symbol, b:symbol)
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), e(y, z).
'''
e = pa.table({"a": [f"v{i}" for i in range(20)], "b": [f"v{(i + 1) % 20}" for i in range(20)]})
local = Reasoner(PROGRAM, device="cpu")
remote = Reasoner(PROGRAM, backend="spark", spark=spark, device="cpu", local_finish_rows=0)
local.add_facts("e", e)
remote.add_facts("e", e)
local.materialise()
remote.materialise()
rows = lambda t: sorted(map(repr, zip(*(c.to_pylist() for c in t.columns))))


def probe(batches):
    import gpu_engine
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"where": [gpu_engine.__file__]})


where = sa.to_arrow(sa.map_in_arrow(spark.range(0, 2, 1, 1), probe, "where string"))
print(json.dumps({"same": rows(local.relation("p")) == rows(remote.relation("p")),
                  "paths": [s["path"] for s in remote.runner.stats["strata"]],
                  "where": where.column(0).to_pylist()}))
spark.stop()
"""


def test_backend_on_spark_connect_ships_the_package_as_an_artifact(tmp_path: Path) -> None:
    """A Spark Connect session gets the zip through ``addArtifacts(pyfile=True)``: its
    Python workers (a Python without the package) import the shipped code (a local Connect
    server, in a subprocess)."""
    why = spark_missing()
    if why:
        pytest.skip(why)
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    # workers without the package, nor Numba (its kernels would compile for a minute)
    workers = python_without_package(tmp_path / "worker-venv", ("numpy", "pyarrow"))
    # SPARK_TESTING: an ephemeral port for the local Connect server (test_spark_exchange)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": str(workers),
           "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_TESTING": "1"}
    proc = subprocess.run([sys.executable, "-c", CONNECT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=DRIVER_SECONDS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["same"] and "decomposed" in res["paths"]
    assert all(re.search(r"gpu_engine-[^/]+\.zip/gpu_engine/__init__\.py$", w)
               for w in res["where"]), res["where"]
