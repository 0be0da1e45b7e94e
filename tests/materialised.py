"""Test helpers: materialise a program on the CPU and read a relation back as a set of rows."""

from __future__ import annotations

from gpu_engine.host.reasoner import Reasoner


def run(text: str, **kw: object) -> Reasoner:
    """``text`` materialised on the CPU (``kw``: further :class:`Reasoner` options)."""
    r = Reasoner(text, device="cpu", **kw)
    r.materialise()
    return r


def rows(r: Reasoner, name: str) -> set[tuple]:
    """The rows of relation ``name`` as a set of tuples."""
    return set(map(tuple, r.relation(name).to_pandas().values.tolist()))
