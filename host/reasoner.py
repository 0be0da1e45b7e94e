"""The public facade: ``Reasoner`` (exported as ``gpu_engine.Reasoner``)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from gpu_engine.kernels.backend import get_backend

from gpu_engine.engine import Engine
from gpu_engine.ir import ProgramError
from gpu_engine.stats import MaterialisationStats, UpdateStats
from gpu_engine.values import WORD_SIZES, encode_scalar

from .dictionary import SymbolTable
from .io import FactsError, decode_table, encode_column, read_facts, render_rows
from .io_params import IOOptions, check_params, io_options
from .lang.dl_source import ProgramSource, SourceOptions, expand_source, load_source
from .lang.parser import ParsedProgram, parse_program

if TYPE_CHECKING:
    from .explain import Proof
    from .update_queue import UpdateHandle, UpdateQueue


class Reasoner:
    """A Datalog program with its facts, materialised on a GPU (CuPy) or CPU (NumPy).

    >>> r = Reasoner('.decl e(a:number, b:number) .decl p(a:number, b:number) '
    ...              'p(x, y) :- e(x, y). p(x, z) :- p(x, y), e(y, z).', device="cpu")
    >>> r.add_facts("e", np.array([[1, 2], [2, 3]]))
    >>> _ = r.materialise()
    >>> sorted(map(tuple, r.relation("p").to_pandas().values.tolist()))
    [(1, 2), (1, 3), (2, 3)]
    """

    def __new__(cls, *args: Any, backend: str = "local", **kwargs: Any) -> Reasoner:
        """``backend="spark"`` (with ``spark=session``) gives a
        :class:`host.spark.reasoner.SparkReasoner`: facts and fixpoint in Spark."""
        if backend not in ("local", "spark"):
            raise ValueError(f"backend must be 'local' or 'spark', not {backend!r}")
        if backend == "spark" and cls is Reasoner:
            from .spark.reasoner import SparkReasoner

            return super().__new__(SparkReasoner)
        return super().__new__(cls)

    def __init__(self, program: str | Path | ProgramSource, device: str = "auto", *,
                 counting: bool | str = False, progress: Any = None,
                 symbols: SymbolTable | None = None,
                 modules: str = "auto", backend: str = "local",
                 word_size: int | None = None, rewrite_equality: bool = False,
                 decompose: str | None = None, libraries: Sequence[str] = ("functors",),
                 library_dirs: Sequence[str | Path] = (".",)) -> None:
        if word_size is None:  # a ProgramSource read for 64-bit words keeps them
            word_size = program.options.word_size if isinstance(program, ProgramSource) else 32
        if word_size not in WORD_SIZES:
            raise ValueError(f"word_size must be 32 or 64, not {word_size!r}")
        self.word_size = word_size
        self.source_text, self.source_name = _source(program, word_size)
        self.parsed: ParsedProgram = parse_program(self.source_text, self.source_name,
                                                   word_size)
        self.rewrite_equality = rewrite_equality
        if rewrite_equality:  # equality spelled out as rules: rewriting instead
            from .lang.dl_equality import rewrite_spelled_out

            self.parsed.program = rewrite_spelled_out(self.parsed.program)
        self.program = self.parsed.program
        for d in self.parsed.directives:  # a misspelt parameter: ignored, with a note
            self.parsed.notes.extend(check_params(d))
        self.backend = get_backend(device)
        self.symbols = symbols if symbols is not None else SymbolTable()
        self.symbols.word_size = word_size  # the engine and the IO read values in it
        if self.program.functors:  # user-defined functors: their shared libraries (-L/-l)
            from .functor_libs import SharedLibraries

            self.symbols.functors = SharedLibraries(self.program.functors, libraries,
                                                    library_dirs, word_size)
        if counting == "auto":  # counters where the program allows them (a store's)
            counting = self.program.equality is None
        engine_class = Engine
        if self.program.equality is not None:  # equality by rewriting (Mat≈)
            from gpu_engine.equality import EqualityEngine as engine_class  # type: ignore[assignment]
        self.engine = engine_class(self.program, self.backend, self.symbols,
                                   counting=counting, progress=progress, modules=modules,
                                   decompose=decompose)
        # with an equality relation: answers are expanded (each rewritten row stands for
        # the product of its classes); False gives the rewritten rows (see host/equality.py)
        self.expand = True
        self.stats: MaterialisationStats | None = None
        self.load_seconds = 0.0
        self._queue: UpdateQueue | None = None  # submit()'s update queue, made on first use
        for name, rows in self.program.facts.items():
            self._add_python_rows(name, rows)

    # --- properties -------------------------------------------------------------------

    @property
    def device(self) -> str:
        """``"cpu"`` or ``"gpu"``: the backend actually in use (``"cpu"`` after the engine
        ran out of device memory and moved to the CPU, see ``gpu_engine.fallback``)."""
        return self.engine.be.name

    @property
    def notes(self) -> list[str]:
        """Notes on accepted-and-ignored program features (``.plan``, ``.pragma``, ...)."""
        return list(self.parsed.notes)

    # --- facts in ---------------------------------------------------------------------

    def add_facts(self, relation: str, data: Any) -> int:
        """Add explicit facts: a 2-D NumPy array (columns in declaration order), a pyarrow
        Table or a pandas DataFrame.  A table's columns are matched by name to the
        ``.decl`` attribute names (extra columns are an error); only when its column names
        are the default ones (pandas ``0, 1, ...``, Arrow ``c0, c1, ...`` or ``f0, ...``)
        or the attribute names are not unique are they taken in order.  Returns the number
        of new facts."""
        t0 = time.perf_counter()
        enc, n = self._encode(relation, data)
        added = self.engine.add_facts(relation, enc, n_rows=n)
        self.load_seconds += time.perf_counter() - t0
        return added

    def load_inputs(self, facts_dir: str | Path = ".", default_io: str = "file") -> None:
        """Read every ``.input`` relation from its file: ``IO=file`` (the default, or
        ``default_io``) reads ``<rel>.facts`` in ``facts_dir``, ``IO=parquet`` reads the
        Parquet file or Spark-written directory ``<rel>.parquet``."""
        from .parquet_io import read_parquet_facts

        t0 = time.perf_counter()
        loaded = []
        needed: set[str] | None = None
        for d in self.parsed.directives:  # read and check every input before adding any
            if d.kind != "input":
                continue
            rel = self._relation(d.relation)
            io = d.params.get("IO", default_io)
            if io == "parquet":
                path = _path_in(facts_dir, d.params.get("filename", f"{d.relation}.parquet"))
                cols, n = read_parquet_facts(path, rel, self.symbols)
                loaded.append((d.relation, list(cols), n))
                continue
            if io in ("json", "jsonfile", "sqlite"):
                loaded.append((d.relation, *self._read_other(d, rel, io, facts_dir)))
                continue
            if io == "rdf":  # RDF triples (host/rdf.py), the format from the file name
                from .rdf import read_rdf

                path = _path_in(facts_dir, d.params.get("filename", f"{d.relation}.nt"))
                table = read_rdf(path, d.params.get("format"))
                cols, n = self._encode(d.relation, table.rename_columns(
                    [a for a, _ in rel.attributes][:3]))
                loaded.append((d.relation, list(cols), n))
                continue
            if io != "file":
                raise ProgramError(f"unsupported IO={io!r} for .input {d.relation} "
                                   "(file, parquet, jsonfile, json, sqlite, rdf)", d.loc)
            path = _path_in(facts_dir, d.params.get("filename", f"{d.relation}.facts"))
            opts = io_options(d)  # the parameters are checked whether or not it is read
            if not path.exists() and not os.path.lexists(path) and d.relation not in (
                    needed := needed if needed is not None else self._needed_relations()):
                continue  # as Soufflé, which drops relations no output depends on
            fcols = read_facts(path, rel, self.symbols, options=opts)
            n = len(fcols[0]) if fcols else 0
            loaded.append((d.relation, fcols if rel.arity else [], n))
        for name, cols, n in loaded:
            self.engine.add_facts(name, cols, n_rows=n)
        self.load_seconds += time.perf_counter() - t0

    def _needed_relations(self) -> set[str]:
        """The relations some ``.output`` or ``.printsize`` relation depends on (itself
        included): a missing fact file of any other ``.input`` relation is not an error."""
        from gpu_engine.ir import Atom, Negation

        prog = self.program
        deps: dict[str, set[str]] = {}
        for rule in [*prog.rules, *prog.subsumptions]:
            deps.setdefault(rule.head.relation, set()).update(
                lit.relation if isinstance(lit, Atom) else lit.atom.relation
                for lit in rule.body if isinstance(lit, (Atom, Negation)))
        for name, agg in prog.aggregates.items():
            deps.setdefault(name, set()).update(agg.reads)
        todo = [d.relation for d in self.parsed.directives if d.kind in ("output", "printsize")]
        seen: set[str] = set()
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(deps.get(n, ()))
        return seen

    def _read_other(self, d: Any, rel: Any, io: str, facts_dir: str | Path
                    ) -> tuple[list[Any], int]:
        """Columns and row count of a JSON (``host.json_io``) or SQLite
        (``host.sqlite_io``) input."""
        if io == "sqlite":
            from .sqlite_io import check_sqlite_relation, database_name, read_sqlite_facts
            from .sqlite_io import resolve as resolve_db

            check_sqlite_relation(rel, d.loc)
            db = resolve_db(database_name(d), facts_dir)
            return read_sqlite_facts(db, d.params.get("name", d.relation), rel, self.symbols)
        from .json_io import check_json_relation, read_json_path

        check_json_relation(rel, d.loc)
        if io == "json":
            return read_json_path(Path("-"), rel, self.symbols)
        name = d.params.get("name", d.relation)
        return read_json_path(_path_in(facts_dir, d.params.get("filename", f"{name}.json")),
                              rel, self.symbols)
    # --- RDF --------------------------------------------------------------------------

    def load_rdf(self, paths: str | Path | list[str | Path], relation: str = "triple",
                 format: str | None = None) -> int:
        """Add the triples of RDF files (N-Triples, Turtle, N-Quads, TriG, ...; gzip too)
        to a relation of three symbol attributes; all files are read before any fact is
        added. Returns the number of new facts. See :mod:`host.rdf`."""
        from .rdf import load_rdf

        t0 = time.perf_counter()
        try:
            return load_rdf(self, paths, relation, format)
        finally:
            self.load_seconds += time.perf_counter() - t0

    def write_rdf(self, path: str | Path, relation: str = "triple",
                  format: str | None = None) -> int:
        """Write a triple relation as N-Triples (``format="nt"``) or Turtle (``"ttl"``;
        by default from the file name). Returns the number of generalised triples (literal
        subjects) left out."""
        from .rdf import write_rdf

        return write_rdf(self, path, relation, format)

    # --- Spark ------------------------------------------------------------------------

    def load_spark(self, relation: str, df: Any, columns: list[str] | None = None) -> int:
        """Add the rows of a Spark DataFrame as explicit facts of ``relation`` (columns
        named after the ``.decl`` attributes, or ``columns``), moved as Arrow batches.
        Returns the number of new facts.  See :mod:`host.spark.exchange`."""
        from .spark.exchange import load_spark

        return load_spark(self, relation, df, columns)

    def load_spark_inputs(self, frames: Mapping[str, Any]) -> dict[str, int]:
        """:meth:`load_spark` for several relations (relation name → DataFrame); all are
        checked before any is added."""
        from .spark.exchange import load_spark_inputs

        return load_spark_inputs(self, frames)

    def to_spark(self, relation: str, spark: Any, partitions: int | None = None) -> Any:
        """The relation's facts as a Spark DataFrame of ``spark`` (materialises first)."""
        from .spark.exchange import to_spark

        return to_spark(self, relation, spark, partitions)

    def outputs_to_spark(self, spark: Any, relations: list[str] | None = None) -> dict[str, Any]:
        """Every ``.output`` relation (or ``relations``) as a Spark DataFrame."""
        from .spark.exchange import outputs_to_spark

        return outputs_to_spark(self, spark, relations)

    def update_from_spark(self, insert: Mapping[str, Any] | None = None,
                          delete: Mapping[str, Any] | None = None,
                          algorithm: str | None = None) -> UpdateStats:
        """:meth:`update` with DataFrames of inserted and deleted facts."""
        from .spark.exchange import update_from_spark

        return update_from_spark(self, insert, delete, algorithm)

    # --- reasoning --------------------------------------------------------------------

    def materialise(self) -> MaterialisationStats:
        """Compute every consequence of the rules and the explicit facts."""
        self.stats = self.engine.materialise()
        return self.stats

    materialize = materialise

    def update(self, insert: Mapping[str, Any] | None = None,
               delete: Mapping[str, Any] | None = None,
               algorithm: str | None = None) -> UpdateStats:
        """Insert and delete explicit facts and bring the materialisation up to date.

        ``insert`` and ``delete`` map relation names to facts in any form ``add_facts``
        takes.  ``algorithm`` is one of ``remat``, ``remat1c``, ``remat2c``, ``dred``,
        ``counting``, ``dredc``, ``bf``, ``bfc``; by default (or ``auto``) Counting when no
        stratum is recursive, otherwise DRed^c with a time budget (a deletion whose
        overdeletion passes 0.35 of the last materialisation's time rematerialises,
        keeping the counters: ``gpu_engine.maintenance.DEFAULT_TIME``).  The update is
        atomic: if it raises, the explicit
        facts, the materialisation and the counters are those from before the call.
        """

        before = len(self.symbols)
        before_records = len(self.symbols.records)
        try:
            ins = {n: self._encode(n, d) for n, d in (insert or {}).items()}
            dele = {n: self._encode(n, d) for n, d in (delete or {}).items()}
            return self.update_encoded(ins, dele, algorithm)
        except BaseException:  # the dictionary too goes back to the engine state's size
            self.symbols.truncate(max(before, self.engine.state.symbols))
            self.symbols.records.truncate(max(before_records, self.engine.state.records))
            raise

    def update_encoded(self, insert: Mapping[str, tuple[tuple[np.ndarray, ...], int]],
                       delete: Mapping[str, tuple[tuple[np.ndarray, ...], int]],
                       algorithm: str | None = None) -> UpdateStats:
        """:meth:`update` with facts already encoded: per relation (int64 host columns in
        declaration order, row count), as :func:`host.io.read_facts` produces them."""
        from gpu_engine.maintenance import apply_update

        for name in (*insert, *delete):
            self._relation(name)
        self._ensure()
        return apply_update(self.engine, dict(insert), dict(delete), algorithm)

    def submit(self, insert: Mapping[str, Any] | None = None,
               delete: Mapping[str, Any] | None = None, *, batch_id: Any = None
               ) -> UpdateHandle:
        """Queue an update and return at once: a handle whose ``done()``/``wait()`` say
        when the change is visible.  Updates submitted while another runs are composed
        (paper 004, :mod:`host.update_queue`); the result equals applying them one after
        the other.  :meth:`update_queue` chooses the policy and algorithm."""
        self._ensure()
        if getattr(self, "_queue", None) is None:
            self.update_queue()
        ins = {n: self._encode(n, d) for n, d in (insert or {}).items()}
        dele = {n: self._encode(n, d) for n, d in (delete or {}).items()}
        return self._queue.submit(ins, dele, batch_id)

    def update_queue(self, *, policy: str = "inject", algorithm: str | None = None,
                     background: bool = True, max_restarts: int = 2,
                     **options: Any) -> UpdateQueue:
        """(Re)configure the queue :meth:`submit` uses (what was pending is applied
        first): ``policy`` ``wait``, ``inject``, ``restart`` or ``interleave`` (paper 004's
        interleaved mode; ``options``: ``max_interleaved``, ``round_budget``,
        ``max_batches``; see ``host/update_queue.py``)."""
        from .update_queue import reasoner_queue

        if getattr(self, "_queue", None) is not None:
            self._queue.close()
        self._queue = reasoner_queue(self, policy=policy, algorithm=algorithm,
                                     background=background, max_restarts=max_restarts,
                                     **options)
        return self._queue

    def counters(self, name: str) -> pa.Table:
        """The facts of ``name`` with their derivation counters ``c_nr`` (explicit
        membership plus non-recursive derivations) and ``c_r`` (recursive derivations)."""
        table = self.relation(name)
        nr, r = self.engine.counter_arrays(name)
        return table.append_column("c_nr", pa.array(nr, pa.int64())).append_column(
            "c_r", pa.array(r, pa.int64()))

    def explicit(self, name: str) -> pa.Table:
        """The explicit facts E of ``name`` as a pyarrow Table (symbols decoded), sorted."""
        rel = self._relation(name)
        cols = self.engine.explicit_columns(name)
        if not cols:
            return pa.table({"holds": pa.array([True] * len(self.engine.explicit[name]))})
        return decode_table(cols, rel, self.symbols)

    # --- results out ------------------------------------------------------------------

    def relation(self, name: str, expand: bool | None = None) -> pa.Table:
        """The relation's facts as a pyarrow Table (symbols decoded), sorted.  With an
        equality relation, ``expand`` (default :attr:`expand`) chooses the expansion or
        the rewritten rows (see :meth:`equivalence_classes`)."""
        rel = self._relation(name)
        self._ensure()
        if rel.arity == 0:
            return pa.table({"holds": pa.array([True] * self.engine.size(name))})
        return decode_table(self._columns(name, expand), rel, self.symbols)

    def equivalence_classes(self) -> pa.Table:
        """The classes of the equality relation with two or more members: columns
        ``representative`` and ``member`` (decoded), sorted; empty without equality."""
        from .equality import classes_table

        self._ensure()
        return classes_table(self)

    def _columns(self, name: str, expand: bool | None = None) -> tuple[np.ndarray, ...]:
        expand = self.expand if expand is None else expand
        if expand and self.program.equality is not None:
            return self.engine.expanded_columns(name)  # type: ignore[attr-defined]
        return self.engine.columns(name)

    def explain(self, fact: str) -> Proof | None:
        """Why ``fact`` (e.g. ``'path(1, 5)'``) holds: a proof tree of minimal height down to
        explicit facts (``Proof.text()``, ``Proof.to_dict()``), or ``None`` when it does
        not hold. Costs backward steps over the fact's backward closure, not a re-run."""
        from .explain import explain

        return explain(self, fact)

    def relation_sizes(self, expand: bool | None = None) -> dict[str, int]:
        """Number of facts per relation (with an equality relation: of the expansion
        unless ``expand`` or :attr:`expand` is False; counted without expanding)."""
        self._ensure()
        expand = self.expand if expand is None else expand
        if expand and self.program.equality is not None:
            return {name: self.engine.expanded_size(name)  # type: ignore[attr-defined]
                    for name in self.program.relations}
        return {name: self.engine.size(name) for name in self.program.relations}

    def render(self, name: str, delimiter: str = "\t", options: IOOptions | None = None) -> str:
        """The relation's facts as Soufflé prints them (one tab-separated line per fact;
        ``options``: a directive's delimiter and quoting)."""
        rel = self._relation(name)
        self._ensure()
        return render_rows(self._columns(name), rel, self.symbols, delimiter,
                           n_rows=self.engine.size(name), options=options)

    def query(self, text: str, *, limit: int | None = None) -> pa.Table:
        """Answer a query, a rule body such as ``'path(1, X), edge(X, Y), !edge(Y, 3)'``,
        over the materialisation (materialising first if needed; nothing is changed).

        Returns one column per named variable in order of first appearance, one row per
        distinct answer, values decoded and typed like the attributes, sorted; a query
        without named variables returns one boolean column ``holds`` with one row.
        ``limit`` keeps the first rows.  Errors are :class:`ProgramError` located in the
        query text (file ``<query>``).  See :mod:`host.query`."""
        from .query import answer

        return answer(self, text, limit).table

    # --- helpers ----------------------------------------------------------------------

    def _no_equality(self, what: str) -> None:
        eq = self.program.equality
        if eq is not None:  # they would read the rewritten rows: refused, never wrong
            raise ProgramError(f"{what} over a program with the equality relation "
                               f"'{eq.relation}' are not supported yet (the relations hold "
                               "rewritten rows); use relation()", eq.loc)

    def _ensure(self) -> None:
        if not self.engine.materialised:
            self.materialise()

    def _relation(self, name: str):
        try:
            return self.program.relations[name]
        except KeyError:
            raise ProgramError(f"unknown relation {name!r}") from None

    def _encode(self, relation: str, data: Any) -> tuple[tuple[np.ndarray, ...], int]:
        """Facts in any ``add_facts`` form as encoded int64 host columns and a row count."""
        rel = self._relation(relation)
        cols = _columns_of(data, rel.arity, relation, [a for a, _ in rel.attributes])
        n = _row_count(data, cols)
        enc = tuple(encode_column(c, t, self.symbols, f"{relation}.{a}") if rel.format(i) is None
                    else self._encode_records(c, rel.format(i), f"{relation}.{a}")
                    for i, (c, (a, t)) in enumerate(zip(cols, rel.attributes)))
        return enc, n

    def _encode_records(self, values: Any, fmt: Any, what: str) -> np.ndarray:
        from .record_io import encode_record_column

        try:
            return encode_record_column(values, fmt, self.symbols, what)
        except ValueError as e:
            raise FactsError(str(e)) from None

    def _add_python_rows(self, name: str, rows: list[tuple]) -> None:
        rel = self._relation(name)
        if rel.arity == 0:
            self.engine.add_facts(name, [], n_rows=len(rows))
            return
        cols = []
        for i, (_, t) in enumerate(rel.attributes):
            vals = [r[i] for r in rows]
            if t == "symbol":
                cols.append(self.symbols.encode_many(pa.array([str(v) for v in vals])))
            else:
                cols.append(np.array([encode_scalar(v, t, self.word_size) for v in vals],
                                     dtype=np.int64))
        self.engine.add_facts(name, cols)


def _source(program: str | Path | ProgramSource, word_size: int = 32) -> tuple[str, str]:
    """(program text, name used in error locations) for Datalog text, a .dl path or a
    :class:`ProgramSource`; the text is preprocessed and its ``.include``s spliced in
    (see :mod:`host.lang.dl_source`), so that it stands alone (as a store keeps it)."""
    if isinstance(program, ProgramSource):
        return program.text, program.name
    options = SourceOptions(word_size=word_size)
    if isinstance(program, Path):
        src = load_source(program, options)
        return src.text, src.name
    text = str(program)
    if "\n" not in text and text.endswith(".dl") and Path(text).exists():
        src = load_source(text, options)
        return src.text, src.name
    return expand_source(text, "<program>", options), "<program>"


def _columns_of(data: Any, arity: int, relation: str, attrs: list[str]) -> list[Any]:
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        names = [str(n) for n in data.schema.names]
        cols = list(data.columns)
    elif hasattr(data, "iloc") and hasattr(data, "columns"):  # pandas DataFrame
        names = [str(n) for n in data.columns]
        cols = [pa.array(data.iloc[:, i]) if data.iloc[:, i].dtype == object
                else data.iloc[:, i].to_numpy() for i in range(data.shape[1])]
    else:
        arr = np.asarray(data)
        if arr.ndim == 1 and arity == 1:
            arr = arr.reshape(-1, 1)
        if arr.size == 0:
            arr = arr.reshape(0, arity)
        if arr.ndim != 2:
            raise FactsError(f"{relation}: expected a 2-D array of rows, got shape {arr.shape}")
        names = None
        cols = [arr[:, i] for i in range(arr.shape[1])]
    if names is not None and _named(names, attrs):
        return _by_name(cols, names, attrs, relation)
    if len(cols) != arity:
        raise FactsError(f"{relation} has arity {arity}, but the data has {len(cols)} columns")
    return cols


def _named(names: list[str], attrs: list[str]) -> bool:
    """Whether a table's column names are meant as names (not positions)."""
    positional = ([str(i) for i in range(len(names))], [f"c{i}" for i in range(len(names))],
                  [f"f{i}" for i in range(len(names))])
    return bool(attrs) and len(set(attrs)) == len(attrs) and names not in positional


def _by_name(cols: list[Any], names: list[str], attrs: list[str], relation: str) -> list[Any]:
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise FactsError(f"{relation}: the data has two columns named {dup!r}")
    unknown = [n for n in names if n not in attrs]
    if unknown:
        raise FactsError(f"{relation}: column {unknown[0]!r} is not an attribute of "
                         f"{relation}({', '.join(attrs)})")
    missing = [a for a in attrs if a not in names]
    if missing:
        raise FactsError(f"{relation}: no column for attribute {missing[0]!r} of "
                         f"{relation}({', '.join(attrs)}); the data has columns {names}")
    return [cols[names.index(a)] for a in attrs]


def _row_count(data: Any, cols: list[Any]) -> int:
    if cols:
        return len(cols[0])
    if hasattr(data, "num_rows"):
        return int(data.num_rows)
    return len(data)


def _path_in(directory: str | Path, fname: str) -> Path:
    return Path(fname) if Path(fname).is_absolute() else Path(directory) / fname


def _unescape(s: str) -> str:
    return s.encode().decode("unicode_escape") if "\\" in s else s


__all__ = ["Reasoner", "ProgramError", "FactsError"]
