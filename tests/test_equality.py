"""Equality by rewriting (Mat≈, gpu_engine.equality): the paper's and the brief's worked
examples with their expected values, refusals, answers, the store, updates, recognition
of hand-written axioms, and generated programs judged by tests/reference.py on the same
program with equality spelled out as rules (tests/eq_generators.py; `make fuzz-eq` runs
many more)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import reference  # noqa: E402
from eq_generators import (  # noqa: E402
    PAPER_31,
    equality_program,
    insert_the_rest,
    paper_31,
    rows,
    spelled_text,
)

from gpu_engine import Reasoner  # noqa: E402
from gpu_engine.ir import ProgramError  # noqa: E402


def test_paper_31_relational_form() -> None:
    """Brief §1.2 example 2: 12 expanded facts, 3 rewritten; deleting R(a, d) splits
    the classes (6 facts, rewritten = expanded)."""
    r = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    assert rows(r, "R") == {(s, o) for s in "ac" for o in "bd"}
    assert rows(r, "eq") == {(x, y) for c in ("ac", "bd") for x in c for y in c}
    assert sum(r.relation_sizes().values()) == 12
    assert rows(r, "R", False) == {("a", "b")}
    assert rows(r, "eq", False) == {("a", "a"), ("b", "b")}
    assert sum(r.relation_sizes(expand=False).values()) == 3
    classes = {tuple(x.values()) for x in r.equivalence_classes().to_pylist()}
    assert classes == {("a", "a"), ("a", "c"), ("b", "b"), ("b", "d")}
    st = r.update(delete={"R": [("a", "d")]})
    # auto: DRed≈ (small classes touched: equality_maintenance.SPLIT_MEMBERS); Remat≈ past
    # its time budget
    assert st.algorithm == "dred≈" or "time budget" in st.note
    assert rows(r, "R") == rows(r, "R", False) == {("a", "b"), ("c", "d")}
    assert rows(r, "eq") == {(x, x) for x in "abcd"}
    assert sum(r.relation_sizes().values()) == 6
    assert r.equivalence_classes().num_rows == 0


def test_redundant_derivations_counted_once() -> None:
    """Paper §3.2 (brief §1.2 example 3): τ1 = {y1↦b, y2↦d} and τ2 = {y1↦b, y2↦b} are
    each considered once: a guarded rule has exactly the 4 instances over R(a,b), R(a,d)
    (Theorem 1.2); the bare functional-property rule runs as a star per group: 2."""
    for guard, expected in ((", S(x)", 4), ("", 2)):
        r = Reasoner(f""".decl R(x: symbol, y: symbol)
            .decl S(x: symbol)
            .decl eq(x: symbol, y: symbol) equality
            eq(y1, y2) :- R(x, y1), R(x, y2){guard}.""", device="cpu")
        r.add_facts("R", [("a", "b"), ("a", "d")])
        r.add_facts("S", [("a",)])
        st = r.materialise()
        rule = next(x for s in st.strata for x in s.rules if "R(x, y1)" in x.rule)
        assert rule.derivations == expected
        assert rows(r, "R", False) == {("a", "b")}
        assert rows(r, "R") == {("a", "b"), ("a", "d")}


OBAMA = """
.decl presidentOf(x: symbol, y: symbol)
.decl same(x: symbol, y: symbol) equality
.output presidentOf
.output same
presidentOf("USPresident", "US").
presidentOf("Obama", "America").
presidentOf("Obama", "US").
same(x, "USA") :- presidentOf("Obama", x).
same(x, "Obama") :- presidentOf(x, "USA").
"""


def test_obama_rule_constants_are_normalised() -> None:
    """AAAI'15 example (brief §1.2 example 4), relational form: US gets the smallest id
    of {US, America, USA}, so rule S only fires when its constant USA is normalised to
    US; expanded 6 + 13 = 19 facts (the RDF form's 21 less presidentOf≈presidentOf and
    ≈≈≈), 4 rewritten."""
    r = Reasoner(OBAMA, device="cpu")
    st = r.materialise()
    usa = {"US", "America", "USA"}
    obama = {"Obama", "USPresident"}
    assert rows(r, "presidentOf") == {(p, c) for p in obama for c in usa}
    assert rows(r, "same") == {(a, b) for k in (usa, obama) for a in k for b in k}
    assert rows(r, "presidentOf", False) == {("USPresident", "US")}
    assert rows(r, "same", False) == {("US", "US"), ("USPresident", "USPresident")}
    assert st.equality["expanded_facts"] == 19 and st.facts == 3
    # spelled out: 2n³+n²+n derivations for the class of n = 3 (66 without reflexivity)
    spelled = Reasoner(OBAMA.replace(") equality", ")") + _axioms_text(
        {"presidentOf": (0, 1), "same": (0, 1)}), device="cpu", modules="off")
    sst = spelled.materialise()
    assert sum(spelled.relation_sizes().values()) == 19
    assert st.derivations < sst.derivations


def _axioms_text(domain: dict[str, tuple[int, ...]], eq: str = "same") -> str:
    lines = [f"{eq}(y, x) :- {eq}(x, y).", f"{eq}(x, z) :- {eq}(x, y), {eq}(y, z)."]
    for name, pos in domain.items():
        for p in pos:
            args = [f"c{i}" for i in range(2 if name else 1)]
            moved = [("n" if i == p else a) for i, a in enumerate(args)]
            lines.append(f"{eq}({args[p]}, {args[p]}) :- {name}({', '.join(args)}).")
            lines.append(f"{name}({', '.join(moved)}) :- {name}({', '.join(args)}), "
                         f"{eq}({args[p]}, n).")
    return "\n" + "\n".join(lines) + "\n"


def test_class_merged_over_several_rounds_reaches_rules_reading_it() -> None:
    r = Reasoner("""
        .decl link(x: symbol, y: symbol)
        .decl same(x: symbol, y: symbol) equality
        .decl tag(x: symbol)
        .decl hit(x: symbol)
        .output hit
        .output tag
        same(x, y) :- link(x, y).
        link(y, z) :- link(x, y), same(x, z).
        hit(x) :- tag(x), link(x, "z").
        link("a", "b"). link("c", "a"). link("q", "z"). tag("c"). tag("q").
    """, device="cpu")
    st = r.materialise()
    assert rows(r, "tag") == {(x,) for x in "abcqz"}
    assert rows(r, "hit") == {("q",), ("z",)}  # link(q, z): z's class reads "z"
    assert st.equality["largest_class"] == 3 and st.equality["classes"] == 2


@pytest.mark.parametrize("text, fragment", [
    (".decl p(x: symbol) .decl q(x: symbol) .decl s(x: symbol, y: symbol) equality\n"
     "p(x) :- q(x), !s(x, x).", "negation of 's'"),
    (".decl p(x: symbol, y: symbol) .decl s(x: symbol, y: symbol) equality\n"
     "s(x, y) :- p(x, y), x != y.", "comparison or functor"),
    (".decl p(x: symbol) .decl n(x: number) .decl s(x: symbol, y: symbol) equality\n"
     "n(strlen(x)) :- p(x).", "comparison or functor"),
    (".decl p(x: symbol) .decl n(x: number) .decl s(x: symbol, y: symbol) equality\n"
     "n(c) :- c = count : { p(_) }.", "aggregate"),
    (".type A <: symbol .type B <: symbol .decl p(x: A) .decl q(x: B)\n"
     ".decl s(x: A, y: A) equality\nq(as(x, B)) :- p(x).", "joins a column"),
    (".decl s(x: number, y: number) equality", "only symbol types"),
    (".decl s(x: symbol, y: symbol) equality .decl t(x: symbol, y: symbol) equality",
     "only one relation"),
    (".decl s(x: symbol, y: symbol) equality inline .decl p(x: symbol) p(x) :- s(x, _).",
     "cannot be inline"),
])
def test_refused_with_location(text: str, fragment: str) -> None:
    with pytest.raises(ProgramError) as exc:
        Reasoner(text, device="cpu")
    assert fragment in str(exc.value) and exc.value.loc is not None and exc.value.loc.line


def test_queries_answer_the_expansion() -> None:
    """Queries read the expansion (tests/test_equality_query.py has the rest)."""
    r = paper_31([("a", "b"), ("c", "b")])
    assert {tuple(x.values()) for x in r.query("R(x, y)").to_pylist()} == {
        ("a", "b"), ("c", "b")}


def test_counting_algorithms_refused() -> None:
    with pytest.raises(ProgramError, match="derivation counters"):
        Reasoner(PAPER_31, device="cpu", counting=True)
    r = paper_31([("a", "b")])
    with pytest.raises(ValueError, match="use remat"):
        r.update(insert={"R": [("c", "b")]}, algorithm="dredc")


def test_type_family_and_other_columns() -> None:
    """Only the family of the equality's type is merged: O columns keep their values."""
    r = Reasoner("""
        .type D <: symbol
        .type E <: D
        .type O <: symbol
        .decl same(x: D, y: D) equality
        .decl p(x: E, o: O)
        .decl q(o: O)
        p("a", "k"). p("b", "k"). p("c", "l").
        same(x, y) :- p(x, o), p(y, o).
        q(o) :- p(_, o).
    """, device="cpu")
    r.materialise()
    assert rows(r, "p") == {("a", "k"), ("b", "k"), ("c", "l")}
    assert rows(r, "same") == {(x, y) for k in ("ab", "c") for x in k for y in k}
    assert rows(r, "q") == {("k",), ("l",)}


def test_insertions_continue_and_store_keeps_rho(tmp_path: Path) -> None:
    from gpu_engine.host.store import open_store, read_meta, save_store

    r = paper_31([("a", "b"), ("c", "d")])
    st = r.update(insert={"R": [("a", "d")]})
    assert st.algorithm == "mat≈" and st.deleted == 0
    fresh = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    assert rows(r, "R") == rows(fresh, "R") and rows(r, "eq") == rows(fresh, "eq")
    save_store(r, tmp_path / "db")
    meta = read_meta(tmp_path / "db")
    assert meta["format_version"] == 2 and "rho.arrow" in meta["files"]
    back = open_store(tmp_path / "db", device="cpu")
    assert rows(back, "R") == rows(r, "R") and rows(back, "R", False) == {("a", "b")}
    back.update(delete={"R": [("a", "d")]})
    assert rows(back, "R") == {("a", "b"), ("c", "d")}


def test_cli_no_expand_and_classes(tmp_path: Path) -> None:
    from gpu_engine.host.cli import main

    prog = tmp_path / "p.dl"
    prog.write_text(PAPER_31 + 'R("a","b"). R("c","d"). R("a","d").\n')
    assert main(["run", str(prog), "-D", str(tmp_path / "full")]) == 0
    assert len((tmp_path / "full" / "R.csv").read_text().splitlines()) == 4
    assert main(["run", str(prog), "-D", str(tmp_path / "rw"), "--no-expand",
                 "--stats-json", str(tmp_path / "s.json")]) == 0
    assert (tmp_path / "rw" / "R.csv").read_text() == "a\tb\n"
    assert (tmp_path / "rw" / "eq.classes.csv").read_text() == "a\ta\na\tc\nb\tb\nb\td\n"
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["equality"]["expanded_facts"] == 12


CLAROS_LIKE = """
.decl TE(s: symbol, p: symbol, o: symbol)
.decl RP1(x: symbol, y: symbol)
.decl RP5(x: symbol, y: symbol)
.output RP1
.output RP5
RP1(a, b) :- TE(a, "p1", b).
RP5(a, b) :- TE(a, "sameAs", b).
RP5(x, y) :- RP5(y, x).
RP5(x, z) :- RP5(x, y), RP5(y, z).
RP1(y, x1) :- RP1(x0, x1), RP5(x0, y).
RP1(x0, y) :- RP1(x0, x1), RP5(x1, y).
TE("m", "p1", "n"). TE("m", "sameAs", "m2"). TE("m2", "sameAs", "m3"). TE("n", "sameAs", "n2").
"""


def test_spelled_out_equality_recognised_and_rewritten() -> None:
    """The Claros_L pattern (symmetry, transitivity, replacement, no reflexivity rule):
    a warning names RP5; rewrite_equality=True gives the same answers."""
    plain = Reasoner(CLAROS_LIKE, device="cpu")
    assert any("spell out 'RP5'" in n for n in plain.notes)
    plain.materialise()
    rw = Reasoner(CLAROS_LIKE, device="cpu", rewrite_equality=True)
    assert rw.program.equality is not None and not rw.program.equality.reflexive
    rw.materialise()
    for name in ("RP1", "RP5", "TE"):
        assert rows(rw, name) == rows(plain, name), name


@pytest.mark.parametrize("seed", range(12))
def test_generated_against_spelled_out_reference(seed: int) -> None:
    """Judge J1/J2: expanded Mat≈ = reference evaluation of the spelled-out program, and
    the expansion count equals its size; J3: every stored domain value is a
    representative, the equality relation holds only reflexive rows."""
    case = equality_program(seed)
    r = Reasoner(case.text, device="cpu")
    st = r.materialise()
    want = reference.evaluate(case.spelled)
    for name in case.kinds:
        assert rows(r, name) == want[name], (seed, name)
    assert st.equality["expanded_facts"] == sum(len(v) for v in want.values())
    rho = r.engine.rho()
    assert (rho[rho] == rho).all()
    for name, pos in r.program.equality.domain.items():
        cols = r.engine.columns(name)
        for p in pos:
            assert (rho[cols[p]] == cols[p]).all()
    a, b = r.engine.columns("same")
    assert (a == b).all()


@pytest.mark.parametrize("seed", [0, 5, 9])
def test_generated_fewer_derivations_than_spelled_out(seed: int) -> None:
    """Judge J6 (part): Mat≈ considers no more rule instances than the engine's own
    spelled-out evaluation, which agrees with it on every relation."""
    case = equality_program(seed)
    r = Reasoner(case.text, device="cpu")
    st = r.materialise()
    s = Reasoner(spelled_text(case), device="cpu")
    sst = s.materialise()
    for name in case.kinds:
        assert rows(r, name) == rows(s, name)
    assert st.derivations <= sst.derivations


@pytest.mark.parametrize("seed", [1, 2, 3, 7, 11])
def test_generated_insertions_continue(seed: int) -> None:
    """Insertions continue Mat≈: a materialisation of some facts plus an update
    inserting the others equals the materialisation of all of them (expanded)."""
    case = equality_program(seed)
    r, st = insert_the_rest(case, seed, 2)
    assert st.algorithm == "mat≈"
    want = reference.evaluate(case.spelled)
    for name in case.kinds:
        assert rows(r, name) == want[name], (seed, name)


def test_format_1_store_still_loads(tmp_path: Path) -> None:
    """A store written before format 2 (no rho.arrow) loads as before."""
    from gpu_engine.host.store import _meta_crc, current_version, open_store, save_store

    r = Reasoner(".decl e(x: symbol, y: symbol) .decl p(x: symbol, y: symbol)\n"
                 "p(x, y) :- e(x, y).", device="cpu")
    r.add_facts("e", [("a", "b")])
    save_store(r, tmp_path / "db")
    meta_path = tmp_path / "db" / current_version(tmp_path / "db") / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["format_version"] = 1
    del meta["meta_crc32"]
    meta["meta_crc32"] = _meta_crc(meta)
    meta_path.write_text(json.dumps(meta))
    assert rows(open_store(tmp_path / "db", device="cpu"), "p") == {("a", "b")}


def test_insertion_merge_reaches_rule_constant_over_unchanged_rows() -> None:
    """Inserting key(c, K) merges c into b; q(x) :- a(x, "c") must now read the old,
    unchanged row a(u, b) (the rule is evaluated over it once, Algorithm 6 l. 55-58)."""
    prog = """
        .decl a(x: symbol, y: symbol)
        .decl key(x: symbol, k: symbol)
        .decl same(x: symbol, y: symbol) equality
        .decl q(x: symbol)
        same(x, y) :- key(x, k), key(y, k).
        q(x) :- a(x, "c").
        a("u", "b"). key("b", "K").
    """
    r = Reasoner(prog, device="cpu")
    r.materialise()
    assert rows(r, "q") == set()
    assert r.update(insert={"key": [("c", "K")]}).algorithm == "mat≈"
    assert rows(r, "q") == {("u",)}


@pytest.mark.parametrize("body", ['x = "a", x = "b"', 'y = "b", x = y, x = "a"',
                                  '"a" = "b"'])
def test_rule_equating_two_constants_of_one_class_never_fires(body: str) -> None:
    """Rewriting normalises rule constants; a body that ties two different constants
    together must still derive nothing (the spelled-out program derives nothing)."""
    text = (".type T <: symbol\n.decl same(x: T, y: T) equality\n.decl p(x: T)\n"
            ".decl q(x: T)\np(\"a\").\np(\"b\").\nsame(\"a\", \"b\").\n"
            f"q(x) :- p(x), {body}.\n")
    r = Reasoner(text, device="cpu")
    r.materialise()
    assert rows(r, "q") == set()
    axioms = ("same(y, x) :- same(x, y).\nsame(x, z) :- same(x, y), same(y, z).\n"
              + "".join(f"same(x, x) :- {n}(x).\n{n}(y) :- {n}(x), same(x, y).\n"
                        for n in ("p", "q")))
    spelled = Reasoner(text.replace(") equality", ")") + axioms, device="cpu")
    spelled.materialise()
    assert spelled.relation_sizes()["q"] == 0
