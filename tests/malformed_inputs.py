"""Malformed-input campaign (issue 12, item 3(b)): fact files and CLI arguments.

Each case writes mutated fact files (bad numbers, wrong field counts, stray quotes and
line breaks, bytes that are not UTF-8, truncated gzip, huge values, NUL bytes) and/or a
mutated argument list, runs ``gpu-engine run`` in this process, and checks:

* no exception escapes ``main`` (no traceback), exit status 0, 1 or argparse's 2;
* an error (status 1) is one message with ``file:line:col`` or ``gpu-engine: error:``;
* an error leaves the output directory exactly as it was (old outputs, no temporary file);
* a success wrote every output.

``python tests/malformed_inputs.py --cases N --seed S --out results.json`` writes the
counts as JSON (``make fuzz-input``); ``tests/test_malformed_inputs.py`` runs it small.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = """.decl e(x:number, s:symbol)
.input e
.decl f(u:unsigned, z:float)
.input f(delimiter=",")
.decl g(a:symbol, b:number)
.input g(rfc4180=true, headers=true)
.decl n()
.input n
.decl out(x:number, s:symbol, z:float)
.output out
.decl g2(a:symbol, b:number)
.output g2(delimiter="::")
out(x, s, z) :- e(x, s), f(u, z), x < 5, u < 5.
g2(a, b) :- g(a, b), n().
"""
GOOD = {"e.facts": "1\ta\n2\tb c\n3\t\n",
        "f.facts": "1,0.5\n2,-1e3\n4294967295,inf\n",
        "g.facts": 'a,b\n"x,y",1\n"q""q",-2\nplain,3\n',
        "n.facts": "\n"}
JUNK = ["\t", ",", '"', "\n", "\r\n", "\x00", "\xff", "-", "+", "0x", "1e999", "99999999999",
        "nan", " ", "\\", "é", "'", "::", "", "-0", "0b102", "()", "\ufeff"]
LOC = re.compile(r"^\S+:\d+:\d+: |^gpu-engine: error: ")
FLAGS = ["-F", "-D", "--device", "cpu", "gpu", "auto", "--stats", "--stats-json", "--format",
         "parquet", "file", "--store", "--force", "--modules", "off", "--quiet", "-", "x.json",
         "", "--backend", "nosuch", "--spark-conf", "a", "."]


def mutate(text: str, rng: random.Random) -> str | bytes:
    """One to four random edits of a good fact file."""
    for _ in range(rng.randint(1, 4)):
        k = rng.random()
        pos = rng.randint(0, len(text))
        if k < 0.5:
            text = text[:pos] + rng.choice(JUNK) + text[pos:]
        elif k < 0.8 and text:
            end = min(len(text), pos + rng.randint(1, 4))
            text = text[:pos] + text[end:]
        else:
            text = text[:pos] + str(rng.choice([-1, 2**31, 2**32, 2**63, 10**30])) + text[pos:]
    data = text.encode("utf-8", "surrogateescape")
    if "\xff" in text and rng.random() < 0.5:
        data = data.replace("\xff".encode(), b"\xff")
    if rng.random() < 0.1:
        data = gzip.compress(data)[: rng.randint(2, 40)]
    return data


def snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def one_case(tmp: Path, rng: random.Random, main) -> tuple[str, str]:  # noqa: ANN001
    facts = tmp / "facts"
    out = tmp / "out"
    for d in (facts, out):
        d.mkdir(exist_ok=True)
        for p in d.iterdir():
            p.unlink()
    (out / "out.csv").write_text("old\n")
    for name, text in GOOD.items():
        data = mutate(text, rng) if rng.random() < 0.5 else text.encode()
        if rng.random() < 0.05:
            continue  # a missing file
        (facts / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    prog = tmp / "p.dl"
    prog.write_text(PROGRAM)
    argv = ["run", str(prog), "-F", str(facts), "-D", str(out), "--device", "cpu", "--quiet"]
    if rng.random() < 0.3:  # mutated arguments
        for _ in range(rng.randint(1, 3)):
            argv.insert(rng.randint(2, len(argv)), rng.choice(FLAGS))
    before = snapshot(out)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(argv)
    except SystemExit as exc:  # argparse
        rc = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001 - the campaign counts these
        return "traceback", f"{type(exc).__name__}: {exc}"
    message = err.getvalue().strip()
    if rc == 2:
        return "usage", ""
    if rc == 1:
        if snapshot(out) != before:
            return "partial-write", message
        if not LOC.match(message) or len(message.splitlines()) != 1:
            return "unclear-error", message
        return "error", ""
    if rc == 0:
        if not (out / "out.csv").exists() or not (out / "g2.csv").exists():
            return "missing-output", ""
        if any(p.name.startswith(".") for p in out.iterdir()):
            return "partial-write", "temporary file left"
        return "ok", ""
    return "bad-status", str(rc)


def campaign(cases: int, seed: int) -> dict:
    from gpu_engine.host.cli import main

    rng = random.Random(seed)
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):  # stray paths land here
        for _ in range(cases):
            kind, detail = one_case(Path(tmp), rng, main)
            counts[kind] = counts.get(kind, 0) + 1
            if kind not in ("ok", "error", "usage") and len(examples.setdefault(kind, [])) < 5:
                examples[kind].append(detail[:300])
    bad = sum(v for k, v in counts.items() if k not in ("ok", "error", "usage"))
    return {"campaign": "malformed-inputs", "cases": cases, "seed": seed, "counts": counts,
            "failures": bad, "examples": examples,
            "seconds": round(time.perf_counter() - t0, 1)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="JSON results file (default: stdout)")
    a = ap.parse_args()
    res = campaign(a.cases, a.seed)
    text = json.dumps(res, indent=1)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text + "\n")
    print(text)
    sys.exit(1 if res["failures"] else 0)
