"""User-defined functors (``.functor``, ``@name(...)``) from shared libraries (``-L``/``-l``).

The library is compiled here from C with the system compiler (skipped without one); each
functor's expected values are computed in Python.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gpu_engine.host import functor_libs
from gpu_engine.host.cli import main
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.store import open_store, save_store

from gpu_engine.ir import ProgramError
from tests.materialised import rows

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler to build a functor library")

SOURCE = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
int32_t add1(int32_t x) { return x + 1; }
int64_t add1_64(int64_t x) { return x + 1; }
int32_t mix(int32_t a, int32_t b) { return a * 31 + b; }
float halve(float x) { return x / 2; }
double halve_64(double x) { return x / 2; }
uint32_t umax(uint32_t a, uint32_t b) { return a > b ? a : b; }
const char* greet(const char* s) {
    static char buf[256]; snprintf(buf, sizeof buf, "hi %s", s); return buf; }
int32_t slen(const char* s) { return (int32_t)strlen(s); }
int32_t calls = 0;
int32_t counted(int32_t x) { calls++; return x; }
int32_t seven(void) { return 7; }
"""


@pytest.fixture(scope="module")
def libdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("functors")
    (d / "f.c").write_text(SOURCE)
    subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", str(d / "libfunctors.so"),
                    str(d / "f.c")], check=True)
    return d


PROGRAM = """
.functor add1(number): number
.functor mix(a: number, b: number): number
.functor halve(float): float
.functor umax(unsigned, unsigned): unsigned
.functor greet(symbol): symbol
.functor slen(symbol): number
.functor seven(): number
.decl n(x: number)
n(1). n(2). n(-3).
.decl out(x: number, a: number, m: number, f: float, u: unsigned, s: symbol, l: number)
out(x, @add1(x), @mix(x, @add1(x)), @halve(to_float(x)), @umax(as(x, unsigned), 2),
    @greet(to_string(x)), @slen(@greet(to_string(x)))) :- n(x).
.decl chain(x: number)
chain(0).
chain(@add1(x)) :- chain(x), x < 5.
.decl k(x: number)
k(@seven()).
"""


def _expected_out() -> set[tuple]:
    out = set()
    for x in (1, 2, -3):
        g = f"hi {x}"
        out.add((x, x + 1, x * 31 + x + 1, x / 2, max(x & 0xFFFFFFFF, 2), g, len(g)))
    return out


def test_functors_of_every_type(libdir: Path) -> None:
    r = Reasoner(PROGRAM, device="cpu", library_dirs=[libdir])
    r.materialise()
    assert rows(r, "out") == _expected_out()
    assert rows(r, "chain") == {(i,) for i in range(6)}
    assert rows(r, "k") == {(7,)}
    assert set(r.program.functors) == {"add1", "mix", "halve", "umax", "greet", "slen", "seven"}


def test_64_bit_words(libdir: Path) -> None:
    text = """
    .functor add1_64(number): number
    .functor halve_64(float): float
    .decl n(x: number)
    n(4000000000). n(-5).
    .decl out(x: number, y: number, f: float)
    out(x, @add1_64(x), @halve_64(to_float(x))) :- n(x).
    """
    r = Reasoner(text, device="cpu", library_dirs=[libdir], word_size=64)
    r.materialise()
    assert rows(r, "out") == {(4000000000, 4000000001, 2e9), (-5, -4, -2.5)}


def test_compiled_loop_equals_calls(libdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = """
    .functor mix(number, number): number
    .decl n(x: number)
    .decl out(x: number, y: number)
    out(x, @mix(x, x + 1)) :- n(x).
    """
    xs = np.arange(-500, 1500, dtype=np.int64).reshape(-1, 1)
    results = []
    for compile_rows in (10**9, 1):
        monkeypatch.setattr(functor_libs, "COMPILE_ROWS", compile_rows)
        r = Reasoner(text, device="cpu", library_dirs=[libdir])
        r.add_facts("n", xs)
        r.materialise()
        results.append(rows(r, "out"))
    assert results[0] == results[1] == {(x, x * 31 + x + 1) for x in range(-500, 1500)}


def test_invalid_rows_are_not_passed(libdir: Path) -> None:
    """A row whose argument is undefined (division by zero) never reaches the library."""
    text = """
    .functor counted(number): number
    .decl n(x: number, y: number)
    n(6, 2). n(6, 0). n(9, 3).
    .decl out(x: number)
    out(@counted(x / y)) :- n(x, y).
    """
    r = Reasoner(text, device="cpu", library_dirs=[libdir])
    calls = ctypes.c_int32.in_dll(ctypes.CDLL(str(libdir / "libfunctors.so")), "calls")
    before = calls.value
    r.materialise()
    assert rows(r, "out") == {(3,)}
    assert calls.value - before == 1  # once per distinct valid argument (6/2 = 9/3 = 3)


def test_updates_and_store(libdir: Path, tmp_path: Path) -> None:
    text = """
    .functor add1(number): number
    .decl e(x: number)
    .decl p(x: number, y: number)
    p(x, @add1(x)) :- e(x).
    """
    r = Reasoner(text, device="cpu", counting=True, library_dirs=[libdir])
    r.add_facts("e", np.array([[1], [2]]))
    r.materialise()
    r.update(insert={"e": np.array([[10]])}, delete={"e": np.array([[1]])})
    assert rows(r, "p") == {(2, 3), (10, 11)}
    save_store(r, tmp_path / "st")
    s = open_store(tmp_path / "st", device="cpu")  # the library is found by its path
    s.update(insert={"e": np.array([[20]])})
    assert rows(s, "p") == {(2, 3), (10, 11), (20, 21)}


def test_cli_library_options(libdir: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(".functor add1(number): number\n.decl o(x: number)\no(@add1(41)).\n"
                    ".output o\n")
    assert main(["run", str(prog), "-D", str(tmp_path), "-L", str(libdir)]) == 0
    assert (tmp_path / "o.csv").read_text().split() == ["42"]
    assert main(["run", str(prog), "-D", str(tmp_path), "-l",
                 str(libdir / "libfunctors.so")]) == 0
    assert main(["run", str(prog), "-D", str(tmp_path), "-L", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "p.dl:1:10: functor 'add1': no loaded library defines it" in err


@pytest.mark.parametrize("text, where, message", [
    (".decl o(x: number)\no(@nope(1)).", "2:4", "functor 'nope' is not declared"),
    (".functor f(number): number stateful\n", "1:10", "is stateful"),
    (".functor f(number): number\n.functor f(number): number\n", "2:10", "redeclared"),
    (".functor f(number): number\n.decl o(x: number)\no(@f(1, 2)).", "3:4",
     "'@f' takes 1 argument(s), 2 given"),
    (".functor f(number): number\n.decl o(x: symbol)\no(@f(1)).", "3:4", "type mismatch"),
    (".functor f(symbol): number\n.decl o(x: number)\no(@f(1)).", "3:6", "type mismatch"),
    (".type R = [a: number]\n.functor f(R): number\n", "2:12", "record and ADT types"),
])
def test_refused_with_location(text: str, where: str, message: str) -> None:
    with pytest.raises(ProgramError) as e:
        Reasoner(text, device="cpu", library_dirs=["/nonexistent"])
    assert f"<program>:{where}" in str(e.value) and message in str(e.value)


def test_spark_backend_refuses() -> None:
    from gpu_engine.host.spark.reasoner import SparkReasoner

    with pytest.raises(ProgramError, match=r"<program>:1:10: the Spark backend does not call"):
        SparkReasoner(".functor f(number): number\n.decl o(x: number)\no(@f(1)).",
                      spark=object())
