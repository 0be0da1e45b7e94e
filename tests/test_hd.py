"""Hypertree decompositions (paper 003): decomposed evaluation gives the facts and the
derivation counters of ordinary evaluation, in materialisation and in every update
algorithm.

Generated programs have cyclic bodies (triangles, four-cycles, K4, petals, flowers, the
paper's recursive PC rule, a PC-shaped rule beside a TC module of paper 002) with
comparisons, negations and constants; judges: the same
program with ``decompose=off``, the reference evaluator and its derivation counts
(tests/test_update.run_sequence), and rematerialisation.  The paper's running example
checks the counters 1 → 4 → 2 of PC(a_n, d_j).  ``HD_EXAMPLES`` (default 25 per test);
``make fuzz-hd`` runs many more.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter

import pytest
from generators import (
    NUMBER,
    Atom,
    Cmp,
    Const,
    Neg,
    Program,
    Relation,
    Rule,
    Var,
    Wild,
    describe,
    engine_facts,
    render_program,
)
from hypothesis import given, note, settings
from hypothesis import strategies as st
from test_update import run_sequence

from gpu_engine import Reasoner, hd_eval
from gpu_engine.decomposition import decompose, is_cyclic
from gpu_engine.hd_eval import _bag
from gpu_engine.ir import Atom as IAtom
from gpu_engine.ir import Rule as IRule
from gpu_engine.ir import Var as IVar

EXAMPLES = int(os.environ.get("HD_EXAMPLES", "25"))


@pytest.fixture(autouse=True)
def _always_decomposed():
    """Small deltas too go through the decomposition (not the ordinary evaluator)."""
    saved = hd_eval.SMALL_DELTA
    hd_eval.SMALL_DELTA = 0
    yield
    hd_eval.SMALL_DELTA = saved
N2 = (NUMBER, NUMBER)
E, F, G = Relation("e", N2), Relation("f", N2), Relation("g", N2)
x, y, z, w, u, v = (Var(n) for n in "xyzwuv")


def _a(rel: str, *args: object) -> Atom:
    return Atom(rel, tuple(args))  # type: ignore[arg-type]


SHAPES = {
    # triangle, four-cycle, K4, a petal (two paths x..y), a flower (petals sharing x)
    "tri": (3, [("e", x, y), ("e", y, z), ("f", z, x)], (x, y, z)),
    "sq": (2, [("e", x, y), ("f", y, z), ("e", z, w), ("f", w, x)], (x, z)),
    "k4": (2, [("e", x, y), ("e", x, z), ("e", x, w), ("f", y, z), ("f", y, w), ("f", z, w)],
           (x, w)),
    "petal": (2, [("e", x, u), ("e", u, y), ("f", x, v), ("f", v, y)], (x, y)),
    "flower": (1, [("e", x, u), ("f", u, y), ("e", x, v), ("f", v, y), ("g", x, w),
                   ("e", w, y)], (x,)),
}


@st.composite
def cyclic_programs(draw: st.DrawFn) -> Program:
    """Input relations e, f, g; derived relations with cyclic bodies over them and over
    each other, a recursive PC-shaped rule, and filters placed at random."""
    rels = [E, F, G]
    rules: list[Rule] = []
    names = draw(st.lists(st.sampled_from(sorted(SHAPES)), min_size=1, max_size=3,
                          unique=True))
    for k, shape in enumerate(names):
        arity, body, head = SHAPES[shape]
        rel = Relation(f"h{k}", (NUMBER,) * len(head))
        rels.append(rel)
        lits: list = [_a(*b) for b in body]
        if draw(st.booleans()):  # a constant in one atom
            i = draw(st.integers(0, len(lits) - 1))
            a = lits[i]
            lits[i] = Atom(a.rel, (a.args[0], Const(draw(st.integers(0, 4)))))
        if draw(st.booleans()):
            lits.append(Cmp(draw(st.sampled_from(["<", "!=", "<="])), head[0],
                            Var(draw(st.sampled_from(["y", "z", "w", "u", "v"])))))
        if draw(st.booleans()):
            lits.append(Neg(_a("g", head[0], Wild())))
        if draw(st.booleans()):  # an anonymous variable: counted, not kept
            lits.append(_a("g", Wild(), head[-1]))
        free = {t.name for lit in lits if isinstance(lit, Atom) for t in lit.args
                if isinstance(t, Var)}
        lits = [lit for lit in lits if not isinstance(lit, Cmp) or lit.right.name in free]
        rules.append(Rule(Atom(rel.name, head), tuple(lits)))
    if draw(st.booleans()):  # the paper's recursive rule, PC(x,y) :- CW, CA, PC, PC
        pc = Relation("pc", N2)
        rels.append(pc)
        rules.append(Rule(_a("pc", x, y), (_a("g", x, y),)))
        rules.append(Rule(_a("pc", x, y), (_a("e", x, z), _a("f", x, w), _a("pc", z, y),
                                           _a("pc", w, y))))
        if draw(st.booleans()):  # and a rule reading it with a cycle
            q = Relation("q", N2)
            rels.append(q)
            rules.append(Rule(_a("q", x, y), (_a("pc", x, y), _a("pc", y, z), _a("e", z, x))))
    if draw(st.booleans()):  # a cyclic rule beside a TC module (MAT-MOD, DRed^c-MOD)
        tr = Relation("tr", N2)
        rels.append(tr)
        rules.append(Rule(_a("tr", x, y), (_a("g", x, y),)))
        rules.append(Rule(_a("tr", x, z), (_a("tr", x, y), _a("tr", y, z))))
        rules.append(Rule(_a("tr", x, y), (_a("e", x, z), _a("f", x, w), _a("tr", z, y),
                                           _a("tr", w, y))))
    dom = st.integers(0, draw(st.integers(3, 7)))
    pair = st.tuples(dom, dom)
    facts = {r.name: draw(st.lists(pair, max_size=22)) for r in (E, F, G)}
    return Program(tuple(rels), tuple(rules), facts=facts)


def _state(r: Reasoner, program: Program) -> dict[str, dict[tuple, tuple[int, int]]]:
    out = {}
    for rel in program.relations:
        t = r.counters(rel.name)
        cols = [c.to_pylist() for c in t.columns]
        out[rel.name] = {tuple(row[:-2]): (row[-2], row[-1]) for row in zip(*cols, strict=True)}
    return out


def _hd_rules(stats) -> list[str]:
    return [rs.module for s in stats.strata for rs in s.rules if " hd " in f" {rs.module} "]


@settings(max_examples=EXAMPLES, deadline=None)
@given(program=cyclic_programs())
def test_decomposed_equals_standard(program: Program, device: str) -> None:
    """Facts and counters (c_nr, c_r) with decompose=all and auto equal decompose=off."""
    note(describe(program))
    got = {}
    for mode in ("off", "all", "auto"):
        r = Reasoner(render_program(program), device=device, counting=True, decompose=mode)
        for name, data in engine_facts(program).items():
            r.add_facts(name, data)
        stats = r.materialise()
        got[mode] = _state(r, program)
        hd = _hd_rules(stats)
        if mode == "off":
            assert not hd
        if any(rel.name == "tr" for rel in program.relations):
            assert "tc(tr)" in {rs.module for s in stats.strata for rs in s.rules}
        _check_bags(r)
    assert got["all"] == got["off"]
    assert got["auto"] == got["off"]


@settings(max_examples=EXAMPLES, deadline=None)
@given(program=cyclic_programs(), data=st.data())
def test_decomposed_update_sequences(program: Program, data: st.DataObject, device: str
                                     ) -> None:
    """Updates by DRed^c (with and without paper-002 modules), DRed, B/F^c, Counting and
    Remat on decomposed rules: facts, E and counters equal the reference's after every
    update, and the result equals a rematerialisation."""
    mode = data.draw(st.sampled_from(["all", "auto"]), label="decompose")
    saved = os.environ.get("GPU_ENGINE_DECOMPOSE")
    os.environ["GPU_ENGINE_DECOMPOSE"] = mode
    try:
        run_sequence(program, data, ("dredc", "dredc", "dred", "bfc", "counting", None),
                     device)
    finally:
        if saved is None:
            os.environ.pop("GPU_ENGINE_DECOMPOSE", None)
        else:
            os.environ["GPU_ENGINE_DECOMPOSE"] = saved


def _naive_bag(r: Reasoner, rule: IRule, atoms: list[IAtom], chi: tuple[str, ...]) -> Counter:
    """π_χ(⋈ atoms) over the current facts, with counts, by nested loops (tiny data)."""
    rows = {a.relation: list(zip(*r.engine.columns(a.relation), strict=True)) for a in atoms}
    out: Counter = Counter()
    for combo in itertools.product(*(rows[a.relation] for a in atoms)):
        env: dict[str, int] = {}
        ok = True
        for a, fact in zip(atoms, combo, strict=True):
            for t, val in zip(a.args, fact, strict=True):
                if isinstance(t, IVar):
                    if env.setdefault(t.name, int(val)) != int(val):
                        ok = False
                else:
                    ok &= int(val) == int(r.engine.evaluator.expr.term(t, {}, 1)[0][0])
        if ok:
            out[tuple(env[v] for v in chi)] += 1
    return out


def _check_bags(r: Reasoner) -> None:
    """Every node's bag over the current facts equals the projection of its atoms' join,
    with counts (only for nodes without comparisons or negations: those filter)."""
    eng = r.engine
    for rule in eng.rules:
        plan = eng.hd.plan(rule)
        if plan is None:
            continue
        atoms = [lit for lit in rule.body if isinstance(lit, IAtom)]
        for p, node in enumerate(plan.node_rules):
            if any(not isinstance(lit, IAtom) for lit in node.body):
                continue
            if any(len(eng.columns(atoms[i].relation)[0]) > 60 for i in plan.node_atoms[p]):
                continue
            sources = [eng.store[a.relation] for a in atoms]
            if any(len(s) == 0 for s in sources):
                continue
            bag = _bag(eng.evaluator, plan, p, sources, {}, None)
            chi = plan.dec.chi[p]
            cols = [bag.cols[c_].tolist() for c_ in chi]
            got = Counter({tuple(row): int(c) for *row, c in zip(*cols, bag.cnt.tolist())})
            want = _naive_bag(r, rule, [atoms[i] for i in plan.node_atoms[p]], chi)
            assert got == want, (str(rule), p)


# --------------------------------------------------------------------------- the paper's example

PC_PROGRAM = """
.decl CW(x:symbol, y:symbol)
.decl CA(x:symbol, y:symbol)
.decl PC(x:symbol, y:symbol)
.output PC
PC(x,y) :- CW(x,z1), CA(x,z2), PC(z1,y), PC(z2,y).
"""


def pc_facts(n: int, k: int) -> dict[str, list[tuple[str, str]]]:
    """Paper 003 §3: CW(a_i, b_ik+j), CA(a_i, c_ik+j), PC(b.., d_j), PC(c.., d_j),
    plus CW(a_n, a_2), CA(a_n, a_3)."""
    cw, ca, pc = [], [], []
    for i in range(n):
        for j in range(1, k + 1):
            cw.append((f"a{i}", f"b{i * k + j}"))
            ca.append((f"a{i}", f"c{i * k + j}"))
            pc += [(f"b{i * k + j}", f"d{j}"), (f"c{i * k + j}", f"d{j}")]
    cw.append((f"a{n}", "a2"))
    ca.append((f"a{n}", "a3"))
    return {"CW": cw, "CA": ca, "PC": pc}


def _pc_counts(r: Reasoner, n: int, k: int) -> list[tuple[int, int]]:
    t = r.counters("PC").to_pydict()
    got = {(a, b): (nr, rc) for a, b, nr, rc in zip(t["x"], t["y"], t["c_nr"], t["c_r"],
                                                     strict=True)}
    return [got[(f"a{n}", f"d{j}")] for j in range(1, k + 1)]


@pytest.mark.parametrize("algorithm", ["dredc", "dred", "bfc", "remat"])
def test_paper_running_example(device: str, algorithm: str) -> None:
    """Paper 003 Examples 1-3 (n=8, k=5): 162 explicit facts, 45 derived in two rounds
    with one derivation each; the decomposition {CW, PC}{CA, PC}; adding CW(a_n,a_4),
    CA(a_n,a_5) derives nothing new and the PC(a_n,d_j) have 4 derivations; deleting
    CA(a_n,a_3) overdeletes and rederives them with 2."""
    n, k = 8, 5
    r = Reasoner(PC_PROGRAM, device=device, counting=True, decompose="auto")
    for name, rows in pc_facts(n, k).items():
        r.add_facts(name, rows)
    stats = r.materialise()
    assert r.engine.size("PC") == 4 * n * k // 2 + n * k + k  # 2nk explicit + nk + k
    assert stats.derivations == n * k + k
    (mod,) = _hd_rules(stats)
    assert "w=2" in mod and "CW(x,z1) PC(z1,y)" in mod and "CA(x,z2) PC(z2,y)" in mod
    if algorithm == "dredc":
        assert _pc_counts(r, n, k) == [(0, 1)] * k
    _check_bags(r)
    size = r.engine.size("PC")
    r.update(insert={"CW": [(f"a{n}", "a4")], "CA": [(f"a{n}", "a5")]}, algorithm=algorithm)
    assert r.engine.size("PC") == size  # Add^r returns ∅: the PC(a_n, d_j) are there
    if algorithm == "dredc":
        assert _pc_counts(r, n, k) == [(0, 4)] * k
    _check_bags(r)
    before = r.engine.size("PC")
    r.update(delete={"CA": [(f"a{n}", "a3")]}, algorithm=algorithm)
    assert r.engine.size("PC") == before
    if algorithm == "dredc":
        assert _pc_counts(r, n, k) == [(0, 2)] * k
    _check_bags(r)


def test_cyclic_detection_and_width() -> None:
    def rule(*atoms: tuple[str, str, str]) -> IRule:
        return IRule(IAtom("h", (IVar("x"),)),
                     tuple(IAtom(a, (IVar(b), IVar(c))) for a, b, c in atoms))

    def stats(rel: str, col: int) -> tuple[int, int]:
        return (100, 10)

    path = rule(("e", "x", "y"), ("e", "y", "z"), ("e", "z", "w"))
    tri = rule(("e", "x", "y"), ("e", "y", "z"), ("e", "z", "x"))
    sq = rule(("e", "x", "y"), ("e", "y", "z"), ("e", "z", "w"), ("e", "w", "x"))
    assert not is_cyclic(path) and is_cyclic(tri) and is_cyclic(sq)
    assert decompose(path, stats, "auto") is None
    d = decompose(path, stats, "all")
    assert d is not None and d.width == 1 and len(d.nodes) == 3
    # auto's cost check: a triangle's node {e(x,y), e(y,z)} builds what the pairwise plan
    # builds (no gain), the four-cycle's nodes far less
    assert decompose(tri, stats, "auto") is None
    assert decompose(tri, stats, "all").width == 2  # type: ignore[union-attr]
    d = decompose(sq, stats, "auto")
    assert d is not None and d.width == 2 and len(d.nodes) == 2
    assert decompose(sq, stats, "off") is None


def test_auto_cost_check() -> None:
    """auto decomposes a cyclic rule only where the pairwise plan is estimated to build
    clearly more rows: the paper's PC rule (n·k² against n·k) yes, a rule shaped like Exp
    (the children's values joined 1:1 through left/right) no."""
    from gpu_engine.ir import Const as IConst

    n, k = 300, 300
    sizes = {"CW": (n * k, (n, n * k)), "CA": (n * k, (n, n * k)),
             "PC": (2 * n * k, (2 * n * k, k)),
             "op": (9300, (9300, 3)), "inner": (9300, (9300,)), "node": (18900, (18900,)),
             "left": (9300, (9300, 9300)), "right": (9300, (9300, 9300)),
             "asg": (300, (300,)), "val": (2_880_000, (9600, 300, 10))}

    def stats(rel: str, col: int) -> tuple[int, int]:
        return sizes[rel][0], sizes[rel][1][col]

    def a(rel: str, *args: str | int) -> IAtom:
        return IAtom(rel, tuple(IConst(x, "number") if isinstance(x, int) else IVar(x)
                                for x in args))

    pc = IRule(a("PC", "x", "y"), (a("CW", "x", "z1"), a("CA", "x", "z2"),
                                   a("PC", "z1", "y"), a("PC", "z2", "y")))
    exp = IRule(a("val", "n", "s", "v1"),
                (a("op", "n", 0), a("inner", "n"), a("left", "n", "l"), a("node", "l"),
                 a("val", "l", "s", "v1"), a("right", "n", "r"), a("node", "r"),
                 a("val", "r", "s", "v2"), a("asg", "s")))
    assert decompose(pc, stats, "auto") is not None
    assert decompose(exp, stats, "auto") is None
    assert decompose(exp, stats, "all") is not None


def test_cli_decompose_and_store(tmp_path, device: str) -> None:
    """--decompose on run and update; the decomposition is kept in the store."""
    import json
    import subprocess
    import sys

    prog = tmp_path / "tri.dl"
    prog.write_text(".decl e(x:number, y:number)\n.input e\n.decl t(x:number)\n.output t\n"
                    "t(x) :- e(x,y), e(y,z), e(z,x).\n")
    (tmp_path / "e.facts").write_text("1\t2\n2\t3\n3\t1\n3\t4\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(  # (keep a CuPy stand-in's path)
        p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    cli = [sys.executable, "-m", "gpu_engine.host.cli"]
    out = subprocess.run([*cli, "run", str(prog), "-F", str(tmp_path), "-D", "-", "--stats",
                          "--device", device, "--store", str(tmp_path / "db"),
                          "--decompose", "all"],  # (auto: a triangle is not worth it)
                         capture_output=True, text=True, env=env, check=True)
    assert "hd w=2" in out.stdout + out.stderr
    meta = json.loads(next((tmp_path / "db").glob("v*/meta.json")).read_text())
    assert meta["decompose"] == "all" and any(meta["decompositions"].values())
    (tmp_path / "del").mkdir()
    (tmp_path / "del" / "e.facts").write_text("3\t1\n")
    res = subprocess.run([*cli, "update", str(tmp_path / "db"), "--delete",
                          str(tmp_path / "del"), "--decompose", "replan", "-D", "-",
                          "--device", device], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert "1\n" not in res.stdout.split("t\n", 1)[-1]


def test_string_constraint_across_nodes(device: str) -> None:
    """A comparison whose variables meet only in the cross-node join (here the string
    constraint ``contains``, whose mask comes back as 0/1) filters, never indexes."""
    text = """
    .decl s(t:symbol)
    .decl sub(t:symbol)
    .decl out(a:symbol, b:symbol)
    out(x, y) :- sub(x), s(y), contains(x, y).
    s("aaaa"). s("abba"). s("bcab"). s("bdab").
    sub("a"). sub("ab"). sub("cab"). sub("x").
    """
    got = {}
    for mode in ("off", "all"):
        r = Reasoner(text, device=device, decompose=mode)
        stats = r.materialise()
        t = r.relation("out").to_pydict()
        got[mode] = sorted(zip(t["a"], t["b"], strict=True))
        assert bool(_hd_rules(stats)) == (mode == "all")
    assert got["all"] == got["off"] and len(got["off"]) == 8
