"""The local columnar engine inside the Spark backend: the hybrid finish on the driver and
the per-partition fixpoint of the decomposed path (inside ``mapInArrow`` on executors).

Both run :class:`gpu_engine.engine.Engine` over a sub-program: the relations of one stratum
plus those it reads (all declared as plain sets, so eqrel closure rules, already among the
stratum's rules, are not added twice), with the stratum's rules and no program facts.
Facts cross over as Arrow tables in the Spark types of the exchange layer (``number``
int32, ``unsigned`` int64, ``float`` float32, ``symbol`` string) and are encoded with a
symbol table: the driver's (one for the whole materialisation, so relations pulled once
stay encoded) or a fresh one per task on an executor.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from gpu_engine.kernels.backend import get_backend

from gpu_engine.engine import Engine
from gpu_engine.ir import Program, Relation, Rule

from ..dictionary import SymbolTable
from ..io import decode_column
from ..io import encode_table as io_encode_table

ARROW_TYPES: dict[str, pa.DataType] = {"number": pa.int32(), "unsigned": pa.int64(),
                                       "float": pa.float32(), "symbol": pa.string()}
OUTPUT_BATCH_ROWS = 1 << 20

Encoded = tuple[tuple[np.ndarray, ...], int]  # int64 engine columns and the row count


def sub_program(relations: Mapping[str, Relation], names: Iterable[str],
                rules: Iterable[Rule]) -> Program:
    """Relations ``names`` (as plain sets) with ``rules`` and no facts."""
    rels = {n: replace(relations[n], representation="set") for n in names}
    return Program(relations=rels, rules=list(rules), facts={})


def encode_table(table: pa.Table, rel: Relation, symbols: SymbolTable) -> Encoded:
    """Arrow columns (positional, exchange types) -> engine columns."""
    return io_encode_table(table, rel, symbols, rel.name, columns=table.column_names[:rel.arity])


def decode_arrays(cols: tuple[np.ndarray, ...], rel: Relation,
                  symbols: SymbolTable) -> list[pa.Array]:
    """Engine columns -> Arrow arrays in the exchange types."""
    return [decode_column(np.asarray(c), t, symbols).cast(ARROW_TYPES[t])
            for c, t in zip(cols, rel.types)]


def decode_table(enc: Encoded, rel: Relation, symbols: SymbolTable) -> pa.Table:
    """Engine columns -> an Arrow table with columns ``c0..`` (not for nullary relations)."""
    arrays = decode_arrays(enc[0], rel, symbols)
    return pa.table(arrays, names=[f"c{i}" for i in range(rel.arity)])


def run_local(relations: Mapping[str, Relation], rules: list[Rule],
              inputs: Mapping[str, Encoded], outputs: Iterable[str], symbols: SymbolTable,
              device: str) -> dict[str, Encoded]:
    """Materialise ``rules`` over ``inputs`` with the local engine; the ``outputs``."""
    outputs = list(outputs)
    names = dict.fromkeys([*inputs, *outputs, *_read(rules)])
    engine = Engine(sub_program(relations, names, rules), get_backend(device), symbols)
    for name, (cols, n) in inputs.items():
        engine.add_facts(name, list(cols), n_rows=n)
    engine.materialise()
    return {name: (engine.columns(name), engine.size(name)) for name in outputs}


def _read(rules: list[Rule]) -> list[str]:
    from gpu_engine.ir import Atom, Negation

    out = []
    for r in rules:
        out.append(r.head.relation)
        for lit in r.body:
            if isinstance(lit, Atom):
                out.append(lit.relation)
            elif isinstance(lit, Negation):
                out.append(lit.atom.relation)
    return out


# --- decomposed path: one fixpoint per partition ------------------------------------------


def to_ipc(table: pa.Table) -> bytes:
    """An Arrow table as IPC stream bytes (shipped to executors inside the task)."""
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


@dataclass(frozen=True)
class PartitionTask:
    """What every partition of a decomposed stratum needs: the sub-program (the stratum's
    recursive rules), the stratum's relations (tag ``i`` is ``stratum[i]``), the replicated
    relations read (Arrow IPC bytes, or None and a row count for a nullary one) and the
    device of the local engine."""

    relations: dict[str, Relation]
    rules: list[Rule]
    stratum: tuple[str, ...]
    replicated: dict[str, tuple[bytes | None, int]]
    device: str

    def column(self, i: int, j: int) -> str:
        return f"r{i}_{j}"

    def output_schema(self) -> pa.Schema:
        fields = [pa.field("tag", pa.int32())]
        for i, name in enumerate(self.stratum):
            fields += [pa.field(self.column(i, j), ARROW_TYPES[t])
                       for j, t in enumerate(self.relations[name].types)]
        return pa.schema(fields)


def partition_runner(task: PartitionTask) -> Any:
    """The function given to ``mapInArrow``: the whole fixpoint of one partition."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from run_partition(task, batches)

    return run


def run_partition(task: PartitionTask,
                  batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Seeds of one partition (tagged rows) -> the stratum's facts of that partition."""
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    symbols = SymbolTable()  # fresh per task: ids never leave the task
    inputs: dict[str, Encoded] = {}
    for name, (data, n) in task.replicated.items():
        rel = task.relations[name]
        inputs[name] = encode_table(from_ipc(data), rel, symbols) if data else ((), n)
    tag = table.column("tag")
    for i, name in enumerate(task.stratum):
        rel = task.relations[name]
        part = table.filter(pc.equal(tag, i)).select(
            [task.column(i, j) for j in range(rel.arity)])
        inputs[name] = encode_table(part, rel, symbols)
    out = run_local(task.relations, task.rules, inputs, task.stratum, symbols, task.device)
    schema = task.output_schema()
    for i, name in enumerate(task.stratum):
        cols, n = out[name]
        rel = task.relations[name]
        for lo in range(0, n, OUTPUT_BATCH_ROWS):
            piece = tuple(c[lo: lo + OUTPUT_BATCH_ROWS] for c in cols)
            m = len(piece[0])
            own = dict(zip([task.column(i, j) for j in range(rel.arity)],
                           decode_arrays(piece, rel, symbols)))
            arrays = [pa.array(np.full(m, i, dtype=np.int32))]
            arrays += [own[f.name] if f.name in own else pa.nulls(m, f.type)
                       for f in list(schema)[1:]]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
