"""LUBM(1) through the engine equals the reference least models (computed with clingo).

Uses ``examples/lubm/lubm1.nt.gz`` and ``examples/lubm/LUBM_*.dl`` from the repo, and the
reference counts/models in ``shared/bench-data/lubm/expected/`` (skipped when shared/ is
absent). The device comes from ``GPU_ENGINE_TEST_DEVICE`` (default ``cpu``).
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from gpu_engine.host.ntriples import read_ntriples

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
EXPECTED = SHARED / "bench-data" / "lubm" / "expected"
EXAMPLES = REPO_ROOT / "examples" / "lubm"
DEVICE = os.environ.get("GPU_ENGINE_TEST_DEVICE", "cpu")

pytestmark = pytest.mark.skipif(not EXPECTED.exists(), reason="shared/bench-data absent")


def _counts(name: str) -> dict[str, int]:
    out = {}
    for line in (EXPECTED / f"{name}.lubm1.counts.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            pred, n = line.split("\t")[:2]
            out[pred] = int(n)
    return out


@pytest.fixture(scope="module")
def triples() -> pa.Table:
    return read_ntriples(EXAMPLES / "lubm1.nt.gz")


@pytest.fixture(scope="module", params=["LUBM_L", "LUBM_LE", "LUBM_U"])
def materialised(request: pytest.FixtureRequest, triples: pa.Table):
    from gpu_engine import Reasoner

    name = request.param
    r = Reasoner(EXAMPLES / f"{name}.dl", device=DEVICE if DEVICE != "auto" else "auto")
    r.add_facts("TE", triples)
    r.materialise()
    return name, r


def test_counts_per_predicate(materialised) -> None:
    name, r = materialised
    expected = _counts(name)
    sizes = r.relation_sizes()
    got = {p: n for p, n in sizes.items() if p != "TE"}
    total = expected.pop("TOTAL")
    assert sizes["TE"] == 100_543
    mismatches = {p: (got.get(p), n) for p, n in expected.items() if got.get(p) != n}
    assert not mismatches, f"{name}: (got, expected) {mismatches}"
    assert set(got) == set(expected)
    assert sum(got.values()) == total


def test_full_model(materialised) -> None:
    name, r = materialised
    model = EXPECTED / f"{name}.lubm1.model.tsv.gz"
    if not model.exists():
        pytest.skip(f"{model.name} absent")
    with gzip.open(model, "rt", encoding="utf-8") as fh:
        expected = fh.read().splitlines()
    lines: list[str] = []
    for pred in r.relation_sizes():
        if pred == "TE":
            continue
        table = r.relation(pred)
        if table.num_rows == 0:
            continue
        cols = [table.column(i) for i in range(table.num_columns)]
        joined = pc.binary_join_element_wise(pred, *cols, "\t")
        lines.extend(joined.to_pylist())
    assert len(lines) == len(expected)
    missing = set(expected) - set(lines)
    extra = set(lines) - set(expected)
    assert not missing and not extra, (sorted(missing)[:5], sorted(extra)[:5])
