"""Built-in functors and constraints with Soufflé's semantics (expected values from
Soufflé's behaviour: its interpreter and the wider-souffle conformance cases)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gpu_engine import Reasoner
from gpu_engine.ir import ProgramError
from gpu_engine.strings import (
    FunctorError,
    ecma_regex,
    float_text,
    parse_float,
    parse_signed,
    parse_unsigned,
)


def lines(program: str, rel: str, device: str = "cpu") -> list[str]:
    r = Reasoner(program, device=device)
    r.materialise()
    return sorted(r.render(rel).splitlines())


# --- bitwise shifts -----------------------------------------------------------------------


def test_shift_counts_masked_to_five_bits(device: str) -> None:
    prog = """
    .decl X(x:number) .decl Y(y:number)
    X(-10). X(1). Y(-64). Y(-48). Y(-1). Y(3). Y(31). Y(33).
    .decl L(x:number, y:number, z:number) .decl R(x:number, y:number, z:number)
    .decl U(x:number, y:number, z:number)
    L(x, y, x bshl y) :- X(x), Y(y).
    R(x, y, x bshr y) :- X(x), Y(y).
    U(x, y, z) :- X(x), Y(y), z = (x band ((0x7FFFFFFF bshl 1) + 1)) bshru y.
    """
    left = dict(((int(a), int(b)), int(c)) for a, b, c in
                (ln.split("\t") for ln in lines(prog, "L", device)))
    assert left[(-10, -64)] == -10 and left[(-10, -48)] == -655360
    assert left[(1, -1)] == -2147483648 and left[(1, 33)] == 2 and left[(-10, 31)] == 0
    right = dict(((int(a), int(b)), int(c)) for a, b, c in
                 (ln.split("\t") for ln in lines(prog, "R", device)))
    assert right[(-10, -48)] == -1 and right[(-10, 3)] == -2 and right[(1, 33)] == 0
    uns = dict(((int(a), int(b)), int(c)) for a, b, c in
               (ln.split("\t") for ln in lines(prog, "U", device)))
    assert uns[(-10, -48)] == 65535 and uns[(-10, 3)] == 536870910


def test_shift_constants_fold_like_the_engine() -> None:
    prog = ".decl A(x:number) A(1 bshl 33). A(-1 bshr 40). A(-8 bshru 65)."
    assert lines(prog, "A") == ["-1", "2", "2147483644"]


# --- string to number and back ----------------------------------------------------------------


@pytest.mark.parametrize("text,value", [
    ("10", 10), ("-10", -10), ("0xcafe", 51966), ("-0xcafe", -51966), ("0xBEEF", 48879),
    ("0b100", 4), ("-0b100", -4), ("  42", 42), ("12ab", 12), ("+7", 7), ("010", 10),
    ("0x", 0), ("2147483647", 2147483647), ("-2147483648", -2147483648),
])
def test_parse_signed(text: str, value: int) -> None:
    assert parse_signed(text) == value


@pytest.mark.parametrize("text", ["", "abc", "0b", "-", "2147483648", "0b2"])
def test_parse_signed_errors(text: str) -> None:
    with pytest.raises(FunctorError):
        parse_signed(text)


def test_parse_unsigned_and_float() -> None:
    assert parse_unsigned("4294967295") == 4294967295 and parse_unsigned("0x10") == 16
    assert parse_unsigned("0b11") == 3
    for bad in ("-1", "4294967296", "x"):
        with pytest.raises(FunctorError):
            parse_unsigned(bad)
    assert parse_float(" 1.5e1xyz") == 15.0 and parse_float("-.5") == -0.5
    assert parse_float("inf") == float("inf") and parse_float("0x1p-2") == 0.25
    for bad in ("abc", "1e39", ""):
        with pytest.raises(FunctorError):
            parse_float(bad)


def test_float_text_is_c_percent_f() -> None:
    assert float_text(2.0) == "2.000000" and float_text(-0.125) == "-0.125000"
    assert float_text(float("inf")) == "inf"


def test_conversions_in_rules(device: str) -> None:
    prog = """
    .decl S(s:symbol) S("0x10"). S("-0b11"). S(" 7").
    .decl N(x:number) N(to_number(s)) :- S(s).
    .decl F(x:float) F(to_float("2.5")). F(x) :- N(n), x = itof(n).
    .decl T(s:symbol) T(to_string(x)) :- F(x). T(to_string(as(2, float))).
    """
    assert lines(prog, "N", device) == ["-3", "16", "7"]
    assert lines(prog, "T", device) == ["-3.000000", "16.000000", "2.000000", "2.500000",
                                        "7.000000"]


def test_bad_to_number_is_an_error_with_the_rule_location() -> None:
    prog = '.decl S(s:symbol) S("abc").\n.decl N(x:number)\nN(to_number(s)) :- S(s).'
    with pytest.raises(ProgramError, match=r'to_number\("abc"\)') as e:
        Reasoner(prog, device="cpu").materialise()
    assert e.value.loc is not None and e.value.loc.line == 3


# --- substr, symbol min/max --------------------------------------------------------------------


def test_substr_out_of_range_gives_empty_with_a_warning(capsys: pytest.CaptureFixture[str],
                                                        device: str) -> None:
    prog = """
    .decl S(s:symbol, i:number, n:number)
    S("abc", 1, -1). S("abc", 5, 1). S("abc", -1, 2). S("abc", 3, 2). S("abc", 0, 2).
    .decl T(s:symbol, i:number, n:number, r:symbol) T(s, i, n, substr(s, i, n)) :- S(s, i, n).
    """
    got = lines(prog, "T", device)
    assert got == ["abc\t-1\t2\t", "abc\t0\t2\tab", "abc\t1\t-1\tbc", "abc\t3\t2\t",
                   "abc\t5\t1\t"]
    err = capsys.readouterr().err
    assert 'warning: wrong index position provided by substr("abc",5,1) functor.' in err


def test_symbol_min_max(device: str) -> None:
    prog = """
    .decl A(x:symbol) A(max("b", "a")). A(max("b", "bb")). A(max("a3", "a2", "a0", "a1")).
    .decl B(x:symbol) B(min("b", "a")). B(min("b", "bb")). B(x) :- A(y), x = min(y, "a1").
    """
    assert lines(prog, "A", device) == ["a3", "b", "bb"]
    assert lines(prog, "B", device) == ["a", "a1", "b"]


# --- match / contains -------------------------------------------------------------------------


def test_match_and_contains(device: str) -> None:
    prog = """
    .decl S(s:symbol) S("aaaa"). S("abba"). S("bcab"). S("a"). S("").
    .decl P(p:symbol) P("a.*"). P("b.*").
    .decl M(p:symbol, s:symbol) M(p, s) :- P(p), S(s), match(p, s).
    .decl N(s:symbol) N(s) :- S(s), !match("a.*", s).
    .decl C(s:symbol) C(s) :- S(s), contains("ab", s).
    .decl D(s:symbol) D(s) :- S(s), !contains("b", s).
    """
    assert lines(prog, "M", device) == ["a.*\ta", "a.*\taaaa", "a.*\tabba", "b.*\tbcab"]
    assert lines(prog, "N", device) == ["", "bcab"]
    assert lines(prog, "C", device) == ["abba", "bcab"]
    assert lines(prog, "D", device) == ["", "a", "aaaa"]


def test_match_is_a_full_match() -> None:
    prog = '.decl S(s:symbol) S("xaby"). S("ab").\n.decl M(s:symbol) M(s) :- S(s), match("ab", s).'
    assert lines(prog, "M") == ["ab"]


def test_bad_regex_is_false_for_match_and_not_match(capsys: pytest.CaptureFixture[str]) -> None:
    prog = """
    .decl A(x:symbol) A("foobar"). A("fo{x}bar").
    .decl B(x:symbol)
    B(x) :- A(x), match("fo{2}b.*", x).
    B(x) :- A(x), !match("fo{x}b.*", x).
    """
    assert lines(prog, "B") == ["foobar"]
    assert 'warning: wrong pattern provided "fo{x}b.*"' in capsys.readouterr().err


def test_ecma_regex_translation() -> None:
    assert ecma_regex("a{2,3}") is not None and ecma_regex("a{x}") is None
    assert ecma_regex("b.*[") is None and ecma_regex("(?P<n>a)") is None
    assert ecma_regex("[{]") is not None and ecma_regex(r"\{") is not None
    rx = ecma_regex(r"\d+")
    assert rx is not None and rx.fullmatch("\u0663") is None  # ASCII digits only


@pytest.mark.parametrize(("pattern", "text", "matches"), [
    ("id_[[:digit:]]+#NOT", "id_1234#NOT", True),  # std::regex's classes (Soufflé issue 2532)
    ("[[:alpha:]_][[:alnum:]_]*", "_x1", True), ("[[:alpha:]]+", "ab1", False),
    ("[^[:space:]]+", "a b", False), ("[[:punct:]]", "!", True), ("[[:punct:]]", "a", False),
    ("[[:xdigit:]]{2}", "fF", True), ("[[:upper:][:lower:]]", "q", True),
    ("[[.a.]]", "a", True), ("[[=b=]]x", "bx", True),
    ("a.b", "a\nb", False), ("a.b", "a\rb", False), ("a.b", "axb", True),  # '.' stops at \n, \r
    ("a$\n", "a\n", False), ("a$", "a", True),  # '$' is the end of the text only
    ("[]a]", "a]", False), ("[^]", "\n", True),  # ']' first ends an ECMAScript class
    ("[a&&b]", "&", True), ("a[[]", "a[", True), ("[a|~]", "~", True),  # literals in a set
    ("\\cJ", "\n", True), ("(a)\\1", "aa", True),
])
def test_ecma_regex_semantics(pattern: str, text: str, matches: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no FutureWarning for nested sets
        rx = ecma_regex(pattern)
    assert rx is not None and (rx.fullmatch(text) is not None) == matches


@pytest.mark.parametrize("pattern", ["a*+", "a{2}+", "\\A", "\\Z", "\\e", "[[:foo:]]", "[[.ab.]]",
                                     "(?<=a)b", "(?i)a", "[a", "[[:digit:]"])
def test_ecma_regex_rejects_what_std_regex_rejects(pattern: str) -> None:
    assert ecma_regex(pattern) is None


def test_match_with_character_classes_in_a_program() -> None:
    prog = r"""
    .decl T(id: symbol) T("<t_1234#NOT>"). T("<t_12a4#NOT>"). T("<u_1#NOT>").
    .decl C(id: symbol, base: symbol)
    C(id, b) :- T(id), match("<t_[[:digit:]]+#NOT>", id), n = strlen(id),
                b = cat(substr(id, 0, n - 5), ">").
    """
    assert lines(prog, "C") == ["<t_1234#NOT>\t<t_1234>"]


# --- range --------------------------------------------------------------------------------------


def test_range_integers(device: str) -> None:
    prog = """
    .decl A(x:number) A(x) :- x = range(1, 4).
    .decl B(x:number) B(x) :- x = range(9, 0, -3).
    .decl C(x:number) C(x) :- x = range(9, 0, 1).
    .decl D(x:unsigned) D(x) :- x = range(5, 2).
    .decl E(x:number, y:number) E(x, y) :- x = range(0, 3), y = range(x, 3).
    .decl Z(x:number) Z(x) :- x = range(2, 5, 0). Z(x) :- x = range(2, 2, 0).
    .decl G(x:number) G(x) :- E(x, _), x = range(1, 10).
    .decl H(x:number) H(x) :- E(range(1, 2), x).
    """
    assert lines(prog, "A", device) == ["1", "2", "3"]
    assert lines(prog, "B", device) == ["3", "6", "9"]
    assert lines(prog, "C", device) == []
    assert lines(prog, "D", device) == ["3", "4", "5"]
    assert len(lines(prog, "E", device)) == 6
    assert lines(prog, "Z", device) == ["2"]
    assert lines(prog, "G", device) == ["1", "2"]
    assert lines(prog, "H", device) == ["1", "2"]


def test_range_floats_step_by_float32_addition(device: str) -> None:
    prog = """
    .decl A(x:float) A(x) :- x = range(1.5, -4.6, -0.5).
    .decl B(x:float) B(x) :- x = range(-1, 0, 0.25).
    .decl C(x:float) C(x) :- x = range(0, 0.5, 0.1).
    """
    assert len(lines(prog, "A", device)) == 13
    assert lines(prog, "B", device) == ["-0.25", "-0.5", "-0.75", "-1"]
    want, x = [], np.float32(0)
    while x < np.float32(0.5):
        want.append(x)
        x = np.float32(x + np.float32(0.1))
    assert len(lines(prog, "C", device)) == len(want)


def test_range_only_where_it_can_bind() -> None:
    with pytest.raises(ProgramError, match="range"):
        Reasoner(".decl A(x:number) A(range(1, 3)).", device="cpu")
    with pytest.raises(ProgramError, match="range"):
        Reasoner(".decl A(x:number) A(x) :- x = 1 + range(1, 3).", device="cpu")


# --- autoinc ------------------------------------------------------------------------------------


def test_autoinc_numbers_derivations(device: str) -> None:
    prog = """
    .decl B(a:number) B(1). B(2).
    .decl A(a:number) A(autoinc()) :- B(1). A(autoinc()) :- B(1). A(autoinc()) :- B(1).
    .decl C(n:number, b:number) C(autoinc(), b) :- B(b).
    """
    a = lines(prog, "A", device)
    c = [ln.split("\t")[0] for ln in lines(prog, "C", device)]
    assert len(a) == 3 and len(c) == 2  # one counter for the program: all distinct
    assert sorted(map(int, a + c)) == [0, 1, 2, 3, 4]
    assert lines(".decl B(a:number) B(1).\n.decl A(a:number) A(autoinc()) :- B(1). "
                 "A(autoinc()) :- B(1). A(autoinc()) :- B(1).", "A", device) == ["0", "1", "2"]
    # `$` is Soufflé's deprecated spelling of autoinc()
    assert lines(".decl B(a:number) B(1).\n.decl A(a:number) A($) :- B(1). A($) :- B(1).",
                 "A", device) == ["0", "1"]


def test_autoinc_refused_in_recursive_rules() -> None:
    prog = ".decl A(x:number) A(0). A(autoinc()) :- A(x), x < 3."
    with pytest.raises(ProgramError, match="autoinc"):
        Reasoner(prog, device="cpu")


def test_order_dependent_programs_update_by_rematerialisation() -> None:
    prog = ".decl B(a:number) .decl A(n:number, a:number) A(autoinc(), a) :- B(a)."
    r = Reasoner(prog, device="cpu")
    r.add_facts("B", np.array([[5], [6]]))
    r.materialise()
    stats = r.update(insert={"B": np.array([[7]])})
    assert stats.algorithm == "remat"
    assert sorted(r.render("A").splitlines()) == ["0\t5", "1\t6", "2\t7"]
    with pytest.raises(ValueError, match="remat"):
        r.update(insert={"B": np.array([[8]])}, algorithm="dredc")
    with pytest.raises(ProgramError, match="autoinc"):
        Reasoner(prog, device="cpu", counting=True)


# --- choice-domain --------------------------------------------------------------------------------


def test_choice_domain_first_in_order_wins(device: str) -> None:
    prog = """
    .decl c(x:number, y:number) c(2, 5). c(2, 0). c(3, 1).
    .decl b(x:number, y:number) choice-domain x
    b(x, y) :- c(x, y).
    .decl f(x:number, y:number) choice-domain x
    f(1, 9). f(1, 2).
    """
    assert lines(prog, "b", device) == ["2\t0", "3\t1"]
    assert lines(prog, "f", device) == ["1\t2"]


def test_choice_domain_two_keys_is_a_matching(device: str) -> None:
    prog = """
    .decl e(a:number, b:number)
    e(1, 1). e(1, 2). e(2, 1). e(2, 2). e(3, 1). e(3, 3).
    .decl m(a:number, b:number) choice-domain a, b
    m(x, y) :- e(x, y).
    .decl g(a:number, b:number, c:number) choice-domain (a, b)
    g(x, y, 1) :- e(x, y). g(x, y, 2) :- e(x, y).
    """
    assert lines(prog, "m", device) == ["1\t1", "2\t2", "3\t3"]
    assert len(lines(prog, "g", device)) == 6


def test_choice_domain_in_recursion_builds_a_total_order(device: str) -> None:
    prog = """
    .decl domain(x:symbol) domain("a"). domain("b"). domain("c"). domain("d").
    .decl list(prev:symbol, data:symbol) choice-domain prev, data
    list("nil", "head").
    list(x, y) :- domain(y), list(_, x).
    """
    assert lines(prog, "list", device) == ["a\tb", "b\tc", "c\td", "head\ta", "nil\thead"]


def test_choice_domain_key_must_name_attributes() -> None:
    with pytest.raises(ProgramError, match="not an attribute"):
        Reasoner(".decl b(x:number, y:number) choice-domain z", device="cpu")


def test_subsumption_keeps_undominated_tuples(device: str) -> None:
    prog = """
    .decl R(lo:number, hi:number)
    R(1, 10). R(1, 1). R(2, 2). R(2, 130).
    R(l1, h1) <= R(l2, h2) :- l2 <= l1, h1 <= h2.
    R(min(l1, l2), max(h1, h2)) :- R(l1, h1), R(l2, h2), l2 < h1.
    .decl F(x:number) F(1). F(2). F(x1) <= F(x2) :- x1 <= x2.
    .decl E(x:number, y:number) E(1, 1). E(1, 2). E(_, x1) <= E(_, x2) :- x1 <= x2.
    .decl C(x:number) C(1). .decl D(x:number, y:number) D(1, 1).
    C(x1) <= C(x2) :- D(x1, x2), x1 <= x2.
    """
    assert lines(prog, "R", device) == ["1\t130"]
    assert lines(prog, "F", device) == ["2"]  # a tuple never dominates itself
    assert lines(prog, "E", device) == ["1\t2"]
    assert lines(prog, "C", device) == ["1"]


def test_subsumption_in_recursion_shortest_distance(device: str) -> None:
    prog = """
    .decl g(a:number, b:number) g(1, 2). g(2, 3). g(1, 3). g(3, 4).
    .decl d(x:number, n:number) d(1, 0).
    d(y, n + 1) :- d(x, n), g(x, y).
    d(x, n1) <= d(x, n2) :- n2 < n1.
    """
    assert lines(prog, "d", device) == ["1\t0", "2\t1", "3\t1", "4\t2"]


def test_subsumption_compares_one_relation() -> None:
    with pytest.raises(ProgramError, match="one relation") as e:
        Reasoner(".decl A(x:number) .decl B(x:number)\nA(x) <= B(y) :- x < y.", device="cpu")
    assert e.value.loc is not None and (e.value.loc.line, e.value.loc.column) == (2, 6)
    with pytest.raises(ProgramError, match="must not be a nullary relation") as e:
        Reasoner(".decl A() .decl B(x:number)\nB(1). A() :- B(_).\nA() <= A() :- B(1).",
                 device="cpu")
    assert e.value.loc is not None and (e.value.loc.line, e.value.loc.column) == (3, 1)


# --- division by zero, nullary facts, true/false ----------------------------------------------------


def test_division_by_zero_drops_and_warns_once(capsys: pytest.CaptureFixture[str],
                                               device: str) -> None:
    prog = """
    .decl A(x:number) A(0). A(2). A(-3).
    .decl D(x:number, y:number) D(x, 6 / x) :- A(x). D(x, 7 % x) :- A(x).
    """
    assert lines(prog, "D", device) == ["-3\t-2", "-3\t1", "2\t1", "2\t3"]
    assert capsys.readouterr().err.count("warning: division by zero") == 1


def test_true_false_constraints() -> None:
    prog = """
    .decl A(x:number) A(1). A(2).
    .decl B(x:number) B(x) :- A(x), true. B(x) :- A(x), false. B(3) :- true.
    .decl C(x:number) C(x) :- A(x), !false, !(x = 1).
    """
    assert lines(prog, "B") == ["1", "2", "3"]
    assert lines(prog, "C") == ["2"]


def test_nullary_facts_file_with_blank_lines(tmp_path) -> None:
    (tmp_path / "Def.facts").write_text("\n\n")
    (tmp_path / "Undef.facts").write_text("")
    prog = ".decl Def() .input Def() .decl Undef() .input Undef()"
    r = Reasoner(prog, device="cpu")
    r.load_inputs(tmp_path)
    r.materialise()
    assert r.relation_sizes() == {"Def": 1, "Undef": 0}


def test_plus_concatenates_symbols() -> None:
    prog = """
    .decl B(y:symbol) B("u"). B("v").
    .decl A(x:symbol)
    A("pre-" + "-post").
    A(x) :- B(y), x = "p" + y + "q".
    A(y + "s") :- B(y), y + "s" != "vs".
    .decl C(n:number) C(n) :- B(y), n = strlen(y + y).
    """
    assert sorted(lines(prog, "A")) == ["pre--post", "puq", "pvq", "us"]
    assert lines(prog, "C") == ["2"]


def test_plus_of_a_symbol_and_a_number_is_refused() -> None:
    prog = '.decl B(y:symbol) B("u").\n.decl A(x:symbol)\nA(x) :- B(y), x = y + 1.'
    with pytest.raises(ProgramError, match="type mismatch"):
        lines(prog, "A")


def test_ordering_comparisons_of_symbols_are_lexicographic() -> None:
    """Soufflé's SLT/SLE/SGT/SGE: the symbols' text compared byte by byte (UTF-8)."""
    prog = """
    .decl S(x:symbol) S("b"). S("a"). S("ab"). S("B"). S("é"). S("").
    .decl L(x:symbol, y:symbol) L(x, y) :- S(x), S(y), x < y, y <= "b".
    .decl G(x:symbol) G(x) :- S(x), x >= "ab", !S(x) ; S(x), "b" > x, x > "B".
    """
    assert lines(prog, "L") == sorted(["\tB", "\ta", "\tab", "\tb", "B\ta", "B\tab", "B\tb",
                                       "a\tab", "a\tb", "ab\tb"])
    assert lines(prog, "G") == ["a", "ab"]


def test_symbol_order_through_recursion_and_updates() -> None:
    prog = """
    .decl W(x:symbol) .decl Next(x:symbol, y:symbol)
    Next(x, y) :- W(x), W(y), x < y.
    .decl Reach(x:symbol, y:symbol)
    Reach(x, y) :- Next(x, y).
    Reach(x, z) :- Reach(x, y), Next(y, z), z > x.
    """
    r = Reasoner(prog, device="cpu", counting=True)
    r.add_facts("W", [("pear",), ("apple",), ("fig",), ("kiwi",)])
    r.materialise()
    r.update(delete={"W": [("fig",)]}, insert={"W": [("date",)]}, algorithm="dredc")
    fresh = Reasoner(prog, device="cpu")
    fresh.add_facts("W", [("pear",), ("apple",), ("date",), ("kiwi",)])
    fresh.materialise()
    assert sorted(r.render("Reach").splitlines()) == sorted(fresh.render("Reach").splitlines())
    assert "apple\tdate" in r.render("Reach") and "date\tapple" not in r.render("Reach")


def test_symbol_order_keys_of_a_few_rows_against_a_large_dictionary() -> None:
    """``SymbolTable.order_pair``: the global ranks while they are known, else ranks among
    the rows' own symbols (a comparison of a few rows does not sort the dictionary)."""
    import random

    from gpu_engine.host.dictionary import SymbolTable

    rng = random.Random(5)
    words = list({"".join(rng.choice("abcAB\u00e9z") for _ in range(rng.randint(0, 6)))
                  for _ in range(3000)})
    table = SymbolTable()
    ids = np.array([table.encode(w) for w in words], dtype=np.int64)
    for round_ in range(3):
        a = rng.sample(list(ids), 40)
        b = rng.sample(list(ids), 40)
        ka, kb = table.order_pair(np.array(a), np.array(b))
        for i, j, x, y in zip(a, b, ka, kb, strict=True):
            assert (x < y) == (words[i].encode() < words[j].encode())
            assert (x == y) == (i == j)
        if round_ == 1:
            table.order_keys(ids[:1])  # the global ranks, now known: used as they are
        else:
            table.encode(f"new{round_}")  # the dictionary grows: ranks among the rows


def test_strlen_and_substr_count_utf8_bytes() -> None:
    """``std::string`` semantics: ``strlen("héllo")`` is 6; ``substr`` takes bytes, and a
    cut inside a character (which Soufflé turns into invalid UTF-8) is refused."""
    prog = """
    .decl n(x:number) n(strlen("héllo")). n(strlen("日本") + 100).
    .decl s(x:symbol) s(substr("héllo", 0, 3)). s(substr("héllo", 3, -1)).
    """
    assert lines(prog, "n") == ["106", "6"]
    assert lines(prog, "s") == ["hé", "llo"]
    with pytest.raises(FunctorError, match="cuts a UTF-8 character"):
        lines('.decl s(x:symbol) s(substr("héllo", 0, 2)).', "s")


# --- float to integer conversions ---------------------------------------------------------


def test_float_to_int_out_of_range_as_x86_builds(device: str) -> None:
    """``ftoi`` of NaN, infinities and values beyond int32 gives INT_MIN (x86's truncating
    conversion, which Soufflé's static_cast compiles to); ``ftou`` goes through int64:
    low bits below 2^63, 0 beyond.  Explicit on every backend (a GPU's conversion would
    saturate)."""
    prog = """
    .decl f(x:float)
    f(10000000000.0). f(-10000000000.0). f(4294967040.0). f(-1.5). f(2147483520.0).
    f(10000000000000000000.0). f(0.0 / 0.0). f(1.0 / 0.0). f(-1.0 / 0.0).
    .decl c(x:float, i:number, u:unsigned)
    c(x, ftoi(x), ftou(x)) :- f(x).
    """
    assert lines(prog, "c", device) == sorted([
        "-1.5\t-1\t4294967295", "-1e+10\t-2147483648\t2884901888",
        "2.14748352e+09\t2147483520\t2147483520", "4.29496704e+09\t-2147483648\t4294967040",
        "1e+10\t-2147483648\t1410065408", "9.99999998e+18\t-2147483648\t0",
        "-nan\t-2147483648\t0", "inf\t-2147483648\t0", "-inf\t-2147483648\t0"])


def test_float_min_max_keep_the_earlier_argument_on_nan(device: str) -> None:
    """``max``/``min`` are std::max/std::min folded left to right ((a < b) ? b : a): a
    comparison with NaN is false, so the earlier argument stays."""
    prog = """
    .decl n(x:float)
    n(0.0 / 0.0).
    .decl r(a:float, b:float, c:float, d:float, e:float)
    r(max(1.0, x), min(1.0, x), max(x, 1.0), max(1.0, x, 2.0), min(2.0, 1.0, 3.0)) :- n(x).
    """
    assert lines(prog, "r", device) == ["1\t1\t-nan\t2\t1"]


def test_as_between_float_and_integers_reads_the_bits(device: str) -> None:
    """Soufflé drops an ``as`` cast (RemoveTypecasts): a number or unsigned cast to float
    is the float with those bits, and back."""
    prog = """
    .decl n(x:number) n(1065353216). n(-1082130432).
    .decl u(x:unsigned) u(3212836864).
    .decl f(x:float) f(1.0). f(-2.5).
    .decl a(x:float)
    a(as(x, float)) :- n(x).
    a(as(x, float)) :- u(x).
    .decl b(x:number, y:unsigned)
    b(as(x, number), as(x, unsigned)) :- f(x).
    """
    assert lines(prog, "a", device) == ["-1", "1"]
    assert lines(prog, "b", device) == ["-1071644672\t3223322624", "1065353216\t1065353216"]


def test_nan_bits_as_x86_builds_make_them() -> None:
    """A GPU (or an Arm CPU) returns a positive canonical NaN for every NaN result; the
    engine puts NaNs right as x86-64 builds make them (Soufflé's outputs print "-nan" for
    0.0 / 0.0): an operand's NaN survives, quieted, else the default NaN with its sign set."""
    from gpu_engine.kernels.backend import get_backend

    from gpu_engine.values import DEFAULT_NAN64, float_decode, float_encode, x86_nan

    be = get_backend("cpu")
    bits = lambda v: np.asarray(v).view(np.int64).tolist()  # noqa: E731
    f64 = lambda b: np.asarray(b, dtype=np.int64).view(np.float64)  # noqa: E731
    canonical = f64([0x7FFFFFFFFFFFFFFF])  # what a GPU's 0.0 / 0.0 gives
    one = np.ones(1)
    assert bits(x86_nan(be, canonical, [one, one])) == [DEFAULT_NAN64]
    payload = f64([0x7FF0000000000123])  # a signalling NaN operand: kept, quieted
    assert bits(x86_nan(be, canonical, [one, payload])) == [0x7FF8000000000123]
    assert bits(x86_nan(be, canonical, [-f64([0x7FF8000000000001]), payload])) == \
        [DEFAULT_NAN64 | 1]
    assert bits(x86_nan(be, one, [one, payload])) == bits(one)  # not NaN: untouched
    # float32 words: -nan <-> 0xFFC00000 both ways, payload bits carried
    enc = float_encode(be, f64([DEFAULT_NAN64, 0x7FF8000020000000, 0]), 32)
    assert [v & 0xFFFFFFFF for v in enc.tolist()] == [0xFFC00000, 0x7FC00001, 0]
    assert bits(float_decode(be, enc, 32)) == [DEFAULT_NAN64, 0x7FF8000020000000, 0]
    assert bits(float_encode(be, f64([DEFAULT_NAN64]), 64)) == [DEFAULT_NAN64]


def test_float_sum_and_mean_keep_the_nan_sign(device: str) -> None:
    """A float ``sum``/``mean`` over a NaN gives x86's NaN (its operand's sign: "-nan" for
    0.0 / 0.0), also on a GPU, whose conversions and division would give a positive one:
    the sums and the division are done on the host."""
    prog = """
    .decl n(x:float)
    n(0.0 / 0.0). n(1.0).
    .decl s(a:float, b:float)
    s(sum x : { n(x) }, mean x : { n(x) }).
    """
    assert lines(prog, "s", device) == ["-nan\t-nan"]
