"""Queries over a materialisation: ``Reasoner.query`` and ``gpu-engine query``.

A query is a rule body, ``path(1, X), edge(X, Y), !edge(Y, 3), X < Y``: atoms of any
relation of the program (with constants, variables, ``_`` and functor expressions),
negated atoms, comparisons, and ``;`` between alternatives.  It is read by the program's
own front end as the body of a synthetic rule (``__query__() :- QUERY.``), so it is
checked exactly as a rule body is (declared relations, arities, types, safety) and every
error is a :class:`ProgramError` located in the query text (file ``<query>``).  Each
alternative becomes a rule whose head lists the query's named variables, evaluated by
:func:`gpu_engine.query.evaluate_query` over the current materialisation without
changing it.

The answer is an Arrow table with one column per named variable (``_`` is anonymous), in
the order of their first appearance, one row per distinct answer (set semantics), values
decoded and typed like the attributes they come from (symbols as strings, ``number`` as
int32, ``unsigned`` as uint32, ``float`` as float32), sorted by the columns in order.  A
query without named variables answers with one column ``holds`` and one row: ``true``
when the body holds, ``false`` when it does not.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from gpu_engine.host.lang.dl_aggregate import first_aggregate
from gpu_engine.host.lang.dl_components import expand_components
from gpu_engine.host.lang.dl_fold import word_size_context
from gpu_engine.host.lang.dl_lower import expand_body
from gpu_engine.host.lang.dl_records import flatten_records
from gpu_engine.host.lang.dl_safety import check_safety
from gpu_engine.host.lang.dl_syntax import (
    RuleStmt,
    SAdt,
    SAnd,
    SAtom,
    SCall,
    SCast,
    SCmp,
    SFormula,
    SLiteral,
    SNegAtom,
    SNot,
    SOr,
    SRecord,
    STerm,
    SVar,
    TypeStmt,
)
from gpu_engine.host.lang.dl_typecheck import ClauseTyper
from gpu_engine.host.lang.dl_types import TypeEnv, column_type
from gpu_engine.host.lang.parser import parse_statements

from gpu_engine import ir
from gpu_engine.ir import COLUMN_TYPES, Location, ProgramError
from gpu_engine.query import evaluate_query

from .io import decode_column, float_output_text
from .record_io import format_records

if TYPE_CHECKING:
    from .reasoner import Reasoner

QUERY_FILE = "<query>"
FORMATS = ("tsv", "csv", "json")


@dataclass(frozen=True)
class Query:
    """A checked query: its output columns (named variables and their types) and one
    rule per alternative that can hold (heads list the variables in column order)."""

    text: str
    columns: tuple[tuple[str, ir.ColumnType], ...]
    rules: tuple[ir.Rule, ...]
    # per column: None, or the record/ADT type its ids are printed as (text)
    formats: tuple[ir.RecordFormat | None, ...] = ()


# --- parsing and checking ----------------------------------------------------------------


def parse_query(text: str, relations: dict[str, ir.Relation],
                types: Callable[[], TypeEnv] | None = None,
                demand_only: frozenset[str] = frozenset()) -> Query:
    """Check ``text`` against the program's ``relations`` and lower it to rules.

    ``types`` gives the program's type declarations; it is called only when the query
    casts to a type that is not a base type (``as(X, Id)``).  Relations in
    ``demand_only`` (computed only as far as the outputs demand, by the magic-set
    transformation) cannot be queried: their facts are incomplete."""
    body_text = text.rstrip()
    if body_text.endswith("."):
        body_text = body_text[:-1].rstrip()
    if not body_text.strip():
        raise ProgramError("empty query", Location(QUERY_FILE, 1, 1))
    head = "__query__"
    while head in relations:
        head += "_"
    prefix = f"{head}() :- "
    lines = body_text.split("\n")
    end = Location(QUERY_FILE, len(lines), len(lines[-1]) + 2)  # where the '.' goes
    try:
        return _lower(text, prefix + body_text + " .", head, relations, types, demand_only)
    except ProgramError as exc:
        raise _in_query(exc, len(prefix), end) from None


def _lower(text: str, source: str, head: str, relations: dict[str, ir.Relation],
           types: Callable[[], TypeEnv] | None, demand_only: frozenset[str]) -> Query:
    stmts = parse_statements(source, QUERY_FILE)
    if len(stmts) != 1 or not isinstance(stmts[0], RuleStmt) or stmts[0].body is None:
        extra = stmts[1] if len(stmts) > 1 else stmts[0]
        loc = getattr(extra, "loc", None) or Location(QUERY_FILE, 1, 1)
        raise ProgramError("syntax error: a query is one rule body ('.' ends it)", loc)
    stmt = stmts[0]
    body = stmt.body
    assert body is not None
    if (agg := first_aggregate(body)) is not None:
        raise ProgramError("aggregates are not supported in queries (declare a relation "
                           "with the aggregate in the program)", agg.loc)
    for atom in _surface_atoms(body):
        if atom.relation == head:
            raise ProgramError(f"undeclared relation '{atom.relation}'", atom.loc)
        if atom.relation in demand_only:
            raise ProgramError(f"relation '{atom.relation}' cannot be queried: the program's "
                               "magic-transform pragma computes it only as far as the outputs "
                               "demand it", atom.loc)
    named = _named_variables(body)
    rels = {**relations, head: ir.Relation(head, ())}
    attr_types = _record_attr_types(relations)
    uses_records = attr_types and any(a.relation in attr_types for a in _surface_atoms(body))
    env = (types() if types is not None and (_casts_to_user_types(body) or uses_records)
           else TypeEnv([]))
    vars_head = SAtom(head, tuple(SVar(n, loc) for n, loc in named), stmt.loc)
    empty_head = SAtom(head, (), stmt.loc)
    col_types: dict[str, str] = {}
    rules: list[ir.Rule] = []
    for conj in expand_body(body):
        present = {v.name for lit in conj for v in _literal_vars(lit)}
        for name, loc in named:
            if name not in present:
                raise ProgramError(f"variable '{name}' does not occur in every alternative "
                                   "of the query, so some answers would leave it unbound", loc)
        conj = flatten_records(conj, env)  # record patterns: before the safety check
        check_safety(vars_head, conj)
        typer = ClauseTyper(empty_head, conj, rels, env, attr_types)
        lowered = typer.lower()
        for name, loc in named:
            t = typer.vtypes[name]
            if col_types.setdefault(name, t) != t:
                raise ProgramError(f"type mismatch: variable '{name}' is {col_types[name]} in "
                                   f"one alternative of the query and {t} in another", loc)
        if lowered is None:  # a comparison of constants is false
            continue
        _, lits = lowered
        for lit in lits:
            if not isinstance(lit, (ir.Atom, ir.Negation, ir.Compare)):
                raise ProgramError(f"{type(lit).__name__} is not supported in a query",
                                   getattr(lit, "loc", stmt.loc))
        args = tuple(ir.Var(typer.names[n]) for n, _ in named)
        rules.append(ir.Rule(ir.Atom(head, args, stmt.loc), tuple(lits), stmt.loc))
    columns = tuple((n, column_type(col_types.get(n, "number"))) for n, _ in named)
    formats = tuple(env.format(col_types.get(n, "number")) for n, _ in named)
    return Query(text, columns, tuple(rules),  # type: ignore[arg-type]
                 formats if any(f is not None for f in formats) else ())


def _record_attr_types(relations: dict[str, ir.Relation]) -> dict[str, tuple[str, ...]]:
    """Front-end attribute types of the relations with record/ADT columns."""
    return {name: tuple(t if f is None else f"{f.kind} {f.name}"
                        for (_, t), f in zip(rel.attributes, rel.formats))
            for name, rel in relations.items() if rel.formats}


def _in_query(exc: ProgramError, prefix: int, end: Location) -> ProgramError:
    """The error with its location in the query text as the user wrote it."""
    loc = exc.loc
    if loc is None or loc.file != QUERY_FILE:
        return exc
    message = exc.message
    if loc.line == 1:
        loc = Location(QUERY_FILE, 1, max(1, loc.column - prefix))
    if (loc.line, loc.column) == (end.line, end.column):  # at the '.' we appended
        message = message.replace("unexpected '.'", "unexpected end of the query")
        loc = Location(QUERY_FILE, end.line, end.column - 1)
    return ProgramError(message, loc)


def _formula_items(f: SFormula) -> Iterator[SFormula]:
    """Atoms and comparisons of a formula, in source order."""
    if isinstance(f, (SAnd, SOr)):
        for item in f.items:
            yield from _formula_items(item)
    elif isinstance(f, SNot):
        yield from _formula_items(f.inner)
    else:
        yield f


def _surface_atoms(f: SFormula) -> Iterator[SAtom]:
    return (x for x in _formula_items(f) if isinstance(x, SAtom))


def _term_nodes(t: STerm) -> Iterator[STerm]:
    yield t
    if isinstance(t, (SCall, SRecord, SAdt)):
        for a in t.args:
            yield from _term_nodes(a)
    elif isinstance(t, SCast):
        yield from _term_nodes(t.arg)


def _item_terms(x: SFormula | SLiteral) -> Iterator[STerm]:
    if isinstance(x, SNegAtom):
        x = x.atom
    terms = x.args if isinstance(x, SAtom) else (x.left, x.right) if isinstance(x, SCmp) else ()
    for t in terms:
        yield from _term_nodes(t)


def _literal_vars(lit: SLiteral) -> Iterator[SVar]:
    return (t for t in _item_terms(lit) if isinstance(t, SVar))


def _named_variables(f: SFormula) -> list[tuple[str, Location]]:
    """The named variables of a query with their first occurrence, in textual order."""
    first: dict[str, Location] = {}
    for item in _formula_items(f):
        for t in _item_terms(item):
            if isinstance(t, SVar):
                loc = first.get(t.name)
                if loc is None or (t.loc.line, t.loc.column) < (loc.line, loc.column):
                    first[t.name] = t.loc
    return sorted(first.items(), key=lambda kv: (kv[1].line, kv[1].column))


def _casts_to_user_types(f: SFormula) -> bool:
    return any(isinstance(t, SCast) and t.type_name not in COLUMN_TYPES
               for item in _formula_items(f) for t in _item_terms(item))


# --- evaluation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryResult:
    """The answer of a query: the decoded table and the output columns' types."""

    table: pa.Table
    columns: tuple[tuple[str, ir.ColumnType], ...]

    @property
    def holds_only(self) -> bool:
        """A query without named variables (one boolean ``holds``)."""
        return not self.columns


def answer(reasoner: Reasoner, text: str, limit: int | None = None) -> QueryResult:
    """Evaluate ``text`` over the reasoner's materialisation (see the module docstring)."""
    engine = reasoner.engine
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be at least 0, not {limit}")
    with word_size_context(getattr(reasoner, "word_size", 32)):  # constants of the query
        q = parse_query(text, reasoner.program.relations, lambda: program_types(reasoner),
                        reasoner.parsed.demand_only)
    reasoner._ensure()
    symbols = reasoner.symbols
    rules = [r for r in (_without_unknown_symbols(r, symbols) for r in q.rules) if r]
    before = len(symbols)
    try:  # functors may add symbols to the dictionary: they go again after decoding
        if reasoner.program.equality is not None:  # rewritten relations: host/equality_query
            from .equality_query import evaluate as evaluate_eq

            cols, n = evaluate_eq(reasoner, q, rules, _prefix_len(reasoner.program.relations))
        else:
            cols, n = evaluate_query(engine, rules, len(q.columns))
        table = _decode(q, cols, n, symbols)
    finally:
        if len(symbols) > before:
            symbols.truncate(before)
    if limit is not None:
        table = table.slice(0, limit)
    return QueryResult(table, q.columns)


def _prefix_len(relations: dict[str, ir.Relation]) -> int:
    """Length of the synthetic rule head ``parse_query`` puts before the query text."""
    head = "__query__"
    while head in relations:
        head += "_"
    return len(f"{head}() :- ")


def program_types(reasoner: Reasoner) -> TypeEnv:
    """The type declarations of the reasoner's program (parsed once, on first need)."""
    env = reasoner.__dict__.get("_query_types")
    if env is None:
        stmts = expand_components(parse_statements(reasoner.source_text, reasoner.source_name))
        env = TypeEnv([s for s in stmts if isinstance(s, TypeStmt)])
        reasoner.__dict__["_query_types"] = env
    return env


def _without_unknown_symbols(rule: ir.Rule, symbols: object) -> ir.Rule | None:
    """The rule without what a symbol constant missing from the dictionary decides, so
    that looking the symbol up need not add it: a positive atom with one matches no fact
    (the rule is dropped: None), a negated atom with one never holds (it is removed)."""
    lookup = getattr(symbols, "find", None)
    if lookup is None:
        return rule

    def unknown(atom: ir.Atom) -> bool:
        return any(isinstance(t, ir.Const) and t.type == "symbol" and lookup(str(t.value)) is None
                   for t in atom.args)

    body = []
    for lit in rule.body:
        if isinstance(lit, ir.Atom) and unknown(lit):
            return None
        if not (isinstance(lit, ir.Negation) and unknown(lit.atom)):
            body.append(lit)
    return rule if len(body) == len(rule.body) else ir.Rule(rule.head, tuple(body), rule.loc)


def _decode(q: Query, cols: tuple[np.ndarray, ...], n: int, symbols: object) -> pa.Table:
    if not q.columns:
        return pa.table({"holds": pa.array([n > 0], pa.bool_())})
    arrays = [decode_column(c, t, symbols) if not q.formats or q.formats[i] is None
              else format_records(c, q.formats[i], symbols)  # type: ignore[arg-type]
              for i, (c, (_, t)) in enumerate(zip(cols, q.columns))]
    table = pa.table(arrays, names=[name for name, _ in q.columns])
    if n > 1:
        order = pc.sort_indices(table, sort_keys=[(name, "ascending") for name, _ in q.columns])
        table = table.take(order)
    return table


# --- output -------------------------------------------------------------------------------


def format_result(result: QueryResult, fmt: str = "tsv", header: bool = False) -> str:
    """The answer as text: ``tsv`` (values as Soufflé prints them, tab-separated), ``csv``
    (RFC 4180 quoting) or ``json`` (an array of objects, one per row)."""
    table = result.table
    if fmt == "json":
        rows = table.to_pylist()
        for row in rows:
            for k, v in row.items():
                if isinstance(v, float) and not np.isfinite(v):
                    row[k] = _float_text(v)
        return json.dumps(rows, ensure_ascii=False) + "\n"
    texts = [_text(table.column(i).combine_chunks(), t)
             for i, (_, t) in enumerate(result.columns or (("holds", "bool"),))]
    names = table.column_names
    if fmt == "csv":  # quotes only values that need them (RFC 4180)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        if header:
            writer.writerow(names)
        writer.writerows(zip(*(t.to_pylist() for t in texts)))
        return buf.getvalue()
    if fmt != "tsv":
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    out = "\t".join(names) + "\n" if header else ""
    if table.num_rows == 0:
        return out
    lines = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, "\t")
    return out + "\n".join(lines.to_pylist()) + "\n"


def _text(arr: pa.Array, typ: str) -> pa.Array:
    """A decoded column as text, the way Soufflé prints it."""
    if typ == "symbol":
        return arr
    if typ != "float":
        return pc.cast(arr, pa.string())
    vals = arr.to_numpy(zero_copy_only=False)
    uniq, inv = np.unique(vals, return_inverse=True)
    text = pa.array([_float_text(v) for v in uniq], type=pa.string())
    return text.take(pa.array(inv.reshape(-1)))


def _float_text(v: float) -> str:
    """As the CSV writer prints it (:func:`float_output_text`)."""
    digits = 17 if isinstance(v, np.float64) else 9  # float64 with 64-bit words
    return float_output_text(v if isinstance(v, np.floating) else np.float32(v), digits)


__all__ = ["Query", "QueryResult", "answer", "format_result", "parse_query", "QUERY_FILE"]
