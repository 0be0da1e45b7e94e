"""Peer engines run on the same data as gpu-engine: DuckDB, clingo, Nemo and Soufflé.

Every peer answers a :class:`Workload` with a :class:`PeerResult`: seconds to load,
seconds to materialise, and the number of IDB facts (per output relation and in total).
A peer that is not installed, or cannot express a program, returns a result whose
``skipped`` field says why; that is never an error.

What each peer's times cover:

* ``duckdb``: load = register the Arrow table and copy it into a table; materialise =
  ``CREATE TABLE ... AS WITH RECURSIVE ... UNION`` (set semantics). Linear recursion
  only (tc-linear, sg): DuckDB's recursive term sees just the previous iteration's rows,
  so non-linear TC is not expressible and is skipped; LUBM is skipped too.
* ``clingo``: load = build the ASP facts text (vectorised) and parse it with the rules;
  materialise = grounding (gringo evaluates the positive program completely).
* ``nemo`` (nemo-python): load = write the input file (graphs) and parse the program;
  materialise = ``reason()``, which includes Nemo's own import of the input file
  (CSV, or the N-Triples file for LUBM).
* ``souffle`` (binary on PATH, interpreter ``souffle -F -D``): load = write ``.facts``
  files; materialise = the whole ``souffle`` run (parsing its input included).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from benchmarks.lubm_rules import EDB, Term
from benchmarks.lubm_rules import Program as DlogProgram

__all__ = ["Workload", "PeerResult", "PEERS", "run_peer", "peer_names", "unsupported", "write_tsv"]


@dataclass
class Workload:
    """One benchmark input: a program and its data.

    For graph benchmarks ``edges`` is an ``(m, 2)`` int64 array and ``program`` one of
    ``tc-linear``, ``tc-nonlinear``, ``sg``. For LUBM ``triples`` is the ``(s, p, o)``
    table, ``nt_path`` the N-Triples file and ``dlog`` the parsed rule set.
    """

    program: str
    outputs: tuple[str, ...]
    edges: np.ndarray | None = None
    triples: pa.Table | None = None
    nt_path: Path | None = None
    dlog: DlogProgram | None = None
    souffle_text: str | None = None
    edb: str = "edge"

    @property
    def is_lubm(self) -> bool:
        """Whether this is a LUBM workload (triples + rule set)."""
        return self.dlog is not None


@dataclass
class PeerResult:
    """Outcome of one peer on one workload."""

    engine: str
    load_seconds: float | None = None
    materialise_seconds: float | None = None
    facts: int | None = None
    per_relation: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def _concat_strings(arr: pa.Array | pa.ChunkedArray) -> str:
    """Concatenate a string array without nulls into one Python string (zero-copy slice)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return ""
    if arr.null_count:
        raise ValueError("nulls in string array")
    off_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=off_type)[arr.offset : arr.offset + len(arr) + 1]
    data = arr.buffers()[2]
    return data.slice(int(offsets[0]), int(offsets[-1] - offsets[0])).to_pybytes().decode("utf-8")


def write_tsv(table: pa.Table, path: Path) -> None:
    """Write a table as tab-separated lines, values verbatim (no quoting), vectorised."""
    cols = [pc.cast(c, pa.string()) if not pa.types.is_string(c.type) else c
            for c in table.columns]
    lines = pc.binary_join_element_wise(*cols, "\t")
    lines = pc.binary_join_element_wise(lines, "\n", "")
    Path(path).write_text(_concat_strings(lines), encoding="utf-8")


def _asp_string(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Escape text for the inside of an ASP string literal."""
    col = pc.replace_substring(col, "\\", "\\\\")
    col = pc.replace_substring(col, '"', '\\"')
    return pc.replace_substring(col, "\n", "\\n")


def _edge_strings(edges: np.ndarray) -> tuple[pa.Array, pa.Array]:
    return (
        pc.cast(pa.array(edges[:, 0]), pa.string()),
        pc.cast(pa.array(edges[:, 1]), pa.string()),
    )


def _children_maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


# --------------------------------------------------------------------------- DuckDB

_DUCKDB_SQL = {
    "tc-linear": (
        "path",
        "WITH RECURSIVE path(x, y) AS (SELECT x, y FROM edge UNION "
        "SELECT p.x, e.y FROM path p JOIN edge e ON p.y = e.x) SELECT x, y FROM path",
    ),
    "sg": (
        "sg",
        "WITH RECURSIVE sg(x, y) AS ("
        "SELECT e1.y, e2.y FROM edge e1 JOIN edge e2 ON e1.x = e2.x WHERE e1.y <> e2.y "
        "UNION SELECT e1.y, e2.y FROM sg JOIN edge e1 ON e1.x = sg.x "
        "JOIN edge e2 ON e2.x = sg.y) SELECT x, y FROM sg",
    ),
}


_DUCKDB_LUBM_SKIP = "LUBM rule sets are not expressed as a recursive CTE"
_DUCKDB_NONLINEAR_SKIP = (
    "WITH RECURSIVE sees only the previous iteration's rows: non-linear recursion is not expressible"
)


def _duckdb_available() -> str | None:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return "duckdb is not installed"
    return None


def _duckdb_run(w: Workload) -> PeerResult:
    import duckdb

    res = PeerResult("duckdb", extra={"version": duckdb.__version__})
    reason = unsupported("duckdb", w.program, w.is_lubm)
    if reason:
        res.skipped = reason
        return res
    assert w.edges is not None
    rel, sql = _DUCKDB_SQL[w.program]
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false").fetchall()
    t0 = time.perf_counter()
    edge_arrow = pa.table({"x": w.edges[:, 0], "y": w.edges[:, 1]})
    con.register("edge_src", edge_arrow)
    con.execute("CREATE TABLE edge AS SELECT x, y FROM edge_src").fetchall()
    t1 = time.perf_counter()
    con.execute(f"CREATE TABLE result AS {sql}").fetchall()
    t2 = time.perf_counter()
    n = int(con.execute("SELECT count(*) FROM result").fetchall()[0][0])
    con.close()
    res.load_seconds, res.materialise_seconds = t1 - t0, t2 - t1
    res.per_relation = {rel: n}
    res.facts = n
    return res


# --------------------------------------------------------------------------- clingo

_CLINGO_RULES = {
    "tc-linear": "path(X,Y) :- edge(X,Y).\npath(X,Z) :- path(X,Y), edge(Y,Z).\n",
    "tc-nonlinear": "path(X,Y) :- edge(X,Y).\npath(X,Z) :- path(X,Y), path(Y,Z).\n",
    "sg": "sg(X,Y) :- edge(P,X), edge(P,Y), X != Y.\nsg(X,Y) :- edge(A,X), sg(A,B), edge(B,Y).\n",
}


def _clingo_available() -> str | None:
    try:
        import clingo  # noqa: F401
    except ImportError:
        return "clingo is not installed"
    return None


def _asp_term(t: Term) -> str:
    if t.is_var:
        return t.text
    return '"' + t.text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dlog_to_asp(prog: DlogProgram) -> str:
    """A ``.dlog`` rule set as ASP rules (``RPn`` -> ``rpn``, constants as ASP strings)."""
    lines = []
    for rule in prog.rules:

        def atom(a, _lower=str.lower) -> str:
            return f"{_lower(a.pred)}({','.join(_asp_term(t) for t in a.args)})"

        body = ", ".join(atom(a) for a in rule.body)
        lines.append(f"{atom(rule.head)} :- {body}." if body else f"{atom(rule.head)}.")
    return "\n".join(lines) + "\n"


def _clingo_counts(ctl, signatures: list[tuple[str, int, str]]) -> dict[str, int]:
    """Count the atoms of each output predicate with ``#count`` aggregates (untimed step)."""
    parts = []
    for i, (name, arity, _) in enumerate(signatures):
        args = ",".join(f"V{j}" for j in range(arity))
        atom = f"{name}({args})" if arity else name
        parts.append(f"bench_count_({i},N) :- N = #count{{ {args or 1} : {atom} }}.")
    ctl.add("bench_count", [], "\n".join(parts))
    ctl.ground([("bench_count", [])])
    counts = {rel: 0 for _, _, rel in signatures}
    for sa in ctl.symbolic_atoms.by_signature("bench_count_", 2):
        i, n = (a.number for a in sa.symbol.arguments)
        counts[signatures[i][2]] = n
    return counts


def _clingo_run(w: Workload) -> PeerResult:
    import clingo

    res = PeerResult("clingo", extra={"version": clingo.__version__})
    t0 = time.perf_counter()
    if w.is_lubm:
        assert w.triples is not None and w.dlog is not None
        t = w.triples
        facts_arr = pc.binary_join_element_wise(
            'te("', _asp_string(t["s"]), '","', _asp_string(t["p"]), '","',
            _asp_string(t["o"]), '").\n', "",
        )
        rules = dlog_to_asp(w.dlog)
        signatures = [(p.lower(), w.dlog.arity[p], p) for p in w.outputs]
    else:
        if w.program not in _CLINGO_RULES:
            res.skipped = f"no ASP encoding for {w.program}"
            return res
        assert w.edges is not None
        a, b = _edge_strings(w.edges)
        facts_arr = pc.binary_join_element_wise("edge(", a, ",", b, ").\n", "")
        rules = _CLINGO_RULES[w.program]
        signatures = [(rel, 2, rel) for rel in w.outputs]
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], _concat_strings(facts_arr) + rules)
    t1 = time.perf_counter()
    ctl.ground([("base", [])])
    t2 = time.perf_counter()
    counts = _clingo_counts(ctl, signatures)
    res.load_seconds, res.materialise_seconds = t1 - t0, t2 - t1
    res.per_relation = counts
    res.facts = sum(counts.values())
    return res


# --------------------------------------------------------------------------- Nemo

_NEMO_RULES = {
    "tc-linear": "path(?X,?Y) :- edge(?X,?Y).\npath(?X,?Z) :- path(?X,?Y), edge(?Y,?Z).\n",
    "tc-nonlinear": "path(?X,?Y) :- edge(?X,?Y).\npath(?X,?Z) :- path(?X,?Y), path(?Y,?Z).\n",
    "sg": (
        "sg(?X,?Y) :- edge(?P,?X), edge(?P,?Y), ?X != ?Y.\n"
        "sg(?X,?Y) :- edge(?A,?X), sg(?A,?B), edge(?B,?Y).\n"
    ),
}


def _nemo_available() -> str | None:
    try:
        import nmo_python  # noqa: F401
    except ImportError:
        return "nemo-python is not installed (pip install nemo-python)"
    return None


def _nemo_term(t: Term) -> str:
    if t.is_var:
        return f"?{t.text}"
    return t.text  # IRIs <...> and quoted literals are Nemo constants as written


def dlog_to_nemo(prog: DlogProgram, nt_path: Path) -> str:
    """A ``.dlog`` rule set as a Nemo program importing ``TE`` from an N-Triples file."""
    lines = [f'@import {EDB} :- ntriples{{resource="{nt_path}"}}.']
    for rule in prog.rules:

        def atom(a) -> str:
            return f"{a.pred}({','.join(_nemo_term(t) for t in a.args)})"

        body = ", ".join(atom(a) for a in rule.body)
        lines.append(f"{atom(rule.head)} :- {body}." if body else f"{atom(rule.head)}.")
    lines.extend(f"@output {p}." for p in prog.idb_predicates)
    return "\n".join(lines) + "\n"


def _nemo_run(w: Workload) -> PeerResult:
    import nmo_python

    res = PeerResult("nemo")
    with tempfile.TemporaryDirectory(prefix="nemo-bench-") as tmp:
        t0 = time.perf_counter()
        if w.is_lubm:
            assert w.nt_path is not None and w.dlog is not None
            text = dlog_to_nemo(w.dlog, Path(w.nt_path).resolve())
        else:
            if w.program not in _NEMO_RULES:
                res.skipped = f"no Nemo encoding for {w.program}"
                return res
            assert w.edges is not None
            csv_path = Path(tmp) / "edge.csv"
            a, b = _edge_strings(w.edges)
            pacsv.write_csv(
                pa.table({"x": a, "y": b}),
                csv_path,
                pacsv.WriteOptions(include_header=False, quoting_style="none"),
            )
            outputs = "".join(f"@output {rel}.\n" for rel in w.outputs)
            text = f'@import edge :- csv{{resource="{csv_path}"}}.\n' + _NEMO_RULES[w.program] + outputs
        prog = nmo_python.load_string(text)
        engine = nmo_python.NemoEngine(prog)
        t1 = time.perf_counter()
        engine.reason()
        t2 = time.perf_counter()
        counts = {rel: sum(1 for _ in engine.result(rel)) for rel in w.outputs}
    res.load_seconds, res.materialise_seconds = t1 - t0, t2 - t1
    res.per_relation = counts
    res.facts = sum(counts.values())
    res.extra["note"] = "materialise_seconds include Nemo's import of the input file"
    return res


# --------------------------------------------------------------------------- Soufflé


def _souffle_available() -> str | None:
    if shutil.which("souffle") is None:
        return "no souffle binary on PATH"
    return None


def _souffle_run(w: Workload) -> PeerResult:
    res = PeerResult("souffle")
    if w.souffle_text is None:
        res.skipped = "no Soufflé program text"
        return res
    with tempfile.TemporaryDirectory(prefix="souffle-bench-") as tmp:
        tmp_path = Path(tmp)
        facts_dir, out_dir = tmp_path / "facts", tmp_path / "out"
        facts_dir.mkdir()
        out_dir.mkdir()
        t0 = time.perf_counter()
        if w.is_lubm:
            assert w.triples is not None
            table = w.triples
        else:
            assert w.edges is not None
            table = pa.table({"x": w.edges[:, 0], "y": w.edges[:, 1]})
        write_tsv(table, facts_dir / f"{w.edb}.facts")
        prog_path = tmp_path / "program.dl"
        text = w.souffle_text
        if not re.search(rf"^\.input\s+{w.edb}\b", text, re.M):
            text += f"\n.input {w.edb}\n"
        prog_path.write_text(text, encoding="utf-8")
        t1 = time.perf_counter()
        proc = subprocess.run(
            ["souffle", "-F", str(facts_dir), "-D", str(out_dir), str(prog_path)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        t2 = time.perf_counter()
        if proc.returncode != 0:
            res.skipped = f"souffle failed ({proc.returncode}): {proc.stderr.strip()[:300]}"
            return res
        counts = {}
        for rel in w.outputs:
            f = out_dir / f"{rel}.csv"
            counts[rel] = f.read_bytes().count(b"\n") if f.exists() else 0
    res.load_seconds, res.materialise_seconds = t1 - t0, t2 - t1
    res.per_relation = counts
    res.facts = sum(counts.values())
    res.extra["souffle_peak_rss_bytes"] = _children_maxrss()
    res.extra["note"] = "materialise_seconds are the whole souffle run, input parsing included"
    return res


# --------------------------------------------------------------------------- registry

PEERS = {
    "duckdb": (_duckdb_available, _duckdb_run),
    "clingo": (_clingo_available, _clingo_run),
    "nemo": (_nemo_available, _nemo_run),
    "souffle": (_souffle_available, _souffle_run),
}


def peer_names() -> list[str]:
    """Names of all known peers."""
    return list(PEERS)


def unsupported(name: str, program: str, is_lubm: bool) -> str | None:
    """Why a peer cannot express a program (known before any data is loaded), or ``None``."""
    if name == "duckdb":
        if is_lubm:
            return _DUCKDB_LUBM_SKIP
        if program not in _DUCKDB_SQL:
            return _DUCKDB_NONLINEAR_SKIP
    return None


def run_peer(name: str, workload: Workload) -> PeerResult:
    """Run one peer on a workload; a missing peer is reported as skipped."""
    if name not in PEERS:
        return PeerResult(name, skipped=f"unknown peer {name!r}")
    available, run = PEERS[name]
    reason = available()
    if reason is not None:
        return PeerResult(name, skipped=reason)
    return run(workload)
