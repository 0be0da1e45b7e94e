"""``benchmarks/device_check.sh``, the prepared run on a bare GPU machine, kept working:
two of its steps on the CuPy stand-in (its dry-run mode), so that a renamed option or
module shows here rather than in the few minutes a lent GPU gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_device_check_dry_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "STEPS": "demo chain", "STANDIN": "1",
           "WORKERS": "0", "PY": sys.executable}
    env.pop("PYTHONPATH", None)
    subprocess.run(["bash", str(ROOT / "benchmarks" / "device_check.sh"), "120"], env=env,
                   check=True, capture_output=True, timeout=300)
    steps = dict(line.split("\t")[:2] for line in
                 (out / "steps.tsv").read_text().splitlines())
    log = (out / "log.txt").read_text()
    assert steps == {"demo": "0", "chain": "0"}, log[-3000:]
    assert "OK: 121,512 IDB facts" in log
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert lines and all(x["device"] == "gpu" for x in lines if "device" in x), lines[:2]
