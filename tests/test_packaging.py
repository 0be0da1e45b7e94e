"""The installed package: importable under its own name beside another ``kernels``.

``kernels`` is also the name of a package on the package index; ours installs as
``gpu_engine.kernels`` (and ``gpu_engine.host``), so both can live in one environment.
This test builds our wheel, installs it next to that other distribution into an empty
folder, and runs the demo from there (no source tree on the path).  It needs the package
index (to build the wheel in isolation and to fetch the other package): without it the
test is skipped, saying so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OTHER = "kernels==0.17.2"  # the other distribution of that name (Hugging Face's)


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True,
                          timeout=600)


def _offline(proc: subprocess.CompletedProcess[str]) -> bool:
    text = (proc.stdout + proc.stderr).lower()
    return any(s in text for s in ("could not find a version", "no matching distribution",
                                   "connection", "network", "temporary failure"))


@pytest.mark.slow
def test_wheel_installs_beside_the_other_kernels_and_runs_the_demo(
        tmp_path: Path, project_wheel: tuple[Path | None, str]) -> None:
    site = tmp_path / "site"
    ours, why = project_wheel
    if ours is None:
        offline = any(w in why.lower() for w in ("could not find a version", "no matching",
                                                 "connection", "network", "temporary failure"))
        assert offline, why
        pytest.skip(why)
    got = _pip("install", "-q", "--no-deps", "--target", str(site), str(ours), OTHER)
    if got.returncode and _offline(got):
        pytest.skip(f"no package index to fetch {OTHER}")
    assert got.returncode == 0, got.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": str(site), "GPU_ENGINE_DISABLE_GPU": "1"}
    where = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u, gpu_engine.kernels as k; "
         "print(k.__file__); print(u.find_spec('kernels').origin)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    ours_at, other_at = where.stdout.split()
    assert Path(ours_at).parent == site / "gpu_engine" / "kernels"
    assert Path(other_at).parent == site / "kernels"
    demo = subprocess.run([sys.executable, "-m", "gpu_engine.host.demo"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "matches the reference" in demo.stdout
