"""Host side of equality by rewriting (gpu_engine.equality): the classes as a table and
as an output file (``--no-expand``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from .reasoner import Reasoner


def classes_table(r: Reasoner) -> pa.Table:
    """``representative``, ``member`` (decoded) for every class of two or more members."""
    if r.program.equality is None:
        return pa.table({"representative": pa.array([], pa.string()),
                         "member": pa.array([], pa.string())})
    rep, member = r.engine.classes()  # type: ignore[attr-defined]
    dec = r.symbols.decode_many
    return pa.table({"representative": pa.array(dec(np.asarray(rep)), pa.string()),
                     "member": pa.array(dec(np.asarray(member)), pa.string())})


def classes_output(r: Reasoner, output: str) -> tuple[str, str, Any, str | None]:
    """The classes as an output entry of ``cli._render_outputs``: ``<rel>.classes.csv``
    (tab-separated representative and member), or text for ``-D -``."""
    eq = r.program.equality
    assert eq is not None
    t = classes_table(r)
    text = "".join(f"{a}\t{b}\n" for a, b in zip(t.column(0).to_pylist(),
                                                  t.column(1).to_pylist()))
    name = f"{eq.relation}.classes"
    if output == "-":
        return name, "-", text, None
    return name, f"{name}.csv", text.encode(), None


def expanded_batches(r: Reasoner, name: str, chunk_rows: int = 1 << 22
                     ) -> Any:
    """The expansion of ``name`` as decoded Arrow record batches of about ``chunk_rows``
    rows each, unsorted (grouped by rewritten row), without holding the whole expansion
    (an iterator of ``pyarrow.RecordBatch``)."""
    from .io import decode_table

    rel = r._relation(name)
    r._ensure()
    if r.program.equality is None:
        yield from r.relation(name).to_batches()
        return
    for cols in r.engine.expanded_chunks(name, chunk_rows):  # type: ignore[attr-defined]
        yield from decode_table(cols, rel, r.symbols).to_batches()
