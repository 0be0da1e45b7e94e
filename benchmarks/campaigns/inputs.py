"""``make fuzz-inputs``: malformed input, judged for clear errors and atomic writes.

Case ``i`` (seed ``s = seed + i``, ``random.Random(s)`` drives every choice) belongs to one of
six kinds, in turn:

- ``program``: a valid program (a hand-written one with number/symbol/unsigned/float and
  nullary relations, or a generated one) mutated by 1-3 byte flips, truncations, token
  deletions/duplications/swaps, line deletions/duplications, or insertions of random UTF-8,
  invalid bytes and control characters; sometimes its second ``.output`` goes to a file that
  cannot be written (a directory, a missing folder, a character device made in the case's
  folder like ``/dev/null``); then ``gpu-engine run``;
- ``csv``: one fact file of that program (tab, comma or nullary) with a wrong column count,
  a bad or huge number, odd bytes in a field, an embedded delimiter or quote, empty or blank
  lines, CRLF, a BOM, a very long field, or byte mutations; sometimes an odd ``delimiter=``;
  or (two cases in five) the IO-parameter program (``rfc4180=true, headers=true`` input,
  ``delimiter="::"`` output, unsigned/float, a nullary input) with every fact file left
  valid or edited (junk strings, deletions, huge numbers, truncated gzip) and now and then
  one missing;
- ``parquet``: an ``IO=parquet`` input with a wrong schema (names, types, nulls, extra or
  missing columns, nested types), corrupted or truncated bytes, or a Spark-style directory
  with a bad part;
- ``ntriples``: a mutated N-Triples file read by ``host.ntriples.read_ntriples`` (the reader
  the demo and the benchmarks use; the CLI has no N-Triples input);
- ``store``: a copy of a store made by ``run --store`` with one file corrupted, truncated,
  deleted or edited (``CURRENT``, ``meta.json``, ``program.dl`` included), then ``export`` or
  ``update``;
- ``cli``: a random argument list over the real flags, odd values and paths; or (one in
  five) a valid ``run``/``update``/``export`` with odd options added (``--stats-json PATH``)
  or flags and values inserted anywhere in it;
  or (one in five) ``explain``/``query`` over the store with a mutated fact or query.

The CLI runs in-process (``gpu_engine.host.cli.main``) with the working directory inside the
case's own folder.  The judge: the run succeeds, or exits nonzero with a one-line error
(argparse's usage lines are allowed); never an exception escaping ``main`` or "Traceback" on
stderr (``traceback``), never more than one error line (``unclear_error``), never a changed
or half-written output directory or store after a failure, nor a temporary file left behind
(``partial_write``), nor a success that did not write every output (``missing_output``); a
store that was corrupted must not be read as if it were intact (``silent_corruption``: a
success whose output differs from the uncorrupted store's).
An error about a program or fact file without ``file:line:col`` (an N-Triples file: without
``file:line``) is a failure too (``no_location``); other errors that name no file are
counted (``errors_without_file``) with samples.
"""

from __future__ import annotations

import contextlib
import io as _io
import json
import os
import random
import re
import shutil
import stat
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .common import Campaign, CaseTimeout, cli_args, run_cli, snapshot, temp_leftovers, time_limit
from .mutate import mutate_bytes, mutate_fields, mutate_junk, random_text

KINDS = ("program", "csv", "parquet", "ntriples", "store", "cli")
TIMEOUT = 20.0

TYPES_PROGRAM = """\
.decl n(a: number, b: symbol)
.input n
.decl u(x: unsigned, f: float)
.input u(delimiter=",")
.decl z()
.input z
.decl out1(a: number, b: symbol)
.output out1
.decl out2(x: unsigned, f: float, k: number)
.output out2
.decl out3()
.output out3
out1(a, b) :- n(a, b), a > 0.
out2(x, f, c) :- u(x, f), n(c, "a").
out3() :- z(), n(1, "a").
"""
TYPES_OUTPUTS = ("out1.csv", "out2.csv", "out3.csv")

FORMATS_PROGRAM = """\
.decl e(x: number, s: symbol)
.input e
.decl f(u: unsigned, z: float)
.input f(delimiter=",")
.decl g(a: symbol, b: number)
.input g(rfc4180=true, headers=true)
.decl n()
.input n
.decl out(x: number, s: symbol, z: float)
.output out
.decl g2(a: symbol, b: number)
.output g2(delimiter="::")
out(x, s, z) :- e(x, s), f(u, z), x < 5, u < 5.
g2(a, b) :- g(a, b), n().
"""
FORMATS_FACTS = {"e.facts": b"1\ta\n2\tb c\n3\t\n",
                 "f.facts": b"1,0.5\n2,-1e3\n4294967295,inf\n",
                 "g.facts": b'a,b\n"x,y",1\n"q""q",-2\nplain,3\n',
                 "n.facts": b"\n"}
FORMATS_OUTPUTS = ("out.csv", "g2.csv")

PARQUET_PROGRAM = """\
.decl p(a: number, b: symbol)
.input p(IO=parquet)
.decl q(a: number, b: symbol)
.output q
q(a, b) :- p(a, b), a != 3.
"""

TC_PROGRAM = """\
.decl edge(x: number, y: symbol)
.input edge
.decl node(x: symbol)
.input node
.decl path(x: symbol, y: symbol)
.output path
.decl far(x: number, y: symbol)
.output far
path(x, y) :- node(x), node(y), x = y.
path(x, z) :- path(x, y), node(z), edge(n, z), n > 0, y != z.
far(n, y) :- edge(n, y), !node(y).
"""

NT_SAMPLE = """\
<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .
<http://ex.org/a> <http://ex.org/name> "Alice" .
_:b1 <http://ex.org/p> "text with spaces"@en-GB .
<http://ex.org/b> <http://ex.org/age> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .
# a comment
<http://ex.org/c> <http://ex.org/q> _:b1 . # trailing comment

<http://ex.org/d>\t<http://ex.org/p>\t"esc \\" quote" .
"""

LOC_RE = re.compile(r":\d+:\d+")


# --- valid material --------------------------------------------------------------------------


def _symbol(rng: random.Random) -> str:
    return rng.choice(["a", "b", "x y", "é", "", "q\"r", "𝔘", "long" * rng.randint(1, 5)])


def types_facts(rng: random.Random) -> dict[str, bytes]:
    """Valid fact files of TYPES_PROGRAM."""
    n = "".join(f"{rng.randint(-5, 9)}\t{_symbol(rng)}\n" for _ in range(rng.randint(1, 8)))
    n += "1\ta\n"
    u = "".join(f"{rng.randint(0, 99)},{rng.choice(['1.5', '-2e3', '0', '7', '3.25'])}\n"
                for _ in range(rng.randint(1, 6)))
    return {"n.facts": n.encode(), "u.facts": u.encode(), "z.facts": b"()\n"}


def write_files(d: Path, files: dict[str, bytes]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (d / name).write_bytes(data)


def old_outputs(d: Path, names: tuple[str, ...] | list[str]) -> None:
    """An output directory holding an "old" version of every output file."""
    d.mkdir(parents=True, exist_ok=True)
    for name in names:
        (d / name).write_text("OLD\tcontents\n")


def store_state(store: Path) -> dict[str, bytes]:
    """The store's committed files (CURRENT and the current version), not LOCK or leftovers."""
    cur = store / "CURRENT"
    if not cur.is_file():
        return snapshot(store)
    out = {"CURRENT": cur.read_bytes()}
    name = cur.read_bytes().decode("utf-8", "replace").strip()
    if name and (store / name).is_dir() and "/" not in name and name not in (".", ".."):
        out.update({f"{name}/{k}": v for k, v in snapshot(store / name).items()})
    return out


@contextlib.contextmanager
def cwd(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


# --- the judge -------------------------------------------------------------------------------


class Judge:
    """Runs one case's CLI call and records what breaks the rules."""

    def __init__(self, c: Campaign, device: str) -> None:
        self.c = c
        self.device = device
        self.noloc: list[str] = []

    def error_line(self, kind: str, seed: int, line: str, repro: str) -> None:
        """Text inputs (programs, fact files) must be blamed at file:line:col; other errors
        should name a file (counted with samples, not failures: binary files and stores have
        no lines, and a bad flag value has no file)."""
        self.c.count("errors")
        if kind in ("program", "csv"):
            # an output that cannot be written is named by its path (it is not program text)
            if (not LOC_RE.search(line) and not re.search(r"\[Errno \d+\].*'[^']+'", line)
                    and not re.search(r"cannot write output /", line)):
                self.c.fail("no_location", seed, line, repro, input_kind=kind)
            return
        if "/" not in line and ".dl" not in line and kind != "cli":
            self.c.count("errors_without_file")
            if len(self.noloc) < 40:
                self.noloc.append(f"[{kind}] {line[:300]}")

    def cli(self, kind: str, seed: int, args: list[str], repro: str, *,
            outs: tuple[Path, ...] = (), stores: tuple[Path, ...] = (),
            written: tuple[Path, ...] = ()) -> Any:
        """Run ``gpu-engine ARGS``; check the error rules and the output directories (and
        that a success wrote the files ``written``)."""
        c = self.c
        before = {d: snapshot(d) for d in outs}
        sbefore = {s: store_state(s) for s in stores}
        res = run_cli(args, timeout=TIMEOUT)
        c.count("inputs")
        c.count(f"{kind}_inputs")
        repro = f"gpu-engine {' '.join(args)}\n{repro}"
        if res.timeout:
            c.count("timeouts")
            return res
        problem = res.problem()
        if problem == "traceback":
            c.fail("traceback", seed, res.traceback or "", repro, input_kind=kind)
        elif problem:
            c.fail("unclear_error", seed, f"{problem}: exit {res.rc}\n{res.stderr}", repro,
                   input_kind=kind)
        c.count("accepted" if res.rc == 0 else "rejected")
        if res.rc not in (0, 2) and not res.traceback:
            lines = [ln for ln in res.stderr.split("\n") if ln.strip()
                     and not ln.startswith(("note: ", "warning: "))]
            if lines:
                self.error_line(kind, seed, lines[-1], repro)
        for d in outs:
            left = temp_leftovers(d)
            if left:
                c.fail("partial_write", seed, f"temporary files left in {d.name}: {left}\n"
                       f"exit {res.rc}: {res.stderr}", repro, input_kind=kind)
            elif res.rc != 0 and snapshot(d) != before[d]:
                changed = sorted(k for k in set(before[d]) | set(snapshot(d))
                                 if before[d].get(k) != snapshot(d).get(k))
                c.fail("partial_write", seed, f"failed run changed {d.name}: {changed}\n"
                       f"exit {res.rc}: {res.stderr}", repro, input_kind=kind)
        missing = [p.name for p in written if not p.exists()] if res.rc == 0 else []
        if missing:
            c.fail("missing_output", seed, f"a successful run did not write {missing}",
                   repro, input_kind=kind)
        for s in stores:
            if res.rc != 0 and store_state(s) != sbefore[s]:
                c.fail("partial_write", seed, f"failed run changed the store {s.name}\n"
                       f"exit {res.rc}: {res.stderr}", repro, input_kind=kind)
        return res


def _show(name: str, data: bytes, limit: int = 2500) -> str:
    text = repr(data[:limit]) + ("..." if len(data) > limit else "")
    return f"--- {name} ({len(data)} bytes) ---\n{text}\n"


# --- the kinds ---------------------------------------------------------------------------------


def case_program(j: Judge, s: int, rng: random.Random, d: Path, ctx: dict[str, Any]) -> None:
    files = types_facts(rng)
    text, outputs = TYPES_PROGRAM.encode(), list(TYPES_OUTPUTS)
    if rng.random() < 0.5:
        from generators import render_program

        from .programs import DrawRejected, program_for
        try:
            prog = program_for(s)
            text = render_program(prog, inputs=True).encode()
            files = {f"{k}.facts": "".join("\t".join(map(str, r)) + "\n" for r in v).encode()
                     for k, v in prog.facts.items()}
            outputs = [f"{r.name}.csv" for r in prog.relations]
        except DrawRejected:
            pass
    if rng.random() < 0.15 and text == TYPES_PROGRAM.encode():  # an output that cannot be
        dest = rng.choice(["blocked", "missing/deep.csv", "devnull", "out1.csv",  # written
                           "blocked/x.csv"])
        text = text.replace(b".output out2\n", f'.output out2(filename="{dest}")\n'.encode())
        (d / "out" / "blocked").mkdir(parents=True)
        if dest == "devnull":  # a character device like /dev/null, inside the case folder
            try:
                os.mknod(d / "out" / "devnull", stat.S_IFCHR | 0o666, os.makedev(1, 3))
            except OSError:
                dest = "blocked"
        mutated, ops = (mutate_bytes(text, rng) if rng.random() < 0.3 else (text, []))
        ops.append(f"out2 to {dest}")
    else:
        mutated, ops = mutate_bytes(text, rng)
    (d / "prog.dl").write_bytes(mutated)
    write_files(d / "facts", files)
    old_outputs(d / "out", outputs)
    repro = f"mutations {ops}\n" + _show("prog.dl", mutated)
    j.cli("program", s, ["run", str(d / "prog.dl"), "-F", str(d / "facts"), "-D",
                         str(d / "out"), "--device", j.device, "--quiet"],
          repro, outs=(d / "out",))
    dev = d / "out" / "devnull"
    if (dev.exists() or dev.is_symlink()) and not stat.S_ISCHR(os.lstat(dev).st_mode):
        j.c.fail("special_file_replaced", s, "writing an output to a character device "
                 "replaced the device node with a regular file", repro, input_kind="program")


def case_formats(j: Judge, s: int, rng: random.Random, d: Path) -> None:
    """The IO-parameter program, each fact file valid or edited, sometimes one missing."""
    files, ops = dict(FORMATS_FACTS), []
    for name in sorted(files):
        if rng.random() < 0.5:
            files[name], done = mutate_junk(files[name], rng)
            ops.append(f"{name}: {done}")
    if rng.random() < 0.05:
        gone = rng.choice(sorted(files))
        del files[gone]
        ops.append(f"{gone} missing")
    (d / "prog.dl").write_text(FORMATS_PROGRAM)
    write_files(d / "facts", files)
    old_outputs(d / "out", FORMATS_OUTPUTS)
    j.cli("csv", s, ["run", str(d / "prog.dl"), "-F", str(d / "facts"), "-D", str(d / "out"),
                     "--device", j.device, "--quiet"],
          f"FORMATS_PROGRAM, edits {ops}\n" + "".join(_show(k, v) for k, v in files.items()),
          outs=(d / "out",), written=tuple(d / "out" / o for o in FORMATS_OUTPUTS))


def case_csv(j: Judge, s: int, rng: random.Random, d: Path, ctx: dict[str, Any]) -> None:
    if rng.random() < 0.4:
        case_formats(j, s, rng, d)
        return
    files = types_facts(rng)
    target = rng.choice(["n.facts", "n.facts", "u.facts", "z.facts"])
    delim = {"n.facts": b"\t", "u.facts": b",", "z.facts": b"\t"}[target]
    if rng.random() < 0.7:
        files[target], ops = mutate_fields(files[target], delim, rng)
    else:
        files[target], ops = mutate_bytes(files[target], rng)
    text = TYPES_PROGRAM
    if rng.random() < 0.1:
        new = rng.choice([";", "|", "::", "\\t\\t", "", "\\x", "\\u00e9", "\"", "ab"])
        text = text.replace('.input u(delimiter=",")', f'.input u(delimiter="{new}")')
        ops.append(f"delimiter={new!r}")
    (d / "prog.dl").write_text(text)
    write_files(d / "facts", files)
    old_outputs(d / "out", TYPES_OUTPUTS)
    j.cli("csv", s, ["run", str(d / "prog.dl"), "-F", str(d / "facts"), "-D", str(d / "out"),
                     "--device", j.device, "--quiet"],
          f"mutations {ops}\n" + _show("prog.dl", text.encode()) + _show(target, files[target]),
          outs=(d / "out",), written=tuple(d / "out" / o for o in TYPES_OUTPUTS))


def _parquet_table(rng: random.Random) -> Any:
    import pyarrow as pa

    k = rng.randint(0, 6)
    a = [rng.randint(-5, 9) for _ in range(k)]
    b = [_symbol(rng) for _ in range(k)]
    op = rng.choice(["valid", "rename", "swap", "float", "string_number", "int_symbol",
                     "nulls", "extra", "missing", "nested", "huge", "binary", "bool",
                     "dictionary", "empty_schema", "large_string", "uint64"])
    cols: dict[str, Any] = {"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.string())}
    if op == "rename":
        cols = {"x": cols["a"], "b": cols["b"]}
    elif op == "swap":
        cols = {"b": cols["b"], "a": cols["a"]}
    elif op == "float":
        cols["a"] = pa.array([v + 0.5 for v in a], pa.float64())
    elif op == "string_number":
        cols["a"] = pa.array([str(v) for v in a], pa.string())
    elif op == "int_symbol":
        cols["b"] = pa.array(a, pa.int32())
    elif op == "nulls":
        cols["a"] = pa.array([None if i % 2 else v for i, v in enumerate(a)], pa.int64())
    elif op == "extra":
        cols["c"] = pa.array(a, pa.int64())
    elif op == "missing":
        del cols["b"]
    elif op == "nested":
        cols["b"] = pa.array([[v] for v in b], pa.list_(pa.string()))
    elif op == "huge":
        cols["a"] = pa.array([2**62 + v for v in a], pa.int64())
    elif op == "binary":
        cols["b"] = pa.array([v.encode() for v in b], pa.binary())
    elif op == "bool":
        cols["a"] = pa.array([v > 0 for v in a], pa.bool_())
    elif op == "dictionary":
        cols["b"] = pa.array(b, pa.string()).dictionary_encode()
    elif op == "empty_schema":
        cols = {}
    elif op == "large_string":
        cols["b"] = pa.array(b, pa.large_string())
    elif op == "uint64":
        cols["a"] = pa.array([abs(v) + 2**63 for v in a], pa.uint64())
    return pa.table(cols) if cols else pa.table({}), op


def case_parquet(j: Judge, s: int, rng: random.Random, d: Path, ctx: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    table, op = _parquet_table(rng)
    (d / "facts").mkdir()
    target = d / "facts" / "p.parquet"
    ops = [op]
    sink = _io.BytesIO()
    pq.write_table(table, sink)
    data = sink.getvalue()
    r = rng.random()
    if r < 0.35:
        data, more = mutate_bytes(data, rng)
        ops += more
    elif r < 0.4:
        data = b""
        ops.append("empty file")
    if rng.random() < 0.2:  # a directory as Spark writes it, with one bad part
        target.mkdir()
        (target / "part-00000.parquet").write_bytes(data)
        good = _io.BytesIO()
        pq.write_table(_parquet_table(random.Random(s + 1))[0], good)
        (target / "part-00001.parquet").write_bytes(good.getvalue())
        (target / "_SUCCESS").write_bytes(b"")
        ops.append("spark directory")
    else:
        target.write_bytes(data)
    (d / "prog.dl").write_text(PARQUET_PROGRAM)
    old_outputs(d / "out", ("q.csv",))
    j.cli("parquet", s, ["run", str(d / "prog.dl"), "-F", str(d / "facts"), "-D",
                         str(d / "out"), "--device", j.device, "--quiet"],
          f"mutations {ops}\n" + _show("p.parquet", data, 600), outs=(d / "out",))


def case_ntriples(j: Judge, s: int, rng: random.Random, d: Path, ctx: dict[str, Any]) -> None:
    from gpu_engine.host.ntriples import read_ntriples

    from gpu_engine.ir import ProgramError

    data, ops = mutate_bytes(NT_SAMPLE.encode() * rng.randint(1, 3), rng)
    path = d / "data.nt"
    path.write_bytes(data)
    c = j.c
    c.count("inputs")
    c.count("ntriples_inputs")
    repro = (f"read_ntriples({path.name!r}) with mutations {ops}\n" + _show("data.nt", data))
    try:
        with time_limit(TIMEOUT):
            read_ntriples(path)
        c.count("accepted")
    except CaseTimeout:
        c.count("timeouts")
    except (ValueError, ProgramError) as exc:
        c.count("rejected")
        msg = str(exc)
        if "\n" in msg.strip():
            c.fail("unclear_error", s, f"multi-line error: {msg}", repro, input_kind="ntriples")
        if path.name not in msg:
            c.fail("unclear_error", s, f"error without the file name: {msg}", repro,
                   input_kind="ntriples")
        c.count("errors")
        if not re.search(r":\d+", msg):
            c.fail("no_location", s, msg, repro, input_kind="ntriples")
    except Exception:  # noqa: BLE001 - an unexpected exception type is the finding
        c.fail("traceback", s, traceback.format_exc(), repro, input_kind="ntriples")


# store ---------------------------------------------------------------------------------------


def prepare_store(root: Path, device: str) -> dict[str, Any]:
    """A template store, its export, the update's facts and the export after the update."""
    rng = random.Random(12345)
    nodes = [f"n{i}" for i in range(12)]
    edges = "".join(f"{rng.randint(-2, 5)}\t{rng.choice(nodes + ['zz'])}\n" for _ in range(15))
    write_files(root / "f0", {"edge.facts": edges.encode(),
                              "node.facts": "".join(f"{v}\n" for v in nodes[:8]).encode()})
    write_files(root / "ins", {"edge.facts": b"7\tn9\n3\tnew\n",
                               "node.facts": b"n10\nn11\n"})
    write_files(root / "f1", {"edge.facts": edges.encode() + b"7\tn9\n3\tnew\n",
                              "node.facts": "".join(f"{v}\n" for v in nodes[:8]).encode()
                              + b"n10\nn11\n"})
    (root / "tc.dl").write_text(TC_PROGRAM)
    store = root / "store"
    for args in (["run", str(root / "tc.dl"), "-F", str(root / "f0"), "-D", str(root / "exp0"),
                  "--store", str(store)],
                 ["run", str(root / "tc.dl"), "-F", str(root / "f1"), "-D", str(root / "exp1")]):
        res = run_cli([*args, "--device", device, "--quiet"], timeout=600)
        if res.rc != 0:
            raise RuntimeError(f"setting up the store failed: {res.stderr}{res.traceback}")
    return {"store": store, "ins": root / "ins", "exp0": snapshot(root / "exp0"),
            "exp1": snapshot(root / "exp1"), "outputs": sorted(snapshot(root / "exp0"))}


def corrupt_store(store: Path, rng: random.Random) -> str:
    """One corruption of a store copy; returns what was done."""
    files = sorted(p for p in store.rglob("*") if p.is_file() and p.name != "LOCK")
    op = rng.choice(["flip", "flip", "truncate", "delete", "empty", "current_garbage",
                     "current_missing_version", "delete_version", "meta_edit", "program_edit",
                     "junk_file", "append"])
    version = (store / "CURRENT").read_text().strip()
    if op == "current_garbage":
        (store / "CURRENT").write_bytes(random_text(rng, rng.randint(0, 12)))
        return op
    if op == "current_missing_version":
        (store / "CURRENT").write_text("v99999999\n")
        return op
    if op == "delete_version":
        shutil.rmtree(store / version)
        return op
    if op == "junk_file":
        (store / version / "E" / "9999.arrow").write_bytes(b"junk")
        return op
    if op == "meta_edit":
        meta_path = store / version / "meta.json"
        meta = json.loads(meta_path.read_text())
        leaves: list[tuple[Any, Any]] = []

        def walk(o: Any) -> None:
            for k, v in (o.items() if isinstance(o, dict) else enumerate(o)):
                if isinstance(v, dict | list):
                    walk(v)
                else:
                    leaves.append((o, k))
        walk(meta)
        o, k = rng.choice(leaves)
        old = o[k]
        o[k] = rng.choice([None, "x", -1, 0, 10**20, [], {}, True,
                           (old + 1) if isinstance(old, int) and not isinstance(old, bool)
                           else "y"])
        meta_path.write_text(json.dumps(meta))
        return f"meta_edit {k!r}: {old!r} -> {o[k]!r}"
    if op == "program_edit":
        prog = store / version / "program.dl"
        text = prog.read_text()
        prog.write_text(text.replace("n > 0", rng.choice(["n > 1", "n < 0", "n >= 0"])))
        return op
    target = rng.choice(files)
    rel = str(target.relative_to(store))
    data = target.read_bytes()
    if op == "flip" and data:
        i = rng.randrange(len(data))
        target.write_bytes(data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:])
    elif op == "truncate":
        target.write_bytes(data[:rng.randrange(len(data) + 1)])
    elif op == "delete":
        target.unlink()
    elif op == "empty":
        target.write_bytes(b"")
    elif op == "append":
        target.write_bytes(data + random_text(rng, 3))
    return f"{op} {rel}"


def case_store(j: Judge, s: int, rng: random.Random, d: Path, ctx: dict[str, Any]) -> None:
    base = ctx["store_base"]
    store = d / "store"
    shutil.copytree(base["store"], store)
    what = corrupt_store(store, rng)
    old_outputs(d / "out", base["outputs"])
    repro = f"store from prepare_store(), then: {what}"
    if rng.random() < 0.5:
        res = j.cli("store", s, ["export", str(store), "-D", str(d / "out"), "--device",
                                 j.device], repro, outs=(d / "out",), stores=(store,))
        if res.rc == 0 and snapshot(d / "out") != base["exp0"]:
            j.c.fail("silent_corruption", s, "export of a corrupted store succeeded with "
                     "different output", f"gpu-engine export STORE\n{repro}")
        return
    res = j.cli("store", s, ["update", str(store), "--insert", str(base["ins"]), "-D",
                             str(d / "out"), "--device", j.device, "--quiet"], repro,
                outs=(d / "out",), stores=(store,))
    if res.rc == 0:
        if snapshot(d / "out") != base["exp1"]:
            j.c.fail("silent_corruption", s, "update of a corrupted store succeeded with "
                     "wrong output", f"gpu-engine update STORE --insert INS -D OUT\n{repro}")
        again = run_cli(["export", str(store), "-D", str(d / "again"), "--device", j.device])
        if again.rc != 0 or snapshot(d / "again") != base["exp1"]:
            j.c.fail("silent_corruption", s, "after an update of a corrupted store, the "
                     f"store exports wrong output or fails: {again.stderr}{again.traceback}",
                     f"gpu-engine update STORE --insert INS; gpu-engine export STORE\n{repro}")


# cli -------------------------------------------------------------------------------------------

FLAGS = ["-F", "--facts", "-D", "--output", "--device", "--stats", "--stats-json", "--quiet",
         "--modules", "--format", "--backend", "--store", "--insert", "--delete",
         "--algorithm", "--master", "--spark-conf", "--force", "-x", "--", "-", "--help",
         "--device=cpu", "--format=parquet", "--stats-json=", "-D-"]
VALUES = ["cpu", "auto", "gpu", "file", "parquet", "local", "off", "remat", "dred", "dredc",
          "counting", "bf", "bfc", "remat1c", "x", "", " ", "-", "=", "0", "é", "\x00x",
          "a=b", "nosuch"]


def case_cli(j: Judge, s: int, rng: random.Random, d: Path, ctx: dict[str, Any]) -> None:
    base = ctx["store_base"]
    (d / "prog.dl").write_text(TYPES_PROGRAM)
    (d / "bad.dl").write_bytes(mutate_bytes(TYPES_PROGRAM.encode(), rng)[0])
    write_files(d / "facts", types_facts(rng))
    shutil.copytree(base["store"], d / "store")
    (d / "afile").write_text("x")
    old_outputs(d / "out", TYPES_OUTPUTS)
    paths = ["prog.dl", "bad.dl", "facts", "out", "store", "afile", "missing",
             "missing/deeper", "out/stats.json", "afile/x", "store/CURRENT", "store/LOCK",
             str(d / "prog.dl"), str(d / "facts"), str(base["ins"]), ".", "..",
             "out/../out", "facts/n.facts"]
    r = rng.random()
    if r < 0.2:  # explain / query over the store, the fact or query text mutated
        text = rng.choice(['path("n1", "n2")', 'far(3, "zz")', "far(7, \"n9\")",
                           'path(X, Y), far(N, Y), N > 0', 'path("n1", Y), !far(_, Y)',
                           "edge(N, Y), N < 3", 'node(X), X != "n3"'])
        mutated = mutate_bytes(text.encode(), rng)[0] if rng.random() < 0.7 else text.encode()
        query = mutated.decode("utf-8", "surrogateescape")
        sub = "explain" if "," not in text or rng.random() < 0.3 else "query"
        argv = [sub, "store", query, "--device", "cpu"]
        argv += rng.choice([[], ["--json"], ["--format", rng.choice(["csv", "json", "x"])],
                            ["--limit", rng.choice(["1", "0", "-1", "x"])], ["--header"],
                            ["--stats"]])
        j.cli("cli", s, argv, f"{sub} text {mutated!r}", outs=(d / "out",),
              stores=(d / "store",))
        return
    if r < 0.4:  # a valid command with a few odd options added
        argv = rng.choice([["run", "prog.dl", "-F", "facts", "-D", "out"],
                           ["update", "store", "--insert", str(base["ins"]), "-D", "out"],
                           ["export", "store", "-D", "out"]])
        for _ in range(rng.randint(1, 3)):
            extra = rng.choice([["--stats-json", rng.choice(paths)], ["--stats"],
                                ["--format", "parquet"], ["--device", "auto"],
                                ["--quiet"], ["--modules", "off"], [rng.choice(FLAGS)],
                                ["--algorithm", rng.choice(VALUES)],
                                [rng.choice(FLAGS + VALUES)]])
            at = len(argv) if rng.random() < 0.6 else rng.randint(1, len(argv))
            argv[at:at] = extra  # appended, or inserted among the command's own arguments
        j.cli("cli", s, argv, f"cwd: a folder holding {sorted(p.name for p in d.iterdir())}",
              outs=(d / "out",), stores=(d / "store",))
        return
    sub = rng.choice(["run", "run", "run", "export", "update", "update", "bogus", ""])
    argv = [sub] if sub else []
    if sub == "run" and rng.random() < 0.8:
        argv.append(rng.choice(paths[:2] + paths[5:8]))
    if sub in ("export", "update") and rng.random() < 0.8:
        argv.append(rng.choice(["store", "store", "facts", "missing", "afile", "out"]))
    for _ in range(rng.randint(0, 6)):
        r = rng.random()
        if r < 0.45:
            argv.append(rng.choice(FLAGS))
        elif r < 0.75:
            argv.append(rng.choice(paths))
        elif r < 0.95:
            argv.append(rng.choice(VALUES))
        else:
            argv.append(random_text(rng, 3).decode("utf-8", "surrogateescape"))
    if "spark" in argv:  # never start a JVM from the campaign
        argv = [a for a in argv if a != "spark"]
    j.cli("cli", s, argv, f"cwd: a folder holding {sorted(p.name for p in d.iterdir())}",
          outs=(d / "out",), stores=(d / "store",))


CASES: dict[str, Callable[[Judge, int, random.Random, Path, dict[str, Any]], None]] = {
    "program": case_program, "csv": case_csv, "parquet": case_parquet,
    "ntriples": case_ntriples, "store": case_store, "cli": case_cli}


def run(n: int, seed: int = 0, device: str = "cpu", out: str | None = None,
        kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """Run ``n`` malformed inputs from ``seed`` (kinds in turn); returns the JSON line."""
    c = Campaign("fuzz-inputs", seed, n, extra={"device": device, "kinds": list(kinds)})
    j = Judge(c, device)
    with tempfile.TemporaryDirectory(prefix="fuzz-inputs-") as tmp:
        root = Path(tmp)
        ctx = {"store_base": prepare_store(root / "base", device)}
        for s in range(seed, seed + n):
            kind = kinds[s % len(kinds)]
            d = root / f"case{s}"
            d.mkdir()
            try:
                with cwd(d):
                    CASES[kind](j, s, random.Random(s), d, ctx)
            except Exception:  # noqa: BLE001 - a bug of the campaign itself: keep going
                c.fail("campaign_error", s, traceback.format_exc(),
                       f"python -m benchmarks.campaigns.inputs --seed {s} --n 1")
            finally:
                shutil.rmtree(d, ignore_errors=True)
    c.extra["error_samples_without_file"] = j.noloc
    return c.write(out)


def main(argv: list[str] | None = None) -> int:
    args = cli_args(argv, "inputs", 10_000, "fuzz_inputs.jsonl")
    line = run(args.n, args.seed, args.device, args.out)
    return 1 if line["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
