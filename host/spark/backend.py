"""Seminaive Datalog evaluation as Spark DataFrame operations, for data beyond one machine.

``SparkRunner(program, spark).materialise(inputs)`` gives, for every relation of the
program, a DataFrame of its distinct facts, identical to the local engine's result.

Representation
    A relation is a list of disjoint DataFrames ("chunks") with internal columns
    ``c0..c{k-1}`` in the exchange types (``number`` IntegerType, ``unsigned`` LongType,
    ``float`` FloatType with -0.0 made 0.0, ``symbol`` StringType: symbols stay strings in
    Spark), plus its row count, tracked by the runner from the counts of the checkpointed
    deltas (so sizes are known without extra jobs).  A relation computed on the driver (the
    hybrid path) is held as encoded engine columns and becomes a DataFrame only when Spark
    needs it.  Nullary relations are zero-column DataFrames with 0 or 1 row.

Round structure (``spark`` path)
    Strata (``gpu_engine.stratify``, so eqrel closure rules are included) run in
    topological order.  A stratum's seeds are its explicit facts plus its non-recursive
    rules, evaluated once; then each round evaluates every recursive rule once per body
    atom of the stratum, that atom over the last round's delta and the others over the
    full relation (set semantics need no more), unions the variants per head relation,
    ``distinct``, and ``left_anti``-joins the result against the full relation: the new
    delta.  Rule bodies are equi-joins on the shared variables (see
    :mod:`host.spark.backend_rules`); Spark hash-partitions both sides of each join on the
    join keys, and an input whose tracked count is at most :data:`BROADCAST_ROWS` is
    broadcast instead.  Negation is a ``left_anti`` join against the complete lower-stratum
    relation; built-ins are Spark column expressions with the local engine's 32-bit
    semantics (:mod:`host.spark.backend_expr`).

Checkpointing and compaction
    Every ``checkpoint_every`` rounds the new deltas are cut from their lineage by an eager
    local checkpoint (never ``cache``/``unpersist``, which re-plans and recomputes more and
    more); each delta is appended to the relation's chunk list, and every ``compact_every``
    rounds the chunks are unioned and checkpointed into one, so a round never rewrites the
    whole relation and the plans of later rounds stay small.

Decomposed path (``decompose="auto"``)
    A recursive stratum is decomposable when there is a key position k_R for each of its
    relations R such that in every recursive rule, the head holds a variable V at its key
    position and every body atom of the stratum holds the same V at its own key position
    (``p(x,z) :- p(x,y), e(y,z)``: k_p = 0).  Then every rule instance maps facts with key
    value v to a fact with key value v, so by induction over derivations every fact with
    key v is derived from seeds with key v and facts of lower strata alone.  Partitioning
    the seeds (explicit facts and non-recursive rule results) by the key value and giving
    every partition all lower-stratum relations the stratum reads therefore lets each
    partition run the whole fixpoint alone, and the union of the partitions is the
    stratum's result.  Non-linear rules such as ``p(x,z) :- p(x,y), p(y,z)`` (p(y,·) has y
    at the key) and symmetric ones (eqrel) do not qualify.  The partitions run in
    ``mapInArrow`` with the local columnar engine (a fresh symbol table per task; the GPU of
    the executor when ``device="auto"`` finds one); the lower-stratum relations are shipped
    inside the task as Arrow IPC bytes, so their total size must be at most
    :data:`REPLICATE_ROWS`.  Only one pass of Spark jobs runs, whatever the number of rounds.

Hybrid switch (``local_finish_rows``)
    Before a stratum, when its explicit facts plus every relation it reads hold at most
    ``local_finish_rows`` rows (tracked counts), the stratum runs in the local engine on the
    driver (``to_arrow`` in; the result goes back with ``from_arrow`` only when a later Spark
    step or the caller needs it; relations pulled once stay on the driver, encoded, for
    later local strata).  Before every round of a recursive stratum the same test is made on
    what the rest of the fixpoint needs: for a linear stratum (one stratum atom per
    recursive rule) the deltas and the relations read, since every missing fact then has a
    derivation chain starting at a delta fact, so the closure of the deltas computed locally,
    anti-joined against the full relation in Spark, completes it; otherwise also the full
    relations, which then move to the driver too.

Not supported (``ProgramError`` when the runner is built): ``ord`` (the local engine's
value is a dictionary id), ``to_float`` of a symbol and ``to_string`` of a float.  Known
differences on edge values: NaN payloads are not distinguished (Spark normalises NaN),
``to_number`` takes ASCII whitespace and at most 18 digits, and a float ``^`` follows
Java's ``Math.pow`` (NaN where C's ``pow`` gives 1 for ``pow(1, NaN)``).  Input columns are
cast to the declared types; nulls in inputs are not checked here (the exchange layer does).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from functools import reduce
from typing import Any

import numpy as np
import pyarrow as pa

from gpu_engine.ir import Atom, Negation, Program, ProgramError, Relation
from gpu_engine.plan import Role, delta_variants
from gpu_engine.stratify import Stratum, stratify
from gpu_engine.values import encode_scalar

from ..dictionary import SymbolTable
from ..io import unique_names
from . import adapter as sa
from .backend_expr import SPARK_TYPES, normalise_float
from .backend_local import (
    ARROW_TYPES,
    Encoded,
    PartitionTask,
    decode_table,
    encode_table,
    partition_runner,
    run_local,
    to_ipc,
)
from .backend_rules import CompiledRule, Source, col_names
from .ship import ensure_shipped

BROADCAST_ROWS = 200_000  # inputs at most this large (tracked rows) are broadcast
REPLICATE_ROWS = 5_000_000  # decomposed path: lower-stratum rows shipped to every task
MAX_KEY_CHOICES = 4096  # decomposition: key position combinations tried per stratum

Progress = Callable[[str, int, int], None]


class _Rel:
    """One relation's facts: Spark chunks and/or driver-side encoded columns, and a count."""

    def __init__(self, runner: SparkRunner, rel: Relation) -> None:
        self.runner = runner
        self.rel = rel
        self.chunks: list[Any] | None = None
        self.encoded: Encoded | None = None
        self.count = 0

    @classmethod
    def of_chunks(cls, runner: SparkRunner, rel: Relation, chunks: list[Any],
                  count: int) -> _Rel:
        r = cls(runner, rel)
        r.chunks, r.count = chunks, count
        return r

    @classmethod
    def of_encoded(cls, runner: SparkRunner, rel: Relation, enc: Encoded) -> _Rel:
        r = cls(runner, rel)
        r.encoded, r.count = enc, enc[1]
        return r

    def df(self) -> Any:
        """All facts as one DataFrame (a union of the chunks)."""
        if self.chunks is None:
            assert self.encoded is not None
            self.chunks = [self.runner._frame_of(self.rel, self.encoded)]
        return self.runner._union(self.rel, self.chunks)

    def source(self) -> Source:
        return Source(self.df(), self.count)

    def encode(self) -> Encoded:
        """The facts as engine columns in the driver's symbol table (pulled once)."""
        if self.encoded is None:
            self.encoded = self.runner._encode_frame(self.rel, self.df())
        return self.encoded

    def table(self) -> tuple[pa.Table | None, int]:
        """The facts as an Arrow table (None for a nullary relation) and their count."""
        if self.rel.arity == 0:
            return None, self.count
        if self.encoded is not None:
            return decode_table(self.encoded, self.rel, self.runner.symbols), self.count
        return sa.to_arrow(self.df()), self.count


class SparkRunner:
    """Materialises a program's strata as Spark DataFrame operations (module docstring).

    ``stats`` after :meth:`materialise`: ``{"seconds", "facts", "sizes" (facts per
    relation), "strata": [{"index",
    "relations", "path" ("spark" | "decomposed" | "local"), "rounds" (Spark rounds run),
    "seconds", "facts"}]}``.
    """

    def __init__(self, program: Program, spark: Any, *, decompose: str = "auto",
                 local_finish_rows: int = 2_000_000, checkpoint_every: int = 1,
                 compact_every: int = 4, device: str = "auto",
                 progress: Progress | None = None) -> None:
        if decompose not in ("auto", "off"):
            raise ValueError(f"decompose must be 'auto' or 'off', not {decompose!r}")
        if checkpoint_every < 1 or compact_every < 1:
            raise ValueError("checkpoint_every and compact_every must be at least 1")
        self.program = program
        self.spark = spark
        ensure_shipped(spark)  # the decomposed path runs this package on the executors
        self.decompose = decompose
        self.local_finish_rows = local_finish_rows
        self.checkpoint_every = checkpoint_every
        self.compact_every = compact_every
        self.device = device
        self.progress = progress
        self.broadcast_rows = BROADCAST_ROWS
        self.replicate_rows = REPLICATE_ROWS
        bad = [f"choice-domain ({n})" for n, r in program.relations.items() if r.choice]
        bad += ["subsumption"] if program.subsumptions else []
        bad += ["debug_delta"] if program.debug_deltas else []  # (gpu_engine.iteration)
        bad += [".limitsize"] if program.limits else []
        if bad:
            raise ProgramError(f"the Spark backend does not support {', '.join(bad)}")
        if program.aggregates:
            agg = next(iter(program.aggregates.values()))
            raise ProgramError(f"aggregates ('{agg.op}') are not supported by the Spark "
                               "backend", agg.loc)
        sa.disable_constraint_propagation(spark)  # after the refusals: no session change
        self.strata: list[Stratum] = stratify(program)
        self.compiled = {id(r): CompiledRule(r, program.relations)
                         for s in self.strata for r in s.rules}
        self.plans = {s.index: decomposition_plan(s, program.relations)
                      for s in self.strata if s.recursive}
        self.symbols = SymbolTable()
        self.stats: dict[str, Any] = {}

    # --- the driver loop ---------------------------------------------------------------

    def materialise(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Every relation's distinct facts, as DataFrames named after the ``.decl``."""
        t0 = time.perf_counter()
        rels = self.program.relations
        for name in inputs:
            if name not in rels:
                raise ProgramError(f"unknown relation {name!r}")
        self.symbols = SymbolTable()
        self._inputs = {n: self._input_frame(rels[n], df) for n, df in inputs.items()}
        self._state: dict[str, _Rel] = {}
        strata_stats = []
        for k, s in enumerate(self.strata):
            if self.progress:
                self.progress("stratum", k, len(self.strata))
            ts = time.perf_counter()
            path, rounds = self._stratum(s)
            strata_stats.append({
                "index": s.index, "relations": list(s.relations), "path": path,
                "rounds": rounds, "seconds": time.perf_counter() - ts,
                "facts": sum(self._state[r].count for r in s.relations)})
        self.stats = {"seconds": time.perf_counter() - t0,
                      "facts": sum(r.count for r in self._state.values()),
                      "sizes": {name: r.count for name, r in self._state.items()},
                      "strata": strata_stats}
        return {name: self._output(self._state[name]) for name in rels}

    def _stratum(self, s: Stratum) -> tuple[str, int]:
        reads = sorted(s.reads - set(s.relations))
        read_rows = sum(self._state[r].count for r in reads)
        if self.local_finish_rows > 0:
            seed_rows = sum(self._explicit_rows(r) for r in s.relations)
            if seed_rows + read_rows <= self.local_finish_rows:
                seeds = {r: self._explicit_encoded(r) for r in s.relations}
                self._finish_locally(s, s.rules, seeds, reads)
                return "local", 0
        plan = self.plans.get(s.index)
        if (s.recursive and self.decompose == "auto" and plan is not None
                and read_rows <= self.replicate_rows):
            self._decomposed(s, plan, reads)
            return "decomposed", 1
        return self._seminaive(s, reads, read_rows)

    # --- spark path --------------------------------------------------------------------

    def _seeds(self, s: Stratum) -> dict[str, Any]:
        """Explicit facts plus the non-recursive rules' results (with duplicates)."""
        parts: dict[str, list[Any]] = {r: [] for r in s.relations}
        for r in s.relations:
            if (e := self._explicit_frame(r)) is not None:
                parts[r].append(e)
        for rule in s.nonrecursive_rules:
            out = self._fire(rule, None)
            if out is not None:
                parts[rule.head.relation].append(out)
        rels = self.program.relations
        return {r: self._union(rels[r], p) for r, p in parts.items()}

    def _seminaive(self, s: Stratum, reads: list[str], read_rows: int) -> tuple[str, int]:
        rels = self.program.relations
        full: dict[str, list[Any]] = {}
        delta: dict[str, Source] = {}
        for r, df in self._seeds(s).items():
            d = sa.local_checkpoint(df.distinct())
            delta[r] = Source(d, sa.row_count(d))
            full[r] = [d]
        counts = {r: delta[r].count for r in s.relations}
        self._state.update({r: _Rel.of_chunks(self, rels[r], full[r], counts[r])
                            for r in s.relations})
        rounds = 0
        linear = is_linear(s)
        while s.recursive and any(d.count for d in delta.values()):
            total = read_rows + sum(d.count for d in delta.values())
            if not linear:
                total += sum(counts.values())
            if 0 < self.local_finish_rows and total <= self.local_finish_rows:
                if not linear:
                    seeds = {r: self._state[r].encode() for r in s.relations}
                    self._finish_locally(s, s.recursive_rules, seeds, reads)
                    return "local", rounds
                self._finish_linear_locally(s, delta, full, counts, reads)
                return "local", rounds
            rounds += 1
            if self.progress:
                self.progress("iteration", rounds, s.index)
            fulls = {r: Source(self._union(rels[r], full[r]), counts[r]) for r in s.relations}
            candidates: dict[str, list[Any]] = {r: [] for r in s.relations}
            for rule in s.recursive_rules:
                atoms = [a for a in rule.body if isinstance(a, Atom)]
                changed = {r for r in full if delta[r].count > 0}
                for i, roles in delta_variants(atoms, changed.__contains__, exact=False):
                    srcs = [delta[a.relation] if role is Role.DELTA else
                            (fulls[a.relation] if a.relation in full else
                             self._state[a.relation].source())
                            for a, role in zip(atoms, roles)]
                    out = self._fire(rule, srcs, first=i)
                    if out is not None:
                        candidates[rule.head.relation].append(out)
            for r in s.relations:
                if not candidates[r]:
                    delta[r] = Source(None, 0)
                    continue
                new = self._union(rels[r], candidates[r]).distinct()
                known = fulls[r].df
                if counts[r] <= self.broadcast_rows:
                    known = sa.broadcast(known)
                cols = col_names(rels[r].arity)
                new = (new.join(known, on=cols, how="left_anti") if cols
                       else new.join(known.limit(1), how="left_anti"))
                if rounds % self.checkpoint_every == 0:
                    new = sa.local_checkpoint(new)
                n = sa.row_count(new)
                delta[r] = Source(new, n)
                if n:
                    full[r].append(new)
                    counts[r] += n
            if rounds % self.compact_every == 0:
                for r in s.relations:
                    if len(full[r]) > 1:
                        full[r] = [sa.local_checkpoint(self._union(rels[r], full[r]))]
            for r in s.relations:
                self._state[r].chunks, self._state[r].count = full[r], counts[r]
        return "spark", rounds

    def _fire(self, rule: Any, sources: list[Source] | None, first: int | None = None) -> Any:
        """One rule (variant) as a DataFrame of head rows, or None when an input is empty.
        ``sources`` None: every atom reads the complete relation."""
        compiled = self.compiled[id(rule)]
        if sources is None:
            sources = [self._state[a.relation].source() for a in compiled.atoms]
        negated = {lit.atom.relation: self._state[lit.atom.relation].source()
                   for lit in rule.body if isinstance(lit, Negation)}
        return compiled.build(self.spark, sources, negated, first, self.broadcast_rows)

    # --- decomposed path ---------------------------------------------------------------

    def _decomposed(self, s: Stratum, plan: dict[str, int], reads: list[str]) -> None:
        from pyspark.sql import functions as F

        rels = self.program.relations
        names = tuple(s.relations)
        replicated = {}
        for r in reads:
            table, n = self._state[r].table()
            replicated[r] = (to_ipc(table) if table is not None else None, n)
        task = PartitionTask({n: rels[n] for n in (*names, *reads)}, list(s.recursive_rules),
                             names, replicated, self.device)
        schema = task.output_schema()
        tagged = []
        for i, (r, df) in enumerate(self._seeds(s).items()):
            cols = [F.lit(i).cast("int").alias("tag"),
                    F.col(f"c{plan[r]}").alias("key")]
            for f in list(schema)[1:]:
                own = f.name.startswith(f"r{i}_")
                c = F.col("c" + f.name.split("_")[1]) if own else F.lit(None)
                cols.append(c.cast(sa.spark_type_of(f.type)).alias(f.name))
            tagged.append(df.select(*cols))
        seeds = reduce(lambda a, b: a.union(b), tagged)
        n_parts = max(sa.parallelism(self.spark),
                      int(self.spark.conf.get("spark.sql.shuffle.partitions", "1")))
        parts = seeds.repartition(n_parts, "key")
        out = sa.local_checkpoint(sa.map_in_arrow(parts, partition_runner(task),
                                                  sa.spark_schema(schema)))
        counts = sa.to_arrow(out.groupBy("tag").count())
        by_tag = dict(zip(counts.column(0).to_pylist(), counts.column(1).to_pylist()))
        for i, r in enumerate(names):
            df = out.filter(F.col("tag") == i).select(
                *[F.col(f"r{i}_{j}").alias(f"c{j}") for j in range(rels[r].arity)])
            self._state[r] = _Rel.of_chunks(self, rels[r], [df], int(by_tag.get(i, 0)))

    # --- local (hybrid) path -----------------------------------------------------------

    def _finish_locally(self, s: Stratum, rules: list[Any], seeds: Mapping[str, Encoded],
                        reads: list[str]) -> None:
        inputs = {r: self._state[r].encode() for r in reads}
        inputs.update(seeds)
        out = run_local(self.program.relations, list(rules), inputs, s.relations,
                        self.symbols, self.device)
        for r in s.relations:
            self._state[r] = _Rel.of_encoded(self, self.program.relations[r], out[r])

    def _finish_linear_locally(self, s: Stratum, delta: dict[str, Source],
                               full: dict[str, list[Any]], counts: dict[str, int],
                               reads: list[str]) -> None:
        """Linear rules: the closure of the deltas under the recursive rules (with the
        relations read) holds every fact still missing, as every remaining derivation chain
        starts at a delta fact; only the deltas travel, and the new facts come back as one
        chunk (anti-joined against the full relation in Spark)."""
        rels = self.program.relations
        seeds = {r: self._encode_frame(rels[r], d.df) if d.count else
                 ((np.zeros(0, np.int64),) * rels[r].arity, 0) for r, d in delta.items()}
        inputs = {r: self._state[r].encode() for r in reads}
        inputs.update(seeds)
        out = run_local(rels, list(s.recursive_rules), inputs, s.relations, self.symbols,
                        self.device)
        for r in s.relations:
            cols = col_names(rels[r].arity)
            found = self._frame_of(rels[r], out[r])
            known = self._union(rels[r], full[r])
            new = (found.join(known, on=cols, how="left_anti") if cols
                   else found.join(known.limit(1), how="left_anti"))
            new = sa.local_checkpoint(new)
            n = sa.row_count(new)
            if n:
                full[r].append(new)
                counts[r] += n
            self._state[r].chunks, self._state[r].count = full[r], counts[r]

    # --- explicit facts ----------------------------------------------------------------

    def _input_frame(self, rel: Relation, df: Any) -> Any:
        """A user DataFrame as internal columns ``c0..`` of the declared types."""
        from pyspark.sql import functions as F

        if rel.arity == 0:
            return df.select()
        if len(df.columns) != rel.arity:
            raise ProgramError(f"{rel.name} has arity {rel.arity}, but the DataFrame has "
                               f"{len(df.columns)} columns ({', '.join(df.columns)})")
        cols = []
        for i, (c, t) in enumerate(zip(df.columns, rel.types)):
            v = F.col(f"`{c}`").cast(SPARK_TYPES[t])
            cols.append((normalise_float(v) if t == "float" else v).alias(f"c{i}"))
        return df.select(*cols)

    def _facts_table(self, rel: Relation) -> tuple[pa.Table | None, int]:
        """The program-text facts of ``rel`` (Arrow, exchange types) and their count."""
        rows = self.program.facts.get(rel.name, [])
        if rel.arity == 0:
            return None, len(rows)
        arrays = []
        for i, t in enumerate(rel.types):
            vals = [r[i] for r in rows]
            if t == "symbol":
                arrays.append(pa.array([str(v) for v in vals], pa.string()))
            elif t == "float":
                f = np.asarray(vals, dtype=np.float32) + np.float32(0.0)
                arrays.append(pa.array(f, pa.float32()))
            else:
                arrays.append(pa.array([encode_scalar(v, t) for v in vals], ARROW_TYPES[t]))
        return pa.table(arrays, names=col_names(rel.arity)), len(rows)

    def _explicit_frame(self, name: str) -> Any | None:
        rel = self.program.relations[name]
        parts = [self._inputs[name]] if name in self._inputs else []
        table, n = self._facts_table(rel)
        if n:
            parts.append(self._frame_of_table(rel, table, n))
        return reduce(lambda a, b: a.union(b), parts) if parts else None

    def _explicit_rows(self, name: str) -> int:
        n = self._facts_table(self.program.relations[name])[1]
        return n + (sa.row_count(self._inputs[name]) if name in self._inputs else 0)

    def _explicit_encoded(self, name: str) -> Encoded:
        rel = self.program.relations[name]
        table, n = self._facts_table(rel)
        if name in self._inputs:
            if rel.arity == 0:
                n += sa.row_count(self._inputs[name])
            else:
                table = pa.concat_tables([sa.to_arrow(self._inputs[name]).cast(table.schema),
                                          table])
        if rel.arity == 0:
            return (), min(n, 1)
        return encode_table(table, rel, self.symbols)

    # --- frames ------------------------------------------------------------------------

    def _union(self, rel: Relation, frames: list[Any]) -> Any:
        frames = [f for f in frames if f is not None]
        if not frames:
            return self._empty(rel)
        return reduce(lambda a, b: a.union(b), frames)

    def _empty(self, rel: Relation) -> Any:
        if rel.arity == 0:
            return self.spark.range(0).select()
        schema = pa.schema([(c, ARROW_TYPES[t]) for c, t in zip(col_names(rel.arity),
                                                                   rel.types)])
        return self.spark.createDataFrame([], sa.spark_schema(schema))

    def _frame_of_table(self, rel: Relation, table: pa.Table | None, n: int) -> Any:
        if rel.arity == 0:
            return self.spark.range(min(n, 1)).select()
        if n == 0:
            return self._empty(rel)
        return sa.from_arrow(self.spark, table)

    def _frame_of(self, rel: Relation, enc: Encoded) -> Any:
        table = decode_table(enc, rel, self.symbols) if rel.arity else None
        return self._frame_of_table(rel, table, enc[1])

    def _encode_frame(self, rel: Relation, df: Any) -> Encoded:
        if rel.arity == 0:
            return (), min(1, sa.row_count(df))
        return encode_table(sa.to_arrow(df), rel, self.symbols)

    def _output(self, r: _Rel) -> Any:
        df = r.df()
        if r.rel.arity == 0:
            return df
        return df.toDF(*unique_names([a for a, _ in r.rel.attributes]))


# --- decomposition ------------------------------------------------------------------------


def decomposition_plan(s: Stratum, relations: Mapping[str, Relation]) -> dict[str, int] | None:
    """Key positions (relation -> argument index) under which the recursive stratum ``s``
    can run as independent fixpoints per key value, or None (module docstring): every
    recursive rule has a variable V at the head's key position and the same V at the key
    position of each of its body atoms of the stratum; all keys have one type."""
    names = list(s.relations)
    arities = [relations[n].arity for n in names]
    if not s.recursive or 0 in arities:
        return None
    for choice in itertools.islice(itertools.product(*(range(a) for a in arities)),
                                   MAX_KEY_CHOICES):
        key = dict(zip(names, choice))
        if len({relations[n].types[key[n]] for n in names}) != 1:
            continue
        if all(_maps_key_to_key(rule, key) for rule in s.recursive_rules):
            return key
    return None


def is_linear(s: Stratum) -> bool:
    """Whether every recursive rule of ``s`` has exactly one body atom of the stratum."""
    return all(sum(isinstance(a, Atom) and a.relation in s.relations for a in r.body) == 1
               for r in s.recursive_rules)


def _maps_key_to_key(rule: Any, key: Mapping[str, int]) -> bool:
    from gpu_engine.ir import Var

    v = rule.head.args[key[rule.head.relation]]
    if not isinstance(v, Var):
        return False
    return all(isinstance(t := a.args[key[a.relation]], Var) and t.name == v.name
               for a in rule.body if isinstance(a, Atom) and a.relation in key)


__all__ = ["SparkRunner", "decomposition_plan", "BROADCAST_ROWS", "REPLICATE_ROWS"]
