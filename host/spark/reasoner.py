"""``Reasoner(..., backend="spark", spark=session)``: the facade over the Spark backend.

Facts stay in Spark: DataFrames given to :meth:`load_spark` are checked (names, types,
nulls, ranges: one aggregation job) and kept lazily; ``.input`` Parquet datasets are read
by Spark itself; facts given as arrays or tables are shipped once as Arrow.  The
materialisation is :class:`host.spark.backend.SparkRunner`'s, one DataFrame per relation;
:meth:`to_spark` hands those DataFrames out as they are, :meth:`relation` brings one to the
driver as Arrow.  Updates rematerialise (the Spark backend keeps no derivation counters):
``algorithm`` may be ``None`` or ``"remat"``.  Persistent stores need the local engine.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import reduce
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from gpu_engine.ir import ProgramError
from gpu_engine.stats import MaterialisationStats, StratumStats, UpdateStats

from ..dictionary import SymbolTable
from ..io import FactsError, decode_table, portable_table, render_rows, table_columns, unique_names
from ..lang.dl_source import ProgramSource
from ..lang.parser import parse_program
from ..reasoner import Reasoner, _path_in, _source
from . import adapter as sa

_RANGES = {"number": (-(1 << 31), (1 << 31) - 1), "unsigned": (0, (1 << 32) - 1)}


class SparkReasoner(Reasoner):
    """A :class:`Reasoner` whose facts and materialisation live in Spark."""

    def __init__(self, program: str | Path, device: str = "auto", *, backend: str = "spark",
                 spark: Any = None, counting: bool = False, progress: Any = None,
                 symbols: SymbolTable | None = None, modules: str = "auto",
                 decompose: str = "auto", local_finish_rows: int = 2_000_000,
                 checkpoint_every: int = 1, compact_every: int = 4,
                 word_size: int | None = None, libraries: Any = (),
                 library_dirs: Any = ()) -> None:
        from .backend import SparkRunner

        if word_size is None and isinstance(program, ProgramSource):
            word_size = program.options.word_size
        if word_size not in (None, 32):
            raise ProgramError("the Spark backend has 32-bit words only "
                               "(word_size=64 needs the local engine)")
        self.word_size = 32
        if counting:
            raise ProgramError("the Spark backend keeps no derivation counters "
                               "(counting=True needs the local engine)")
        self.source_text, self.source_name = _source(program)
        self.parsed = parse_program(self.source_text, self.source_name)
        self.program = self.parsed.program
        if self.program.equality is not None:
            raise ProgramError(f"the Spark backend does not rewrite equality (relation "
                               f"'{self.program.equality.relation}'): use the local engine",
                               self.program.equality.loc)
        for decl in self.program.functors.values():  # (libraries: the local engine's)
            raise ProgramError(f"the Spark backend does not call user-defined functors "
                               f"('{decl.name}'): use the local engine", decl.loc)
        self.symbols = symbols if symbols is not None else SymbolTable()
        self.spark = spark if spark is not None else sa.local_session()
        self.runner = SparkRunner(self.program, self.spark, decompose=decompose,
                                  local_finish_rows=local_finish_rows,
                                  checkpoint_every=checkpoint_every,
                                  compact_every=compact_every, device=device, progress=progress)
        self.stats: MaterialisationStats | None = None
        self.load_seconds = 0.0
        self._inputs: dict[str, list[Any]] = {}
        self._results: dict[str, Any] | None = None

    # --- properties --------------------------------------------------------------------

    @property
    def device(self) -> str:
        return "spark"

    @property
    def engine(self) -> Any:  # the local engine's API is not available here
        raise ProgramError("the Spark backend has no local engine (use relation(), "
                           "relation_sizes() and to_spark())")

    # --- facts in ----------------------------------------------------------------------

    def add_facts(self, relation: str, data: Any) -> int:
        """Add facts given as an array or table (shipped to Spark as Arrow); returns the
        number of rows given (duplicates are removed when materialising)."""
        rel = self._relation(relation)
        enc, n = self._encode(relation, data)
        self._add_frame(relation, self._frame_of_encoded(rel, enc, n))
        return n

    def load_spark(self, relation: str, df: Any, columns: list[str] | None = None) -> int:
        """Add a DataFrame of facts (checked; kept in Spark).  Returns its row count."""
        t0 = time.perf_counter()
        checked, n = self._checked(relation, df, columns)
        self._add_frame(relation, checked)
        self.load_seconds += time.perf_counter() - t0
        return n

    def load_spark_inputs(self, frames: Mapping[str, Any]) -> dict[str, int]:
        checked = {name: self._checked(name, df) for name, df in frames.items()}
        for name, (df, _) in checked.items():
            self._add_frame(name, df)
        return {name: n for name, (_, n) in checked.items()}

    def load_inputs(self, facts_dir: str | Path = ".", default_io: str = "file") -> None:
        """``.input`` relations: Parquet read by Spark, text files read here and shipped."""
        t0 = time.perf_counter()
        frames: list[tuple[str, Any]] = []
        for d in self.parsed.directives:
            if d.kind != "input":
                continue
            io = d.params.get("IO", default_io)
            if io == "parquet":
                path = _path_in(facts_dir, d.params.get("filename", f"{d.relation}.parquet"))
                if not path.exists():
                    raise FactsError(f"cannot open Parquet data {path} for relation "
                                     f"{d.relation}")
                frames.append((d.relation, self._checked(d.relation,
                                                         self.spark.read.parquet(str(path)),
                                                         source=str(path))[0]))
            elif io == "file":
                from ..io import read_facts
                from ..io_params import io_options

                rel = self._relation(d.relation)
                path = _path_in(facts_dir, d.params.get("filename", f"{d.relation}.facts"))
                cols = read_facts(path, rel, self.symbols, options=io_options(d))
                n = len(cols[0]) if cols else 0
                frames.append((d.relation, self._frame_of_encoded(rel, cols, n)))
            else:
                raise ProgramError(f"unsupported IO={io!r} for .input {d.relation} "
                                   "(file or parquet)", d.loc)
        for name, df in frames:
            self._add_frame(name, df)
        self.load_seconds += time.perf_counter() - t0

    # --- reasoning ---------------------------------------------------------------------

    def materialise(self) -> MaterialisationStats:
        inputs = {name: reduce(lambda a, b: a.union(b), dfs)
                  for name, dfs in self._inputs.items() if dfs}
        self._results = self.runner.materialise(inputs)
        st = self.runner.stats
        strata = [StratumStats(index=s["index"], relations=list(s["relations"]),
                               recursive=s["path"] != "local" or s["rounds"] > 0,
                               iterations=s["rounds"], facts=s["facts"], seconds=s["seconds"])
                  for s in st["strata"]]
        for s, raw in zip(strata, st["strata"]):
            s.note = raw["path"]  # type: ignore[attr-defined]
        self.stats = MaterialisationStats(device="spark", seconds=st["seconds"],
                                          facts=st["facts"], strata=strata)
        return self.stats

    materialize = materialise

    def update(self, insert: Mapping[str, Any] | None = None,
               delete: Mapping[str, Any] | None = None,
               algorithm: str | None = None) -> UpdateStats:
        """E := (E \\ E⁻) ∪ E⁺, then rematerialise in Spark (no counters to maintain)."""
        ins = {n: self._frame_of_any(n, d) for n, d in (insert or {}).items()}
        dele = {n: self._frame_of_any(n, d) for n, d in (delete or {}).items()}
        return self._apply(ins, dele, algorithm)

    def update_from_spark(self, insert: Mapping[str, Any] | None = None,
                          delete: Mapping[str, Any] | None = None,
                          algorithm: str | None = None) -> UpdateStats:
        ins = {n: self._checked(n, df)[0] for n, df in (insert or {}).items()}
        dele = {n: self._checked(n, df)[0] for n, df in (delete or {}).items()}
        return self._apply(ins, dele, algorithm)

    def update_encoded(self, insert: Any, delete: Any, algorithm: str | None = None) -> Any:
        raise ProgramError("update_encoded needs the local engine; use update() or "
                           "update_from_spark() with the Spark backend")

    def counters(self, name: str) -> pa.Table:
        raise ProgramError("the Spark backend keeps no derivation counters")

    def explicit(self, name: str) -> pa.Table:
        rel = self._relation(name)
        dfs = self._inputs.get(name, [])
        if not dfs:
            return portable_table(self._empty_table(rel), rel.arity)
        return _sorted(sa.to_arrow(reduce(lambda a, b: a.union(b), dfs).distinct()))

    # --- results out -------------------------------------------------------------------

    def relation(self, name: str) -> pa.Table:
        rel = self._relation(name)
        df = self.to_spark(name, self.spark)
        table = sa.to_arrow(df)
        if rel.arity == 0:
            return pa.table({"holds": pa.array([True] * table.num_rows, pa.bool_())})
        return _sorted(table)

    def to_spark(self, relation: str, spark: Any = None, partitions: int | None = None) -> Any:
        """The materialised relation as the backend's own DataFrame (no data moves)."""
        rel = self._relation(relation)
        self._ensure()
        df = self._results[relation]  # type: ignore[index]
        if rel.arity == 0:  # the exchange convention: one boolean column "holds"
            from pyspark.sql import functions as F

            return df.select(F.lit(True).alias("holds"))
        return df.repartition(partitions) if partitions else df

    def relation_sizes(self) -> dict[str, int]:
        self._ensure()
        return dict(self.runner.stats["sizes"])

    def render(self, name: str, delimiter: str = "\t", options: Any = None) -> str:
        from ..io import encode_table

        rel = self._relation(name)
        table = self.relation(name)
        syms = SymbolTable()
        cols, n = encode_table(table, rel, syms, name) if rel.arity else ((), table.num_rows)
        return render_rows(cols, rel, syms, delimiter, n_rows=n, options=options)

    # --- helpers -----------------------------------------------------------------------

    def _ensure(self) -> None:
        if self._results is None:
            self.materialise()

    def _add_frame(self, relation: str, df: Any) -> None:
        self._inputs.setdefault(relation, []).append(df)
        self._results = None

    def _apply(self, ins: dict[str, Any], dele: dict[str, Any],
               algorithm: str | None) -> UpdateStats:
        if algorithm not in (None, "remat"):
            raise ProgramError(f"the Spark backend maintains by rematerialisation; "
                               f"algorithm {algorithm!r} needs the local engine")
        t0 = time.perf_counter()
        old = {n: list(v) for n, v in self._inputs.items()}
        for name in {*ins, *dele}:
            rel = self._relation(name)
            dfs = self._inputs.get(name, [])
            cur = reduce(lambda a, b: a.union(b), dfs) if dfs else None
            if cur is not None and name in dele:
                gone = dele[name]
                cur = (cur.join(gone, on=list(gone.columns), how="left_anti") if rel.arity
                       else cur.limit(0) if sa.row_count(gone) else cur)
            parts = [p for p in (cur, ins.get(name)) if p is not None]
            self._inputs[name] = [sa.local_checkpoint(
                reduce(lambda a, b: a.union(b), parts).distinct())] if parts else []
        self._results = None
        try:
            self.materialise()
        except BaseException:
            self._inputs = old
            self._results = None
            raise
        return UpdateStats(algorithm="remat", device="spark", seconds=time.perf_counter() - t0,
                           facts=self.runner.stats["facts"])

    def _frame_of_any(self, relation: str, data: Any) -> Any:
        if sa.is_dataframe(data):
            return self._checked(relation, data)[0]
        before = len(self._inputs.get(relation, []))
        self.add_facts(relation, data)
        return self._inputs[relation].pop(before)

    def _frame_of_encoded(self, rel: Any, cols: Any, n: int) -> Any:
        """Stored columns shipped to Spark in the exchange types (nullary: ``holds``)."""
        if rel.arity == 0:
            return self.spark.range(min(n, 1)).selectExpr("true AS holds")
        table = portable_table(decode_table(cols, rel, self.symbols), rel.arity)
        return sa.from_arrow(self.spark, table)

    def _empty_table(self, rel: Any) -> pa.Table:
        return pa.table({a: pa.array([], pa.int64()) for a in unique_names(
            [a for a, _ in rel.attributes])})

    def _checked(self, relation: str, df: Any, columns: list[str] | None = None,
                 source: str | None = None) -> tuple[Any, int]:
        """``df``'s columns for ``relation``, checked like the exchange layer checks
        them (names, types, nulls, value ranges) with one Spark aggregation, renamed to
        the declaration.  Returns the DataFrame and its row count."""
        from pyspark.sql import functions as F

        rel = self._relation(relation)
        source = source or f"DataFrame for {relation}"
        if not sa.is_dataframe(df):
            raise FactsError(f"{relation}: expected a Spark DataFrame, got {type(df).__name__}")
        if rel.arity == 0:
            n = sa.row_count(df)
            return self.spark.range(min(n, 1)).selectExpr("true AS holds"), n
        names = table_columns(sa.arrow_schema_of(df), rel, source, columns)
        aggs = [F.count(F.lit(1)).alias("n")]
        for k, (c, (_, t)) in enumerate(zip(names, rel.attributes)):
            col = F.col(f"`{c}`")
            aggs.append(F.sum(col.isNull().cast("long")).alias(f"null{k}"))
            if t in _RANGES:
                lo, hi = _RANGES[t]
                aggs.append(F.sum(((col < F.lit(lo)) | (col > F.lit(hi))).cast("long"))
                            .alias(f"range{k}"))
        row = sa.to_arrow(df.agg(*aggs)).to_pylist()[0]
        for k, (c, (_, t)) in enumerate(zip(names, rel.attributes)):
            if row.get(f"null{k}"):
                raise FactsError(f"{source}: column {c!r} of {relation} has "
                                 f"{row[f'null{k}']} null values; facts cannot hold nulls")
            if row.get(f"range{k}"):
                raise FactsError(f"{source}: column {c!r} of {relation} has "
                                 f"{row[f'range{k}']} values out of range for {t}")
        out = df.select(*[F.col(f"`{c}`").alias(a) for c, (a, _) in zip(names, rel.attributes)])
        return out, int(row["n"])


def _sorted(table: pa.Table) -> pa.Table:
    if table.num_columns == 0 or table.num_rows == 0:
        return table
    idx = pc.sort_indices(table, sort_keys=[(n, "ascending") for n in table.column_names])
    return table.take(idx)


__all__ = ["SparkReasoner"]
