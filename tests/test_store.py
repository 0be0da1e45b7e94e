"""The persistent store (host/store.py) and the ``run --store`` / ``export`` / ``update`` CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_engine.host.cli import main
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.store import (
    StoreError,
    current_version,
    open_store,
    read_meta,
    save_store,
    store_versions,
)

PROGRAM = """
// every attribute type, nullary relations, explicit facts of derived relations,
// recursion (recursive counters) and a string functor
.decl num(x: number, u: unsigned, f: float)
.input num
.decl sym(s: symbol, t: symbol)
.input sym
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
path(100, 200).
.decl big(u: unsigned, f: float)
.output big
big(u, f * 2.0) :- num(_, u, f), u > 10.
.decl flag()
flag().
.output flag
.decl never()
.output never
never() :- edge(x, x).
.decl named(s: symbol, n: number)
.output named
named(cat(s, t), x) :- sym(s, t), edge(x, _), flag(), x < 0.
named("explicit", 7).
.decl label(s: symbol)
.output label
.printsize label
label(s) :- sym(s, _).
label("ünïcödé").
"""

FACTS = {
    "num.facts": "-5\t0\t1.5\n3\t4294967295\t-2.25\n7\t11\t3e-05\n",
    "sym.facts": "a b\tc\nünï\td\n\tempty\n",
    "edge.facts": "-1\t2\n2\t3\n3\t-1\n3\t4\n",
}


def write_dir(d: Path, files: dict[str, str]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


@pytest.fixture
def case(tmp_path: Path) -> tuple[Path, Path]:
    """(program path, facts directory)."""
    prog = tmp_path / "p.dl"
    prog.write_text(PROGRAM)
    return prog, write_dir(tmp_path / "facts", FACTS)


def materialised(prog: Path, facts: Path, device: str = "cpu") -> Reasoner:
    r = Reasoner(prog, device=device, counting=True)
    r.load_inputs(facts)
    r.materialise()
    return r


def engine_state(r: Reasoner) -> dict[str, Any]:
    """E, I and the counters of every relation as host lists (ids), and the dictionary."""
    e = r.engine
    out: dict[str, Any] = {"symbols": r.symbols.values().to_pylist()}
    for name in e.program.relations:
        nr, rc = e.counter_arrays(name)
        out[name] = ([c.tolist() for c in e.explicit_columns(name)], len(e.explicit[name]),
                     [c.tolist() for c in e.columns(name)], e.size(name),
                     nr.tolist(), rc.tolist())
    return out


def decoded_state(r: Reasoner) -> dict[str, Any]:
    """E, I and the counters (when kept) with symbols decoded (independent of ids)."""
    def rows(t: Any) -> list[tuple]:
        return sorted(map(tuple, zip(*(c.to_pylist() for c in t.columns))), key=repr)

    def facts(name: str) -> Any:
        if not r.engine.counters:
            return r.relation(name)
        table = r.counters(name)  # level 1 keeps c_nr only: c_r is not maintained
        return table if r.engine.counting == 2 else table.drop_columns(["c_r"])

    return {name: (rows(r.explicit(name)), rows(facts(name))) for name in r.program.relations}


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` with its bytes."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def files_of(d: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(d.iterdir())}


# --- the store API ------------------------------------------------------------------------


def test_round_trip_same_device(case: tuple[Path, Path], tmp_path: Path, device: str) -> None:
    r = materialised(*case, device=device)
    version = save_store(r, tmp_path / "store")
    assert version == current_version(tmp_path / "store") == "v00000001"
    back = open_store(tmp_path / "store", device=device)
    assert back.device == device and back.engine.materialised
    assert engine_state(back) == engine_state(r)
    assert back.source_text == r.source_text and back.source_name == r.source_name
    assert back.engine.counting == r.engine.counting
    for name in r.program.relations:
        assert back.relation(name).equals(r.relation(name))
        assert back.explicit(name).equals(r.explicit(name))
    # explicit facts of derived relations and nullary relations survive as such
    assert back.explicit("path").to_pylist() == [{"x": 100, "y": 200}]
    assert back.engine.size("flag") == 1 and back.engine.size("never") == 0
    assert [str(v) for v in back.relation("label").column("s").to_pylist()][0] == "ünïcödé"


def test_store_moves_between_devices(case: tuple[Path, Path], tmp_path: Path,
                                     device: str) -> None:
    """Written on one device, loaded on the other (host int64 columns on disk)."""
    other = "cpu" if device == "gpu" else device
    r = materialised(*case, device=device)
    save_store(r, tmp_path / "a")
    on_other = open_store(tmp_path / "a", device=other)
    assert on_other.device == other
    assert engine_state(on_other) == engine_state(r)
    save_store(on_other, tmp_path / "b")
    again = open_store(tmp_path / "b", device=device)
    assert engine_state(again) == engine_state(r)
    assert read_meta(tmp_path / "a")["written_on"] == device


def test_meta_and_layout(case: tuple[Path, Path], tmp_path: Path) -> None:
    r = materialised(*case)
    store = tmp_path / "store"
    save_store(r, store)
    meta = read_meta(store)
    assert meta["format"] == "gpu-engine-store" and meta["format_version"] == 2
    assert meta["counters"] is True and meta["counting"] == r.engine.counting
    assert meta["symbols"] == len(r.symbols)
    assert set(meta["relations"]) == set(r.program.relations)
    for name, info in meta["relations"].items():
        assert meta["files"][info["materialised"]]["rows"] == r.engine.size(name)
        assert meta["files"][info["explicit"]]["rows"] == len(r.engine.explicit[name])
    v = store / "v00000001"
    assert (v / "program.dl").read_text() == PROGRAM
    assert {p.name for p in store.iterdir()} == {"CURRENT", "LOCK", "v00000001"}
    assert (store / "CURRENT").read_text() == "v00000001\n"


def test_versions_replace_old_ones_and_leftovers_are_cleaned(case: tuple[Path, Path],
                                                             tmp_path: Path) -> None:
    r = materialised(*case)
    store = tmp_path / "store"
    save_store(r, store)
    save_store(r, store, keep=2)
    assert store_versions(store) == ["v00000001", "v00000002"]
    save_store(r, store)
    assert store_versions(store) == ["v00000003"]
    # what a crash can leave behind: a partial version, a complete but uncommitted one,
    # a pointer being written; plus a file that is not the store's
    (store / ".v00000004.partial" / "E").mkdir(parents=True)
    (store / ".v00000004.partial" / "symbols.arrow").write_bytes(b"ARROW1 half")
    (store / "v00000005").mkdir()
    (store / "CURRENT.tmp").write_text("v00000005\n")
    (store / "notes.txt").write_text("mine")
    assert engine_state(open_store(store)) == engine_state(r)  # leftovers are ignored
    assert save_store(r, store) == "v00000004"
    assert {p.name for p in store.iterdir()} == {"CURRENT", "LOCK", "v00000004", "notes.txt"}
    assert engine_state(open_store(store)) == engine_state(r)
    assert read_meta(store)["parent"] == "v00000003"


def test_store_without_counters(case: tuple[Path, Path], tmp_path: Path) -> None:
    r = Reasoner(case[0], device="cpu")
    r.load_inputs(case[1])
    save_store(r, tmp_path / "s")  # materialises first
    back = open_store(tmp_path / "s")
    assert read_meta(tmp_path / "s")["counters"] is False and not back.engine.counters
    for name in r.program.relations:
        assert back.relation(name).equals(r.relation(name))
        assert back.explicit(name).equals(r.explicit(name))


def test_missing_and_corrupt_stores(case: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        open_store(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="is not a store"):
        open_store(tmp_path / "empty")
    store = tmp_path / "store"
    save_store(materialised(*case), store)
    v = store / "v00000001"
    i_file = v / read_meta(store)["relations"]["path"]["materialised"]
    good = i_file.read_bytes()
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xFF
    i_file.write_bytes(bytes(bad))
    with pytest.raises(StoreError, match="corrupt"):
        open_store(store)
    i_file.unlink()
    with pytest.raises(StoreError, match="missing I/"):
        open_store(store)
    i_file.write_bytes(good)
    open_store(store)
    meta = json.loads((v / "meta.json").read_text())
    (v / "meta.json").write_text(json.dumps({**meta, "relations": None}))
    with pytest.raises(StoreError, match="corrupt metadata"):
        open_store(store)
    meta["format_version"] = 99
    (v / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match="newer"):
        open_store(store)
    (v / "meta.json").write_text("{")
    with pytest.raises(StoreError, match="corrupt metadata"):
        open_store(store)
    (v / "meta.json").write_bytes(b'{"format": "\xff"}')  # not UTF-8 (found by fuzz-inputs)
    with pytest.raises(StoreError, match="meta.json: corrupt metadata"):
        open_store(store)
    (store / "CURRENT").write_bytes(b"v0000\xa20001\n")
    with pytest.raises(StoreError, match="CURRENT is corrupt"):
        open_store(store)
    (store / "CURRENT").write_text("../elsewhere\n")
    with pytest.raises(StoreError, match="not a version name"):
        open_store(store)


# --- command line -------------------------------------------------------------------------


def cli(*args: str | Path) -> int:
    return main([str(a) for a in args])


def test_run_store_and_export_match_run(case: tuple[Path, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    prog, facts = case
    assert cli("run", prog, "-F", facts, "-D", tmp_path / "plain", "--device", "cpu") == 0
    plain_out = capsys.readouterr().out
    assert cli("run", prog, "-F", facts, "-D", tmp_path / "stored", "--store",
               tmp_path / "s", "--device", "cpu") == 0
    assert capsys.readouterr().out == plain_out == "label\t4\n"
    assert cli("export", tmp_path / "s", "-D", tmp_path / "exported", "--device", "cpu") == 0
    assert capsys.readouterr().out == plain_out
    expected = files_of(tmp_path / "plain")
    assert set(expected) == {"path.csv", "big.csv", "flag.csv", "never.csv", "named.csv",
                             "label.csv"}
    assert files_of(tmp_path / "stored") == expected == files_of(tmp_path / "exported")
    assert cli("run", prog, "-F", facts, "-D", "-", "--device", "cpu") == 0
    printed = capsys.readouterr().out
    assert cli("export", tmp_path / "s", "-D", "-") == 0
    assert capsys.readouterr().out == printed and "ünïcödé" in printed
    # the stored state equals a materialisation with counters
    assert engine_state(open_store(tmp_path / "s")) == engine_state(materialised(prog, facts))


def test_export_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("export", tmp_path / "none", "-D", tmp_path / "out") == 1
    assert "gpu-engine: error: store" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert cli("update", tmp_path / "none", "--insert", tmp_path) == 1
    assert "no committed version" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_run_store_error_writes_nothing(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(".decl e(x: number)\n.input e\n.decl p(x: number)\n.output p\n"
                    "p(x) :- e(x).\n")
    write_dir(tmp_path / "f", {"e.facts": "1\nzwei\n"})
    assert cli("run", prog, "-F", tmp_path / "f", "-D", tmp_path / "o",
               "--store", tmp_path / "s") == 1
    assert capsys.readouterr().err.startswith(f"{tmp_path / 'f' / 'e.facts'}:2:1: expected")
    assert not (tmp_path / "o").exists() and not (tmp_path / "s").exists()


# --- update -------------------------------------------------------------------------------

INSERT = {  # a cycle (never() starts to hold), new symbols, explicit facts of derived relations
    "edge.facts": "4\t4\n-1\t9\n",
    "sym.facts": "new one\tx\n",
    "path.facts": "7\t8\n",
    "never.facts": "()\n",
}
DELETE = {  # flag() and path(100, 200) are facts of the program text
    "edge.facts": "2\t3\n",
    "flag.facts": "()\n",
    "path.facts": "100\t200\n",
    "num.facts": "7\t11\t3e-05\n",
}


def rows_of(text: str, types: list[str]) -> set[tuple]:
    conv = {"number": int, "unsigned": int, "symbol": str,
            "float": lambda v: float(np.float32(v))}  # stored as float32
    return {tuple(conv[t](v) for t, v in zip(types, line.split("\t")))
            for line in text.splitlines() if line}


def expected_after(r0: Reasoner, insert: dict[str, str], delete: dict[str, str],
                   counting: int) -> Reasoner:
    """A fresh materialisation of E' = (E \\ E-) | E+ (decoded values) with ``counting``."""
    import pyarrow as pa

    fresh = Reasoner(r0.source_text, device="cpu", counting=counting)
    fresh.engine.install_state({}, {}, None)  # no explicit facts, not even the program's
    for name, rel in r0.program.relations.items():
        types = [t for _, t in rel.attributes]
        ins = rows_of(insert.get(f"{name}.facts", ""), types)
        dele = rows_of(delete.get(f"{name}.facts", ""), types)
        if rel.arity == 0:
            if (len(r0.engine.explicit[name]) and not dele) or ins:
                fresh.engine.add_facts(name, [], n_rows=1)
            continue
        table = r0.explicit(name)
        rows = set(zip(*(c.to_pylist() for c in table.columns)))
        rows = sorted((rows - dele) | ins, key=repr)
        fresh.add_facts(name, pa.table([pa.array([row[i] for row in rows], table.schema[i].type)
                                        for i in range(rel.arity)],
                                       names=table.column_names))
    fresh.materialise()
    return fresh


@pytest.mark.parametrize("algorithm", ["remat", "remat1c", "remat2c", "dred", "dredc", "bf",
                                       "bfc", None])
def test_update_inserts_and_deletes(case: tuple[Path, Path], tmp_path: Path,
                                    algorithm: str | None,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    prog, facts = case
    store = tmp_path / "s"
    assert cli("run", prog, "-F", facts, "-D", tmp_path / "o0", "--store", store) == 0
    ins, dele = write_dir(tmp_path / "ins", INSERT), write_dir(tmp_path / "del", DELETE)
    r0 = open_store(store)
    capsys.readouterr()
    args = ["--algorithm", algorithm] if algorithm else []
    assert cli("update", store, "--insert", ins, "--delete", dele, "-D", tmp_path / "o1",
               "--stats-json", tmp_path / "stats.json", *args) == 0
    assert capsys.readouterr().out == "label\t5\n"  # .printsize, as run prints it
    assert current_version(store) == "v00000002" and store_versions(store) == ["v00000002"]
    after = open_store(store)
    assert read_meta(store)["counters"] is bool(after.engine.counting)
    assert after.engine.counting == (2 if algorithm in ("remat2c", "dredc", None) else
                                     1 if algorithm in ("remat1c", "bfc") else 0)
    fresh = expected_after(r0, INSERT, DELETE, after.engine.counting)
    assert decoded_state(after) == decoded_state(fresh)
    assert after.engine.size("never") == 1 and after.engine.size("flag") == 0
    assert after.relation("named").num_rows == 1  # only the program's fact: flag() is gone
    # rows are in id order, and the ids of symbols differ from a fresh run's: compare sorted
    assert {f: sorted(t.splitlines()) for f, t in files_of(tmp_path / "o1").items()} == {
        f"{n}.csv": sorted(fresh.render(n).splitlines())
        for n in ("path", "big", "flag", "never", "named", "label")}
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["algorithm"] == (algorithm or stats["algorithm"])
    assert stats["inserted"] == 5 and stats["deleted"] == 4
    assert stats["facts"] == sum(fresh.relation_sizes().values())
    # export reproduces the update's outputs; undoing the update restores the first state
    assert cli("export", store, "-D", tmp_path / "o2") == 0
    assert files_of(tmp_path / "o2") == files_of(tmp_path / "o1")
    assert cli("update", store, "--insert", dele, "--delete", ins, "-D", tmp_path / "o3",
               *args) == 0
    assert files_of(tmp_path / "o3") == files_of(tmp_path / "o0")
    back = open_store(store)
    assert decoded_state(back) == decoded_state(expected_after(r0, {}, {},
                                                               back.engine.counting))
    for name in r0.program.relations:
        assert back.explicit(name).equals(r0.explicit(name))
        assert back.relation(name).equals(r0.relation(name))


SMALL = """
.decl e(x: number, y: symbol)
.input e(delimiter=",")
.decl p(y: symbol)
.output p
p(y) :- e(x, y), x > 0.
.decl q(x: number)
.output q
q(x) :- e(x, _), !p("b").
"""


@pytest.mark.parametrize("algorithm", ["counting", "bf", "bfc", "dred", None])
def test_update_matches_a_fresh_run(tmp_path: Path, algorithm: str | None) -> None:
    """Non-recursive, with negation and an ``.input`` delimiter: update, then compare the
    outputs with those of ``run`` over the updated fact file."""
    prog = tmp_path / "small.dl"
    prog.write_text(SMALL)
    f0 = write_dir(tmp_path / "f0", {"e.facts": "1,a\n2,c\n-3,b\n"})
    store = tmp_path / "s"
    args = ["--algorithm", algorithm] if algorithm else []
    assert cli("run", prog, "-F", f0, "-D", tmp_path / "o0", "--store", store) == 0
    ins = write_dir(tmp_path / "ins", {"e.facts": "4,b\n5,d\n"})
    dele = write_dir(tmp_path / "del", {"e.facts": "2,c\n9,z\n"})
    assert cli("update", store, "--insert", ins, "--delete", dele, "-D", tmp_path / "o1",
               "--stats-json", tmp_path / "st.json", *args) == 0
    stats = json.loads((tmp_path / "st.json").read_text())
    assert stats["algorithm"] == (algorithm or "counting")  # the default: non-recursive
    f1 = write_dir(tmp_path / "f1", {"e.facts": "1,a\n-3,b\n4,b\n5,d\n"})
    assert cli("run", prog, "-F", f1, "-D", tmp_path / "fresh") == 0
    fresh = files_of(tmp_path / "fresh")
    assert fresh["q.csv"] == "" and fresh["p.csv"] != ""
    assert {k: sorted(v.splitlines()) for k, v in files_of(tmp_path / "o1").items()} == {
        k: sorted(v.splitlines()) for k, v in fresh.items()}


def test_update_with_counting_on_a_recursive_program_fails_cleanly(
        case: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prog, facts = case
    store = tmp_path / "s"
    assert cli("run", prog, "-F", facts, "-D", tmp_path / "o", "--store", store) == 0
    before = snapshot(store)
    ins = write_dir(tmp_path / "ins", {"edge.facts": "5\t6\n"})
    capsys.readouterr()
    assert cli("update", store, "--insert", ins, "--algorithm", "counting") == 1
    assert "Counting algorithm handles non-recursive programs only" in capsys.readouterr().err
    assert snapshot(store) == before


def test_update_stats_and_notes(case: tuple[Path, Path], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    prog, facts = case
    store = tmp_path / "s"
    assert cli("run", prog, "-F", facts, "-D", tmp_path / "o", "--store", store) == 0
    capsys.readouterr()
    ins = write_dir(tmp_path / "ins", {"edge.facts": "5\t6\n", "nosuch.facts": "1\n"})
    before = current_version(store)
    assert cli("update", store, "--insert", ins, "--algorithm", "remat", "--stats") == 1
    captured = capsys.readouterr()
    assert "no relation reads nosuch.facts" in captured.err  # a misnamed file: refused
    assert current_version(store) == before
    (ins / "nosuch.facts").unlink()
    assert cli("update", store, "--insert", ins, "--algorithm", "remat", "--stats") == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # no -D: nothing written
    assert "update with remat" in captured.err and "inserted" in captured.err
    assert open_store(store).engine.size("edge") == 5


@pytest.mark.parametrize(("name", "text", "where", "message"), [
    ("edge.facts", "1\t2\n3\n", "2:1", "expected 2 tab-separated values for edge, found 1"),
    ("num.facts", "1\t2\t3.5\n4\t-1\t0\n", "2:3", "expected a unsigned for attribute 2"),
    ("edge.facts", "1\t2\n99999999999\t1\n", "2:1", "(out of range)"),
    ("sym.facts", b"ok\tfine\nbad\t\xff\xfe\n", "2:5", "invalid UTF8"),
])
@pytest.mark.parametrize("side", ["--insert", "--delete"])
def test_update_bad_input_leaves_store_unchanged(case: tuple[Path, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 name: str, text: str | bytes, where: str,
                                                 message: str, side: str) -> None:
    prog, facts = case
    store = tmp_path / "s"
    assert cli("run", prog, "-F", facts, "-D", tmp_path / "o", "--store", store) == 0
    before = snapshot(store)
    bad = tmp_path / "bad"
    good = write_dir(bad, {"edge.facts": "7\t7\n"} if name != "edge.facts" else {})
    if isinstance(text, bytes):
        (bad / name).write_bytes(text)
    else:
        (bad / name).write_text(text)
    capsys.readouterr()
    assert cli("update", store, side, good, "--algorithm", "remat", "-D", tmp_path / "new") == 1
    err = capsys.readouterr().err
    assert re.match(re.escape(f"{bad / name}:") + where + ": ", err) and message in err, err
    assert snapshot(store) == before and not (tmp_path / "new").exists()


def test_concurrent_writers_wait_for_the_lock(case: tuple[Path, Path], tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    from gpu_engine.host.store import store_lock

    prog, facts = case
    store = tmp_path / "s"
    assert cli("run", prog, "-F", facts, "-D", tmp_path / "o", "--store", store) == 0
    ins = write_dir(tmp_path / "ins", {"edge.facts": "5\t6\n"})
    root = Path(__file__).resolve().parents[1]
    with store_lock(store):
        proc = subprocess.Popen([sys.executable, "-m", "gpu_engine.host.cli", "update", str(store),
                                 "--insert", str(ins), "--algorithm", "remat", "--quiet"],
                                cwd=root, stderr=subprocess.PIPE)
        time.sleep(3.0)
        assert proc.poll() is None and current_version(store) == "v00000001"
        save_store(open_store(store), store)  # the lock is reentrant within a process
        assert current_version(store) == "v00000002"
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert current_version(store) == "v00000003"
    assert open_store(store).engine.size("edge") == 5


def test_read_meta_follows_a_commit_that_removed_the_version_it_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that read CURRENT just before a writer committed a newer version and
    removed the old one (``keep=1``) reads the new version's metadata (the streaming
    sink's worker commits while the caller reads the last committed batch)."""
    import gpu_engine.host.store as S

    r = Reasoner(".decl e(x: number)\n.output e\n")
    r.add_facts("e", [(1,)])
    save_store(r, tmp_path / "db")
    r.add_facts("e", [(2,)])
    save_store(r, tmp_path / "db")
    old, new = "v00000001", current_version(tmp_path / "db")
    assert new != old and store_versions(tmp_path / "db") == [new]
    reads = iter([old])
    real = S.current_version
    monkeypatch.setattr(S, "current_version", lambda d: next(reads, None) or real(d))
    assert read_meta(tmp_path / "db")["version"] == new
    with pytest.raises(StoreError, match="missing meta.json"):  # a version named: no retry
        read_meta(tmp_path / "db", old)
