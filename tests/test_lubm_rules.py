"""The VLog .dlog -> Soufflé translator for the LUBM rule sets."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # benchmarks/ is not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.lubm_rules import (  # noqa: E402
    EXAMPLES_WITH_INPUT,
    RDF_TYPE,
    RULE_SETS,
    RULES_DIR,
    UB,
    parse_dlog,
    to_souffle,
    translate_file,
)

EXAMPLES = REPO_ROOT / "examples" / "lubm"
needs_shared = pytest.mark.skipif(not RULES_DIR.exists(), reason="shared/bench-data absent")


def _decls(text: str) -> dict[str, int]:
    out = {}
    for m in re.finditer(r"^\.decl\s+(\w+)\(([^)]*)\)", text, re.M):
        out[m.group(1)] = len([a for a in m.group(2).split(",") if a.strip()])
    return out


def _atoms(text: str) -> list[tuple[str, int]]:
    """(predicate, arity) of every atom in the rules of a Soufflé text."""
    atoms = []
    for line in text.splitlines():
        if ":-" not in line:
            continue
        for m in re.finditer(r'(\w+)\(((?:"[^"]*"|[^()"])*)\)', line):
            atoms.append((m.group(1), len(re.findall(r'"[^"]*"|[^,\s][^,]*', m.group(2)))))
    return atoms


def test_small_program() -> None:
    src = (
        "RP0(A) :- TE(A,rdf:type,<http://swat.cse.lehigh.edu/onto/univ-bench.owl#University>)\n"
        f"RP1(A,B) :- TE(A,<{UB}degreeFrom>,B)\n"
        "\n"
        "RP0(X1) :- RP1(X,X1)\n"
        "RP2(X,Z) :- RP1(X,Y),RP1(Y,Z)\n"
        f"RP1(X,<{UB}NI3>) :- RP0(X)\n"
    )
    prog = parse_dlog(src, "t")
    assert prog.arity == {"RP0": 1, "TE": 3, "RP1": 2, "RP2": 2}
    assert prog.idb_predicates == ["RP0", "RP1", "RP2"]
    assert prog.loaded_from == {"RP0": f"<{UB}University>", "RP1": f"<{UB}degreeFrom>"}
    text = to_souffle(prog)
    assert ".decl TE(s:symbol, p:symbol, o:symbol)" in text
    assert ".input TE" not in text
    assert f'RP0(A) :- TE(A, "{RDF_TYPE}", "<{UB}University>").' in text
    assert "RP2(X, Z) :- RP1(X, Y), RP1(Y, Z)." in text
    assert f'RP1(X, "<{UB}NI3>") :- RP0(X).' in text
    assert [ln for ln in text.splitlines() if ln.startswith(".output")] == [
        ".output RP0", ".output RP1", ".output RP2"]
    assert ".input TE" in to_souffle(prog, with_input=True)


@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("RP0(A) :- TE(A,foo:bar,B)", "unknown prefix"),
        ("RP0(A) :- TE(A,B)\nRP1(A) :- TE(A,B,C)", "TE used with arity 3"),
        ("RP0(A) :- RP1(A)\nRP2(A) :- RP0(A,B)", "RP0 used with arity 2, earlier 1"),
        ("RP0(A,B) :- RP1(A)", "not bound"),
        ("RP0(A) :- RP1(A) RP2(A)", "expected ','"),
        ("RP0(A :- RP1(A)", "cannot read atom"),
        ("TE(A,B,C) :- RP1(A,B,C)", "cannot be a rule head"),
    ],
)
def test_errors_name_the_line(src: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        parse_dlog("\n" + src, "bad")
    assert "bad:" in str(info.value)


def test_prefix_declarations_and_comments() -> None:
    src = "@prefix ex: <http://example.org/> .\n% comment\nRP0(A) :- TE(A,ex:p,ex:o)\n"
    text = to_souffle(parse_dlog(src))
    assert 'RP0(A) :- TE(A, "<http://example.org/p>", "<http://example.org/o>").' in text


@needs_shared
@pytest.mark.parametrize("name", RULE_SETS)
def test_rule_sets_translate_completely(name: str) -> None:
    dlog = RULES_DIR / f"{name}.dlog"
    lines = [ln for ln in dlog.read_text().splitlines() if ln.strip()]
    prog = parse_dlog(dlog.read_text(), name)
    assert len(prog.rules) == len(lines)
    text = translate_file(dlog)
    # Every rule is there, each on one line ending with '.', with no prefixed names left.
    rules = [ln for ln in text.splitlines() if ":-" in ln]
    assert len(rules) == len(lines)
    assert all(r.endswith(".") for r in rules)
    assert "rdf:" not in text
    assert text.count(f'"{RDF_TYPE}"') == sum("rdf:type" in ln for ln in lines)
    # Declarations: TE/3 and every other predicate, all symbol attributes, arities consistent.
    decls = _decls(text)
    assert decls["TE"] == 3
    assert set(decls) == {"TE", *prog.idb_predicates}
    for pred, arity in _atoms(text):
        assert decls[pred] == arity, (pred, arity)
    assert all(n in (1, 2) for p, n in decls.items() if p != "TE")
    # Every IDB predicate is output, TE is not.
    outputs = {ln.split()[1] for ln in text.splitlines() if ln.startswith(".output ")}
    assert outputs == set(prog.idb_predicates)
    # Each IDB predicate of the reference counts is loaded from the IRI the counts file names.
    counts = RULES_DIR.parents[1] / "expected" / f"{name}.lubm1.counts.tsv"
    if counts.exists():
        rows = [ln.split("\t") for ln in counts.read_text().splitlines()
                if ln and not ln.startswith("#") and not ln.startswith("TOTAL")]
        assert {r[0] for r in rows} == set(prog.idb_predicates)
        for pred, _, iri in rows:
            assert prog.loaded_from.get(pred, "<>")[1:-1] == iri


@needs_shared
def test_upper_bound_head_constants() -> None:
    text = translate_file(RULES_DIR / "LUBM_U.dlog")
    heads = re.findall(r'^(\w+)\(X, "<(http://[^>]+#NI\d+)>"\) :- ', text, re.M)
    assert len(heads) == 8
    assert {iri.rsplit("#", 1)[0] + "#" for _, iri in heads} == {UB}


@needs_shared
@pytest.mark.parametrize("name", RULE_SETS)
def test_examples_are_up_to_date(name: str) -> None:
    example = EXAMPLES / f"{name}.dl"
    assert example.exists(), "run: python -m benchmarks.lubm_rules --examples"
    expected = translate_file(RULES_DIR / f"{name}.dlog", with_input=EXAMPLES_WITH_INPUT)
    assert example.read_text() == expected


@pytest.mark.parametrize("name", RULE_SETS)
def test_examples_parse_in_the_engine(name: str) -> None:
    engine = pytest.importorskip("gpu_engine")
    example = EXAMPLES / f"{name}.dl"
    r = engine.Reasoner(example.read_text(), device="cpu")
    sizes = r.relation_sizes()
    assert "TE" in sizes
    assert set(_decls(example.read_text())) <= set(sizes)
