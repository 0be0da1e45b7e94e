"""Components (``.comp``/``.init``/``.override``): expansion to a flat program, with answers
worked out by hand from Soufflé's component semantics, and errors with their locations."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_engine.host.lang.parser import parse_program
from souffle_cases import run_cli

from gpu_engine import Reasoner
from gpu_engine.ir import ProgramError


def run(text: str) -> dict[str, set[tuple]]:
    """Every relation of the materialised program, as sets of rows."""
    r = Reasoner(text, device="cpu")
    r.materialise()
    out = {}
    for name, rel in r.program.relations.items():
        t = r.relation(name)
        out[name] = set(zip(*(t.column(i).to_pylist() for i in range(rel.arity)), strict=True))
    return out


def error_of(text: str) -> ProgramError:
    with pytest.raises(ProgramError) as info:
        parse_program(text, "t.dl")
    return info.value


def test_instances_are_prefixed_and_extended() -> None:
    got = run(
        ".comp C {\n .type T = number\n .decl R(x:T)\n R(42).\n}\n"
        ".init one = C\n.init two = C\ntwo.R(33).\n"
        ".decl Test(x:number)\nTest(x) :- one.R(x).\nTest(x) :- two.R(x).\n"
    )
    assert got["one.R"] == {(42,)} and got["two.R"] == {(42,), (33,)}
    assert got["Test"] == {(42,), (33,)}


def test_instance_relations_keep_instance_names_in_directives(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(
        ".comp G {\n .decl edge(a:number, b:number)\n .input edge\n"
        " .decl reach(a:number, b:number)\n .output reach()\n"
        " reach(x, y) :- edge(x, y).\n reach(x, z) :- reach(x, y), edge(y, z).\n}\n"
        ".init g = G\n.output g.edge\n"
    )
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "g.edge.facts").write_text("1\t2\n2\t3\n")
    rc, _, err = run_cli(["run", str(prog), "-F", str(facts), "-D", str(tmp_path / "out"),
                          "--device", "cpu", "--quiet"])
    assert rc == 0, err
    assert set((tmp_path / "out" / "g.reach.csv").read_text().splitlines()) == {
        "1\t2", "2\t3", "1\t3"}
    assert (tmp_path / "out" / "g.edge.csv").exists()


def test_inheritance_and_override() -> None:
    got = run(
        ".comp A {\n .decl Rel(x:number) overridable\n Rel(1).\n}\n"
        ".comp B : A {\n .override Rel\n Rel(2).\n}\n"
        ".comp C : B {\n .override Rel\n Rel(3).\n}\n"
        ".comp D : B {\n Rel(4).\n}\n"
        ".comp E : A {\n Rel(5).\n}\n"
        ".comp F : E {\n .override Rel\n Rel(6).\n}\n"
        ".init a = A\n.init b = B\n.init c = C\n.init d = D\n.init e = E\n.init f = F\n"
    )
    assert got["a.Rel"] == {(1,)} and got["b.Rel"] == {(2,)} and got["c.Rel"] == {(3,)}
    assert got["d.Rel"] == {(2,), (4,)} and got["e.Rel"] == {(1,), (5,)}
    assert got["f.Rel"] == {(6,)}


def test_multiple_bases_and_base_rules_over_derived_relations() -> None:
    got = run(
        ".comp Nodes {\n .decl node(x:number)\n node(1). node(2).\n}\n"
        ".comp Edges {\n .decl edge(x:number, y:number)\n edge(1, 2).\n}\n"
        ".comp Graph : Nodes, Edges {\n .decl iso(x:number)\n"
        " iso(x) :- node(x), !edge(x, _), !edge(_, x).\n node(3).\n}\n"
        ".init g = Graph\n"
    )
    assert got["g.node"] == {(1,), (2,), (3,)} and got["g.iso"] == {(3,)}


def test_type_parameters_in_declarations_types_and_casts() -> None:
    got = run(
        ".comp Box<T> {\n .type Item = T\n .decl item(x:Item)\n .decl seen(x:T)\n"
        " seen(as(x, T)) :- item(x).\n}\n"
        ".init nums = Box<number>\n.init names = Box<symbol>\n"
        'nums.item(7).\nnames.item("a").\n'
    )
    assert got["nums.seen"] == {(7,)} and got["names.seen"] == {("a",)}


def test_parameters_name_components_to_instantiate_and_inherit() -> None:
    got = run(
        ".comp Gen {\n .decl R(n:number)\n R(0).\n R(n + 1) :- R(n), n <= 10.\n}\n"
        ".comp Big : Gen {\n R(22).\n}\n"
        ".comp Sel<T> {\n .init gen = T\n .decl S(n:number)\n"
        " S(n) :- gen.R(n), gen.R(n * 2).\n}\n"
        ".comp Main<TS, TG> {\n .init sel = TS<TG>\n .decl Out(n:number)\n"
        " Out(x) :- sel.S(x).\n}\n"
        ".comp Tagged<T> : T {\n R(100).\n}\n"
        ".init m1 = Main<Sel, Gen>\n.init m2 = Main<Sel, Big>\n.init t = Tagged<Gen>\n"
    )
    assert got["m1.Out"] == {(n,) for n in range(6)}
    assert got["m2.Out"] == {(n,) for n in range(6)} | {(11,)}
    assert got["m2.sel.gen.R"] >= {(22,)}
    assert (100,) in got["t.R"] and (0,) in got["t.R"]


def test_nested_components_and_orphan_rules() -> None:
    # rules whose head is not declared in the instance move to the enclosing instance
    got = run(
        ".decl Out(x:number)\n"
        ".comp A {\n .decl R(x:number)\n .comp Count {\n  R(1).\n  R(x + 1) :- R(x), x < 4.\n }\n"
        " .init c = Count\n Out(x) :- R(x).\n}\n"
        ".init a = A\n"
    )
    assert got["a.R"] == {(1,), (2,), (3,), (4,)} and got["Out"] == got["a.R"]
    assert set(got) == {"Out", "a.R"}


def test_nested_instances_nest_their_prefixes_and_selector_parameter() -> None:
    got = run(
        ".decl R(x:number)\n"
        ".comp Case<Sel> {\n .comp One {\n  R(1).\n }\n .comp Two {\n  R(2).\n }\n"
        " .init selection = Sel\n}\n"
        ".init c = Case<Two>\n"
        ".comp Outer {\n .comp Inner {\n  .decl v(x:number)\n  v(5).\n }\n"
        " .init in = Inner\n .decl w(x:number)\n w(x) :- in.v(x).\n}\n"
        ".init o = Outer\n"
    )
    assert got["R"] == {(2,)}
    assert got["o.in.v"] == {(5,)} and got["o.w"] == {(5,)}


def test_instances_of_inherited_nested_components_and_overrides() -> None:
    got = run(
        ".comp Model {\n .decl R(s:symbol) overridable\n"
        ' .comp Inner {\n  R("inner").\n }\n R("model").\n}\n'
        ".comp Concrete : Model {\n .override R\n .init inner = Inner\n"
        ' R("concrete").\n}\n'
        ".init x = Concrete\n"
    )
    assert got["x.R"] == {("inner",), ("concrete",)}


def test_types_declared_in_instances_are_qualified() -> None:
    got = run(
        ".comp Hello {\n .type thing <: symbol\n .decl t(x:thing)\n}\n"
        ".init h = Hello\n.type alias = h.thing | other\n.type other <: symbol\n"
        '.decl u(x:alias)\nh.t("a").\nu(x) :- h.t(x).\n'
    )
    assert got["u"] == {("a",)}


def test_adt_branches_of_instances_are_qualified(tmp_path: Path) -> None:
    """Soufflé qualifies an instance's ADT branches (`$inst.B`), inside the component
    unqualified; field types and a type named like a parameter are bound."""
    text = (".comp C<P> {\n .type T = B {x: P} | E {}\n .decl r(x: T)\n r($B(1)). r($E).\n"
            " .type P <: number\n .decl s(x: P)\n s(2).\n}\n"
            ".init c = C<myType>\n"
            ".decl out(x: c.T)\nout(x) :- c.r(x).\nout($c.B(3)).\n.output out\n")
    r = Reasoner(text, device="cpu")
    r.materialise()
    assert r.program.relations["c.s"].arity == 1
    prog = tmp_path / "p.dl"
    prog.write_text(text, encoding="utf-8")
    (tmp_path / "facts").mkdir()
    res = run_cli(["run", str(prog), "-F", str(tmp_path / "facts"), "-D", str(tmp_path)])
    assert res[0] == 0, res
    lines = set((tmp_path / "out.csv").read_text(encoding="utf-8").splitlines())
    assert lines == {"$c.B(1)", "$c.E", "$c.B(3)"}


def test_multi_head_rules_and_pragma_inside_components() -> None:
    got = run(
        ".comp C {\n .decl a(x:number)\n .decl b(x:number)\n"
        " a(i), b(i + 1) :- i = 3.\n .plan 0:(1)\n}\n.init c = C\n"
    )
    assert got["c.a"] == {(3,)} and got["c.b"] == {(4,)}


def test_uninstantiated_components_contribute_nothing() -> None:
    p = parse_program(".comp C {\n .decl a(x:number)\n a(1).\n}\n.decl b(x:number)\nb(2).\n")
    assert set(p.program.relations) == {"b"}


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        (".init a = Foo\n", 1, 11, "unknown component 'Foo'"),
        (".comp A<T> {\n .decl r(x:T)\n}\n.init a = A\n", 4, 11, "takes 1 type parameter"),
        (".comp A<T> { }\n.comp B : A { }\n", 2, 11, "takes 1 type parameter"),
        (".comp B : Nope { }\n", 1, 11, "unknown component 'Nope'"),
        (".comp A {\n .decl r(x:number)\n}\n.comp B : A {\n  .override r\n}\n", 5, 13,
         "not declared overridable"),
        (".comp A {\n .decl r(x:number) overridable\n .override r\n}\n", 3, 12,
         "declares itself"),
        (".comp A {\n .decl r(x:number) overridable\n}\n.comp B : A {\n  .override q\n}\n",
         5, 13, "override of relation 'q', which no base of component 'B' declares"),
        (".comp A : B { }\n.comp B : A { }\n", 1, 7, "cyclic inheritance"),
        (".decl a(x:number)\n.comp A { }\n.init a = A\n", 3, 7, "name clash"),
        (".decl A(x:number)\n.comp A { }\n", 2, 7, "name clash"),
        (".comp A { }\n.comp A { }\n", 2, 7, "component 'A' redeclared"),
        (".comp A {\n .init x = A\n}\n.init a = A\n", 2, 2, "nested more than"),
        (".override r\n", 1, 1, "only allowed inside a component"),
        (".comp A<T> {\n .init x = T\n}\n.init a = A<number>\n", 2, 12,
         "unknown component 'number'"),
        (".comp A {\n .decl r(x:number)\n}\n.comp B : A {\n .decl r(x:number)\n}\n"
         ".init b = B\n", 5, 8, "relation 'b.r' redeclared"),
        (".comp A {\n .decl r(x:number)\n r(x) :- q(x).\n}\n.init a = A\n", 3, 10,
         "undeclared relation 'q'"),
        (".comp A<T, T> { }\n", 1, 12, "declared twice"),
    ],
)
def test_component_errors(text: str, line: int, col: int, fragment: str) -> None:
    err = error_of(text)
    assert err.loc is not None and (err.loc.file, err.loc.line, err.loc.column) == (
        "t.dl", line, col), str(err)
    assert fragment in err.message, str(err)


def test_component_errors_in_included_files_name_their_file(tmp_path: Path) -> None:
    (tmp_path / "lib.dl").write_text(".comp A {\n .decl r(x:number)\n}\n.comp B : A {\n"
                                     " .override r\n}\n")
    (tmp_path / "main.dl").write_text('.include "lib.dl"\n.init b = B\n')
    rc, _, err = run_cli(["run", str(tmp_path / "main.dl"), "-D", str(tmp_path),
                          "--device", "cpu", "--quiet"])
    assert rc == 1 and f"{tmp_path / 'lib.dl'}:5:12: override of relation 'r'" in err, err


def test_subsumptive_and_aggregate_rules_inside_components_equal_the_flat_program() -> None:
    body = (" .decl r(x:number, y:number)\n r(1, 5). r(1, 3). r(2, 4).\n"
            " r(x, y1) <= r(x, y2) :- y1 > y2.\n .decl t(n:number)\n"
            " t(n) :- n = sum y : { r(_, y) }.\n")
    flat = run(body)
    got = run(".comp C {\n" + body + "}\n.init c = C\n")
    assert got["c.r"] == flat["r"] and got["c.t"] == flat["t"]
