""".include/.once, the C preprocessor (#include, #define, #if, -M), -I folders, locations
in included and preprocessed files, and the Soufflé options of ``gpu-engine run``."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_engine.host.lang import dl_source
from gpu_engine.host.lang.dl_source import SourceOptions, load_source
from gpu_engine.host.lang.parser import parse_file, parse_program
from souffle_cases import run_cli

from gpu_engine import Reasoner
from gpu_engine.ir import ProgramError

needs_cpp = pytest.mark.skipif(dl_source.find_cpp() is None, reason="no C preprocessor")


def write(d: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    return d


def cli_run(prog: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(["run", str(prog), "-D", "-", "--device", "cpu", "--quiet", *args])


def printed(stdout: str) -> dict[str, set[str]]:
    """Relations printed by ``-D -`` as {name: lines}."""
    out: dict[str, set[str]] = {}
    blocks = stdout.split("---------------\n")[1:]
    for b in blocks:
        name, _, rest = b.partition("\n===============\n")
        out[name.split("\n")[0]] = {  # (under -D-, a header line follows the name)
            line for line in rest.split("===============")[0].splitlines() if line}
    return out


# --- .include and .once -------------------------------------------------------------------


def test_include_relative_to_the_including_file_with_line_numbers(tmp_path: Path) -> None:
    write(tmp_path, {
        "main.dl": '.decl location(tag:symbol, line:number)\n.include "sub/baz.dl"\n'
                   'location("main:3", __LINE__).\n.output location\n',
        "sub/baz.dl": 'location("baz:1", __LINE__).\n.include "foo.dl"\n'
                      'location("baz:3", __LINE__).\n',
        "sub/foo.dl": '\n\nlocation("foo:3", __LINE__). location(__FILE__, 0).\n',
    })
    p = parse_file(tmp_path / "main.dl")
    rows = set(p.program.facts["location"])
    assert {(f"{t}", int(t.split(":")[1])) for t in ("main:3", "baz:1", "baz:3", "foo:3")} <= rows
    assert (str(tmp_path / "sub" / "foo.dl"), 0) in rows


def test_once_and_include_dirs(tmp_path: Path) -> None:
    write(tmp_path, {
        "main.dl": '.once\n.include "main.dl"\n.include "lib.dl"\n.include "lib.dl"\n'
                   ".decl ok()\nok() :- one(1).\n",
        "libs/lib.dl": ".once\n.decl one(x:number)\none(1).\n",
    })
    with pytest.raises(ProgramError, match="cannot find the included file 'lib.dl'"):
        load_source(tmp_path / "main.dl")
    src = load_source(tmp_path / "main.dl", SourceOptions(include_dirs=(str(tmp_path / "libs"),)))
    p = parse_program(src.text, src.name)
    assert p.program.facts == {"one": [(1,)]} and len(p.program.rules) == 1


def test_errors_in_included_files_name_the_file_line_and_column(tmp_path: Path) -> None:
    write(tmp_path, {
        "main.dl": '.decl a(x:number)\n   .include "inc.dl"  a(1).\n',
        "inc.dl": ".decl b(x:number)\nb(x) :- c(x).\n",
    })
    with pytest.raises(ProgramError) as info:
        parse_file(tmp_path / "main.dl")
    assert str(info.value).startswith(f"{tmp_path / 'inc.dl'}:2:9: undeclared relation 'c'")
    (tmp_path / "inc.dl").write_text(".decl b(x:number)\n")
    (tmp_path / "main.dl").write_text('.decl a(x:number)\n   .include "inc.dl"  a(1).\na(2) :- .\n')
    with pytest.raises(ProgramError) as info:  # after the include: the including file again
        parse_file(tmp_path / "main.dl")
    assert str(info.value).startswith(f"{tmp_path / 'main.dl'}:3:9: syntax error")
    (tmp_path / "main.dl").write_text('.decl a(x:number)\n   .include "inc.dl"  a(1) a.\n')
    with pytest.raises(ProgramError) as info:  # columns after the directive are kept
        parse_file(tmp_path / "main.dl")
    assert str(info.value).startswith(f"{tmp_path / 'main.dl'}:2:28: syntax error")
    # the end of the text: after an include, still the including file's own lines
    (tmp_path / "main.dl").write_text('.include "inc.dl"\n.decl a(x:number)\na(1')
    with pytest.raises(ProgramError) as info:
        parse_file(tmp_path / "main.dl")
    assert str(info.value).startswith(f"{tmp_path / 'main.dl'}:3:4: syntax error: unexpected end")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [('.include "missing.dl"\n', "cannot find the included file 'missing.dl'"),
     (".include missing\n", "needs a file name in double quotes"),
     (".include\n", "needs a file name in double quotes")],
)
def test_include_errors(tmp_path: Path, text: str, fragment: str) -> None:
    write(tmp_path, {"main.dl": text})
    with pytest.raises(ProgramError) as info:
        parse_file(tmp_path / "main.dl")
    assert fragment in info.value.message and str(info.value).startswith(
        f"{tmp_path / 'main.dl'}:1:1:")


def test_self_inclusion_without_once_is_refused(tmp_path: Path) -> None:
    write(tmp_path, {"main.dl": '.include "main.dl"\n'})
    with pytest.raises(ProgramError, match="nested more than"):
        parse_file(tmp_path / "main.dl")


def test_store_keeps_included_text(tmp_path: Path) -> None:
    """A store needs neither the included files nor the preprocessor to reopen."""
    from gpu_engine.host.store import open_store, save_store

    write(tmp_path, {"main.dl": '.include "lib.dl"\n.decl q(x:number)\nq(x + 1) :- p(x).\n'
                                ".output q\n",
                     "lib.dl": ".decl p(x:number)\np(1).\n"})
    r = Reasoner(tmp_path / "main.dl", device="cpu", counting=True)
    r.materialise()
    save_store(r, tmp_path / "store")
    (tmp_path / "lib.dl").unlink()
    r2 = open_store(tmp_path / "store", device="cpu")
    assert r2.relation("q").column(0).to_pylist() == [2]


# --- the C preprocessor ------------------------------------------------------------------


@needs_cpp
def test_preprocessor_defines_includes_and_macros(tmp_path: Path) -> None:
    write(tmp_path, {
        "main.dl": '#include "defs.h"\n.decl a(x:number)\na(N).\na(M).\n#ifdef EXTRA\na(100).\n'
                   "#endif\n#if RAM_DOMAIN_SIZE == 32\na(32).\n#endif\n.output a\n",
        "inc/defs.h": "#define N 7\n",
    })
    rc, out, err = cli_run(tmp_path / "main.dl", "-I", str(tmp_path / "inc"), "-M", "M=9 EXTRA")
    assert rc == 0, err
    assert printed(out)["a"] == {"7", "9", "100", "32"}
    rc, out, err = cli_run(tmp_path / "main.dl", "-I", str(tmp_path / "inc"), "-M", "M=9")
    assert rc == 0 and printed(out)["a"] == {"7", "9", "32"}, err


@needs_cpp
def test_macros_apply_without_directives_and_define_beats_silence(tmp_path: Path) -> None:
    """A program with ``#define`` is never parsed with its directives dropped."""
    write(tmp_path, {"p.dl": ".decl a(x:number)\na(LIMIT).\n.output a\n"})
    rc, out, err = cli_run(tmp_path / "p.dl", "-M", "LIMIT=5")
    assert rc == 0 and printed(out)["a"] == {"5"}, err
    write(tmp_path, {"q.dl": "#define LIMIT 3\n.decl a(x:number)\na(LIMIT).\n.output a\n"})
    rc, out, err = cli_run(tmp_path / "q.dl")
    assert rc == 0 and printed(out)["a"] == {"3"}, err
    rc, out, err = cli_run(tmp_path / "q.dl", "--no-preprocessor")
    assert rc == 1 and f"{tmp_path / 'q.dl'}:1:1: C preprocessor directive '#define'" in err


@needs_cpp
def test_errors_after_preprocessing_keep_their_files_and_lines(tmp_path: Path) -> None:
    write(tmp_path, {
        "main.dl": "// a comment\n#include \"inc.h\"\n#define X 1\n\n.decl a(x:number)\n"
                   "a(X).\na(y) :- a(X), b(y).\n",
        "inc.h": "/* several\n   lines */\n.decl c(x:number)\n   c(x) :- d(x).\n",
    })
    rc, _, err = cli_run(tmp_path / "main.dl")
    assert rc == 1 and f"{tmp_path / 'inc.h'}:4:12: undeclared relation 'd'" in err, err
    (tmp_path / "inc.h").write_text(".decl c(x:number)\n")
    rc, _, err = cli_run(tmp_path / "main.dl")
    assert rc == 1 and f"{tmp_path / 'main.dl'}:7:" in err and "'b'" in err, err
    (tmp_path / "main.dl").write_text('#include "nope.h"\n')
    rc, _, err = cli_run(tmp_path / "main.dl")
    assert rc == 1 and f"{tmp_path / 'main.dl'}:1:10: C preprocessor: nope.h" in err, err


@needs_cpp
def test_preprocessed_text_through_the_api() -> None:
    r = Reasoner("#define K 4\n.decl a(x:number)\na(K).\n", device="cpu")
    r.materialise()
    assert r.relation("a").column(0).to_pylist() == [4]


def test_missing_preprocessor_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    monkeypatch.setattr(dl_source, "find_cpp", lambda: None)
    write(tmp_path, {"p.dl": "#define X 1\n.decl a(x:number)\n"})
    rc, _, err = cli_run(tmp_path / "p.dl")
    assert rc == 1 and "no C preprocessor (cpp, mcpp or gcc) is installed" in err
    assert f"{tmp_path / 'p.dl'}:1:1:" in err
    write(tmp_path, {"q.dl": ".decl a(x:number)\na(1).\n.output a\n"})
    rc, out, err = cli_run(tmp_path / "q.dl")  # no directive: no preprocessor needed
    assert rc == 0 and printed(out)["a"] == {"1"}, err


# --- options of gpu-engine run ------------------------------------------------------------


def test_version_and_refused_souffle_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    from gpu_engine.host.cli import main

    from gpu_engine import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and __version__ in capsys.readouterr().out
    write(tmp_path, {"p.dl": ".decl a(x:number)\na(1).\n.output a\n"})
    for flag in (["-c"], ["-o", "exe"], ["-t", "explain"]):  # (-p: profile)
        rc, _, err = cli_run(tmp_path / "p.dl", *flag)
        assert rc == 2 and f"{flag[0]} is a Soufflé option for" in err, err


def test_jobs_and_no_warnings(tmp_path: Path) -> None:
    write(tmp_path, {"p.dl": ".decl a(x:number) btree\na(1).\n.output a\n"})
    rc, out, err = cli_run(tmp_path / "p.dl", "-j", "1")
    assert rc == 0 and "ignored the 'btree' qualifier" in err and printed(out)["a"] == {"1"}
    rc, out, err = cli_run(tmp_path / "p.dl", "-j", "auto", "-w", "--magic-transform", "*")
    assert rc == 0 and "note" not in err and printed(out)["a"] == {"1"}, err
    rc, _, err = cli_run(tmp_path / "p.dl", "-j", "two")
    assert rc == 1 and "-j expects" in err
    rc, _, err = cli_run(tmp_path / "p.dl", "-I", str(tmp_path / "nowhere"))
    assert rc == 1 and "no such folder" in err


def test_conformance_style_include_case(tmp_path: Path) -> None:
    """``souffle --no-preprocessor -I dir``: .include still works, relative and via -I."""
    write(tmp_path, {"main.dl": '.include "x.dl"\n.output r\n',
                     "dir/x.dl": ".decl r(x:symbol)\nr(\"ok\").\n"})
    rc, out, err = cli_run(tmp_path / "main.dl", "--no-preprocessor", "-I", str(tmp_path / "dir"))
    assert rc == 0 and printed(out)["r"] == {"ok"}, err


def test_print_to_stdout_as_souffle_does(tmp_path: Path) -> None:
    """``-D-``: every output directive to stdout under a header line, its delimiter
    kept (Soufflé's IODefaults sets ``IO=stdout`` and ``headers=true`` on each one and
    leaves its other parameters; the header joins the names by the delimiter)."""
    write(tmp_path, {"p.dl": '.decl A(l: number, y: symbol)\nA(1, "a,b").\n.output A\n'
                             '.output A(IO=stdout, delimiter=",")\n.decl N()\nN().\n'
                             '.output N(IO=json)\n.printsize A\n'})
    rc, out, err = cli_run(tmp_path / "p.dl", "-D", "-")
    assert rc == 0, err
    assert out == ("---------------\nA\nl\ty\n===============\n1\ta,b\n===============\n"
                   "---------------\nA\nl,y\n===============\n1,a,b\n===============\n"
                   "---------------\nN\n\n===============\n()\n===============\nA\t1\n")
