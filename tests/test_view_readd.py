"""Regression: a fact deleted and derived again in the same update must become visible again.

``View.plus`` used to add such rows as a new included run while the exclude set that hid
them kept hiding them, so DRed^c-MOD's insertion loop (``SeminaiveModule.add``) found them
fresh forever (fuzz-fdu seed 759: an ``eqrel`` program never finished a deletion)."""

from __future__ import annotations

import numpy as np
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.kernels.backend import get_backend
from time_limits import time_limit

from gpu_engine.rowset import RowSet
from gpu_engine.runs import RunSet
from gpu_engine.views import View

PROGRAM = """
.decl edge(a0:number, a1:number) eqrel
.decl path(a0:symbol)
.decl Reach(a0:number)
.output edge
.output path
.output Reach
edge(-2, x0) :- edge(x0, x1), !Reach(x2), edge(x2, x2).
Reach(7) :- Reach(x0), Reach(x1), Reach(x0), x0 = 3, x1 != 5.
edge((10 ^ 1), ((4 * x0) % 7)) :- !Reach(x0), x0 < 20, edge(x0, x0), edge(x0, x0), Reach(x0), x0 > -20.
path("c") :- !Reach(x1), path(s0), x1 = 10, s0 != "a", path(s0).
"""

FACTS = {"edge": [(-2, 5), (2, 3), (4, -1)], "path": [("x y",), ("b",)],
         "Reach": [(0,), (1,), (7,), (-2,), (3,)]}

UPDATES = [
    ({}, {"Reach": [(6,), (-2,)]}),
    ({"edge": [(2, 3)], "Reach": [(7,), (-1,)]}, {}),
    ({}, {"path": [("b",), ("x y",), ("7",)], "Reach": [(-1,), (2,), (0,)]}),
    ({}, {"Reach": [(1,), (7,)]}),
    ({"path": [("a",), ("7",)], "edge": [(4, -1), (2, 3)]}, {}),
    ({}, {"Reach": [(-1,), (2,), (3,)], "path": [("7",)]}),
    ({"Reach": [(7,), (-1,), (1,)]}, {"path": [("a",), ("7",), ("x y",)]}),
    ({"path": [("b",), ("d",)]}, {}),
    ({}, {"edge": [(-2, 5), (4, 7), (0, 0), (-1, -2)]}),
]


def _reasoner() -> Reasoner:
    r = Reasoner(PROGRAM, device="cpu", counting=True, modules="auto")
    for name, rows in FACTS.items():
        r.add_facts(name, rows)
    r.materialise()
    return r


def test_dredc_mod_eqrel_deletion_finishes_and_equals_remat() -> None:
    got, want = _reasoner(), _reasoner()
    for ins, dele in UPDATES:
        with time_limit(60, "a DRed^c-MOD update"):  # it never finished before the fix
            got.update(insert=ins, delete=dele, algorithm="dredc")
        want.update(insert=ins, delete=dele, algorithm="remat")
    for name in ("edge", "path", "Reach"):
        rows = sorted(map(str, got.relation(name).to_pylist()))
        assert rows == sorted(map(str, want.relation(name).to_pylist())), name


def test_plus_unhides_excluded_rows() -> None:
    be = get_backend("cpu")

    def rs(*rows: tuple[int, int]) -> RunSet:
        cols = tuple(np.array(c, dtype=np.int64) for c in zip(*rows))
        return RunSet.of(RowSet.from_columns(be, cols, 2))

    base = View.of(rs((1, 1), (2, 2), (3, 3))).minus(rs((2, 2), (3, 3)))
    view = base.plus(rs((2, 2), (9, 9)))
    probe = RowSet.from_columns(be, (np.array([1, 2, 3, 9]), np.array([1, 2, 3, 9])), 2)
    inside = np.zeros(4, dtype=bool)
    for inc in view.include:
        inside |= inc.has(probe)
    for ex in view.exclude:
        inside &= ~ex.has(probe)
    assert inside.tolist() == [True, True, False, True]
    assert len(view) == 3
