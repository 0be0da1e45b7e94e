"""``--profile FILE`` / ``-p FILE`` (Soufflé's flag): the statistics of ``run``, ``update``
and ``query`` as JSON (shape documented in ``host/profile.py``)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from gpu_engine.host.cli import main

PROG = """
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
.decl n(c: number)
.output n
n(c) :- c = count : path(_, _).
"""


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


def setup(tmp_path: Path) -> tuple[Path, Path]:
    prog = tmp_path / "p.dl"
    prog.write_text(PROG)
    facts = tmp_path / "in"
    facts.mkdir()
    (facts / "edge.facts").write_text("".join(f"{i}\t{i + 1}\n" for i in range(20)))
    return prog, facts


def test_run_profile(tmp_path: Path) -> None:
    prog, facts = setup(tmp_path)
    rc, _, err = cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o"),
                     "--profile", str(tmp_path / "prof.json"), "--device", "cpu", "--quiet")
    assert rc == 0, err
    doc = json.loads((tmp_path / "prof.json").read_text())
    assert doc["format"] == "gpu-engine-profile" and doc["version"] == 1
    assert doc["command"] == "run" and doc["device"] == "cpu" and doc["word_size"] == 32
    assert doc["program"] == str(prog)
    assert set(doc["seconds"]) == {"total", "load", "materialise", "outputs", "store"}
    assert all(v >= 0 for v in doc["seconds"].values())
    assert doc["relations"]["path"] == 210 and doc["relations"]["edge"] == 20
    m = doc["materialisation"]
    assert m["facts"] == sum(doc["relations"].values())
    rec = [s for s in m["strata"] if s["recursive"]]
    assert len(rec) == 1 and rec[0]["relations"] == ["path"] and rec[0]["iterations"] >= 19
    rules = rec[0]["rules"]
    assert {r["loc"].rsplit(":", 2)[0] for r in rules} == {str(prog)}
    assert sum(r["derivations"] for r in rules) == rec[0]["derivations"] == 210
    # the same statistics as --stats-json, under "materialisation"
    rc, _, err = cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o"),
                     "--stats-json", str(tmp_path / "s.json"), "-p", str(tmp_path / "p2.json"),
                     "--device", "cpu", "--quiet")
    assert rc == 0, err
    stats = json.loads((tmp_path / "s.json").read_text())
    prof = json.loads((tmp_path / "p2.json").read_text())["materialisation"]
    assert [s["facts"] for s in stats["strata"]] == [s["facts"] for s in prof["strata"]]


def test_update_and_query_profiles(tmp_path: Path) -> None:
    prog, facts = setup(tmp_path)
    store = tmp_path / "db"
    rc, _, err = cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o"),
                     "--store", str(store), "--device", "cpu", "--quiet")
    assert rc == 0, err
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / "edge.facts").write_text("10\t11\n")
    rc, _, err = cli("update", str(store), "--delete", str(gone), "--profile",
                     str(tmp_path / "u.json"), "--device", "cpu", "--quiet")
    assert rc == 0, err
    doc = json.loads((tmp_path / "u.json").read_text())
    assert doc["command"] == "update" and doc["store"] == str(store)
    assert set(doc["seconds"]) == {"total", "load_store", "read_facts", "update", "outputs",
                                   "commit"}
    assert doc["update"]["deleted"] == 1 and doc["update"]["algorithm"]
    assert doc["relations"]["path"] == 210 - 11 * 10 and doc["relations"]["n"] == 1
    rc, out, err = cli("query", str(store), "path(0, X), X > 5", "-p",
                       str(tmp_path / "q.json"), "--device", "cpu")
    assert rc == 0, err
    q = json.loads((tmp_path / "q.json").read_text())
    assert q["command"] == "query" and q["query"] == {"text": "path(0, X), X > 5", "rows": 5}
    assert set(q["seconds"]) == {"total", "load_store", "answer", "format"}


def test_profile_path_is_checked_first(tmp_path: Path) -> None:
    prog, facts = setup(tmp_path)
    rc, _, err = cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o"),
                     "--profile", str(tmp_path / "nodir" / "p.json"), "--device", "cpu")
    assert rc == 1 and "--profile" in err and not (tmp_path / "o").exists()
