"""Equality by rewriting: columnar expansion, queries and explanations over rewritten
relations (issue 13's remaining gaps)."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_engine.kernels.backend import get_backend

from gpu_engine.equality_expand import (
    class_index,
    expand_chunks,
    expand_pairwise,
    expand_sorted,
)
from gpu_engine.rowset import RowSet

sys.path.insert(0, str(Path(__file__).parent))

from eq_generators import (  # noqa: E402
    D_VALUES,
    O_VALUES,
    axioms,
    equality_program,
    spelled_text,
)
from generators import Atom as GAtom  # noqa: E402
from generators import Const as GConst  # noqa: E402
from generators import Rule as GRule  # noqa: E402
from generators import Var as GVar  # noqa: E402
from generators import Wild as GWild  # noqa: E402

from gpu_engine import Reasoner  # noqa: E402
from gpu_engine.ir import ProgramError  # noqa: E402

BE = get_backend("cpu")


def _rows(rng: np.random.Generator, rho: np.ndarray, n: int, k: int, extra: int,
          wide: bool) -> tuple[np.ndarray, ...]:
    reps = np.unique(rho)
    cols = [rng.choice(reps, n) for _ in range(k)]
    hi = (1 << 40) if wide else 50
    cols += [rng.integers(-hi, hi, n) for _ in range(extra)]
    return RowSet.from_columns(BE, tuple(cols), len(cols)).cols


@pytest.mark.parametrize("k,extra,wide", [(1, 1, False), (2, 1, False), (3, 0, False),
                                          (2, 2, True), (1, 0, False), (3, 2, True)])
def test_expansion_matches_pairwise(k: int, extra: int, wide: bool) -> None:
    rng = np.random.default_rng(k * 10 + extra)
    n_ids = 400
    labels = rng.integers(0, 60, n_ids)
    first = np.full(60, n_ids)
    np.minimum.at(first, labels, np.arange(n_ids))
    rho = first[labels].astype(np.int64)  # smallest id of each class
    cols = _rows(rng, rho, 300, k, extra, wide)
    pos = tuple(range(k))
    m, o, s = class_index(BE, rho)
    want = expand_pairwise(BE, cols, pos, m, o, s)
    got = expand_sorted(BE, cols, pos, m, o, s)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    parts = list(expand_chunks(BE, cols, pos, m, o, s, chunk_rows=97))
    assert len(parts) > 1
    joined = tuple(np.concatenate(c) for c in zip(*parts))
    again = RowSet.from_columns(BE, joined, len(joined)).cols
    assert len(joined[0]) == len(want[0])  # distinct already
    assert all(np.array_equal(a, b) for a, b in zip(want, again))


def test_expansion_device_branches_on_numpy() -> None:
    """The branches taken on a GPU (join expansion instead of repeat, lexsort for wide
    keys) with NumPy standing in for CuPy: same rows."""
    from gpu_engine.kernels.backend import Backend

    class _NumpyAsCupy:
        asnumpy = staticmethod(np.asarray)

        def __getattr__(self, name: str) -> object:
            return getattr(np, name)

    fake = Backend("gpu", _NumpyAsCupy())  # type: ignore[arg-type]
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 30, 200)
    first = np.full(30, 200)
    np.minimum.at(first, labels, np.arange(200))
    rho = first[labels].astype(np.int64)
    for wide in (False, True):
        cols = _rows(rng, rho, 150, 2, 2, wide)
        m, o, s = class_index(BE, rho)
        want = expand_pairwise(BE, cols, (0, 1), m, o, s)
        got = expand_sorted(fake, cols, (0, 1), *class_index(fake, rho))
        assert all(np.array_equal(a, b) for a, b in zip(want, got))


def test_expansion_positions_not_leading() -> None:
    """Domain positions in the middle of the row, non-domain columns around them."""
    rho = np.array([0, 0, 2, 2, 2, 5, 6, 5], dtype=np.int64)
    cols = (np.array([9, 9, 1]), np.array([0, 2, 5]), np.array([3, 4, 4]), np.array([6, 0, 2]))
    m, o, s = class_index(BE, rho)
    want = expand_pairwise(BE, cols, (1, 3), m, o, s)
    got = expand_sorted(BE, cols, (1, 3), m, o, s)
    assert len(got[0]) == 2 * 1 + 3 * 2 + 2 * 3
    assert all(np.array_equal(a, b) for a, b in zip(want, got))


# --- queries ------------------------------------------------------------------------------

TYPED = """
.type D <: symbol
.type O <: symbol
.decl same(x: D, y: D) equality
.decl p(x: D, y: D)
.decl n(x: D, k: number)
.decl o(x: D, t: O)
.decl q(t: O)
p("a", "b"). p("c", "d"). same("a", "c"). n("a", 1). o("a", "k"). q("k").
"""


def _table(t) -> set[tuple]:
    return {tuple(r.values()) for r in t.to_pylist()}


@pytest.fixture(scope="module")
def typed() -> Reasoner:
    r = Reasoner(TYPED, device="cpu")
    r.materialise()
    return r


@pytest.mark.parametrize("text,want", [
    ('p(X, Y)', {("a", "b"), ("a", "d"), ("c", "b"), ("c", "d")}),
    ('p("c", Y)', {("b",), ("d",)}),
    ('p(X, _), n(X, K)', {("a", 1), ("c", 1)}),
    ('p(X, Y), X != "a"', {("c", "b"), ("c", "d")}),
    ('p(X, Y), X = "c"', {("c", "b"), ("c", "d")}),
    ('p(X, Y), Z = X, Z = "c"', {("c", "b", "c"), ("c", "d", "c")}),
    ('p(X, "d"), !n(X, 1)', set()),
    ('p(X, Y), X = Y', set()),
    ('same(X, "c")', {("a",), ("c",)}),
    ('p("a", "d")', {(True,)}),
    ('p("b", "d")', {(False,)}),
    ('p(X, _), X = "zz"', set()),
    ('o(X, T), q(T)', {("a", "k"), ("c", "k")}),
])
def test_query_over_rewritten_relations(typed: Reasoner, text: str, want: set) -> None:
    assert _table(typed.query(text)) == want


@pytest.mark.parametrize("text,col,fragment", [
    ('p(X, _), X = cat("a", "")', 10, "only = and !="),
    ('p(X, _), X != cat("a", "")', 10, "only = and !="),
    ('o(X, T), n(T, _)', 1, "merges with a column of 'o'"),
])
def test_query_refused_with_location(typed: Reasoner, text: str, col: int,
                                     fragment: str) -> None:
    with pytest.raises(ProgramError) as exc:
        typed.query(text)
    assert fragment in str(exc.value)
    assert exc.value.loc is not None and exc.value.loc.file == "<query>"
    assert exc.value.loc.column == col


def test_query_mixing_merged_and_unmerged_symbol_columns_refused() -> None:
    r = Reasoner("""
        .type D <: symbol
        .decl same(x: D, y: D) equality
        .decl p(x: D)
        .decl s(x: symbol)
        p("a"). s("a"). same("a", "b").
    """, device="cpu")
    with pytest.raises(ProgramError) as exc:
        r.query("p(X), s(X)")
    assert "merges" in str(exc.value) and exc.value.loc is not None
    assert (exc.value.loc.file, exc.value.loc.line, exc.value.loc.column) == ("<query>", 1, 7)
    with pytest.raises(ProgramError, match="negated"):
        r.query("p(X), !s(X)")
    assert _table(r.query("s(X)")) == {("a",)}  # unmerged: as stored


def _random_query(rng: random.Random, kinds: dict[str, tuple[str, ...]]) -> str:
    names = list(kinds)
    scope: dict[str, list[str]] = {"D": [], "O": [], "number": [], "S": []}
    lits, count = [], [0]

    def term(k: str) -> str:
        r = rng.random()
        if r < 0.2:
            v = rng.choice(D_VALUES if k in ("D", "S") else O_VALUES if k == "O" else (0, 1, 2))
            return f'"{v}"' if isinstance(v, str) else str(v)
        if r < 0.3:
            return "_"
        if scope[k] and r < 0.7:
            return rng.choice(scope[k])
        count[0] += 1
        v = f"V{count[0]}"
        scope[k].append(v)
        return v

    for _ in range(rng.randint(1, 2)):
        n = rng.choice(names)
        lits.append(f"{n}({', '.join(term(k) for k in kinds[n])})")
    if scope["D"] and rng.random() < 0.3:
        v = rng.choice(scope["D"])
        op = rng.choice(["=", "!="])
        other = rng.choice(scope["D"] + [f'"{rng.choice(D_VALUES)}"'])
        lits.append(f"{v} {op} {other}")
    if rng.random() < 0.25:
        n = rng.choice(names)
        args = []
        for k in kinds[n]:
            args.append(rng.choice(scope[k]) if scope[k] and rng.random() < 0.7 else "_")
        lits.append(f"!{n}({', '.join(args)})")
    return ", ".join(lits)


@pytest.mark.parametrize("seed", range(12))
def test_generated_queries_against_spelled_out(seed: int) -> None:
    """Queries answered over the rewritten relations equal the same queries over the
    materialisation of the program with equality spelled out as rules."""
    case = equality_program(seed)
    try:
        eq = Reasoner(case.text, device="cpu")
    except ProgramError:
        pytest.skip("program refused by the front end")
    spelled = Reasoner(spelled_text(case), device="cpu")
    eq.materialise()
    spelled.materialise()
    rng = random.Random(seed)
    answered = 0
    for _ in range(25):
        text = _random_query(rng, case.kinds)
        try:
            want = _table(spelled.query(text))
        except ProgramError:
            continue  # not a valid query (safety, types)
        try:
            got = _table(eq.query(text))
        except ProgramError as exc:
            assert exc.loc is not None and exc.loc.file == "<query>", (text, exc)
            continue
        assert got == want, (seed, text)
        answered += 1
    assert answered >= 5


# --- explanations ---------------------------------------------------------------------------

_FACT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\((.*)\)$", re.S)


def _parse_fact(text: str) -> tuple[str, tuple]:
    m = _FACT.match(text)
    assert m is not None, text
    return m.group(1), tuple(json.loads(f"[{m.group(2)}]"))


def _unify(term: object, value: object, sub: dict[str, object]) -> bool:
    if isinstance(term, GWild):
        return True
    if isinstance(term, GConst):
        return term.value == value
    if isinstance(term, GVar):
        if term.name in sub:
            return sub[term.name] == value
        sub[term.name] = value
        return True
    raise AssertionError(f"unexpected term {term!r} in a generated rule")


def _instance(rule: GRule, fact: tuple[str, tuple], body: list[tuple[str, tuple]]) -> bool:
    """Whether some substitution makes ``rule`` derive ``fact`` from ``body`` (its
    positive atoms in order; generated rules have no other literals)."""
    (conj,) = rule.conjunctions()
    atoms = [lit for lit in conj if isinstance(lit, GAtom)]
    assert len(atoms) == len(conj)
    if len(atoms) != len(body) or rule.head.rel != fact[0]:
        return False
    sub: dict[str, object] = {}
    pairs = [(rule.head, fact), *zip(atoms, body)]
    return all(a.rel == f[0] and len(a.args) == len(f[1])
               and all(_unify(t, v, sub) for t, v in zip(a.args, f[1])) for a, f in pairs)


def check_proof(proof: dict, rules: list[GRule], axioms: dict[str, list[GRule]],
                explicit: dict[str, set[tuple]]) -> int:
    """Check every step of a proof (``Proof.to_dict()``) against the program's rules, the
    equality axioms and the explicit facts; returns the number of steps.  A step named
    by an axiom must be an instance of that axiom; another derived step an instance of a
    rule of the program; an explicit leaf a given fact; a ``see above`` leaf a fact
    proved elsewhere in the tree with the same height."""
    proved: dict[tuple, set[int]] = {}
    refs: list[tuple[tuple, int]] = []
    steps = [0]

    def walk(node: dict) -> None:
        steps[0] += 1
        fact = _parse_fact(node["fact"])
        if node["kind"] == "explicit":
            assert fact[1] in explicit.get(fact[0], set()), node["fact"]
            assert node["height"] == 0
            proved.setdefault(fact, set()).add(0)
            return
        if node["kind"] == "see above":
            refs.append((fact, node["height"]))
            return
        assert node["kind"] == "derived"
        children = node["children"]
        for c in children:
            walk(c)
        body = [_parse_fact(c["fact"]) for c in children]
        pool = axioms[node["axiom"]] if "axiom" in node else rules
        assert any(_instance(r, fact, body) for r in pool), (node["fact"], node.get("axiom"),
                                                             node["rule"], body)
        assert node["height"] == 1 + max((c["height"] for c in children), default=0)
        proved.setdefault(fact, set()).add(node["height"])

    walk(proof)
    for fact, h in refs:
        assert h in proved.get(fact, set()), fact
    return steps[0]


def _axioms_by_kind(kinds: dict[str, tuple[str, ...]]) -> dict[str, list[GRule]]:
    out: dict[str, list[GRule]] = {k: [] for k in ("reflexivity", "symmetry", "transitivity",
                                                    "replacement")}
    for r in axioms(kinds):
        (conj,) = r.conjunctions()
        if len(conj) == 1 and conj[0].rel != "same" or (
                len(conj) == 1 and r.head.args[0] == r.head.args[1]):
            out["reflexivity"].append(r)
        elif len(conj) == 1:
            out["symmetry"].append(r)
        elif r.head.rel == "same":
            out["transitivity"].append(r)
        else:
            out["replacement"].append(r)
    return out


def test_explain_uses_the_equality_steps() -> None:
    r = Reasoner("""
        .decl same(x: symbol, y: symbol) equality
        .decl p(x: symbol, y: symbol)
        .decl key(x: symbol, k: symbol)
        .decl q(x: symbol)
        p("a", "b"). key("a", "k"). key("c", "k"). q("c").
        same(x, y) :- key(x, k), key(y, k).
        q(y) :- p(x, y), q(x).
    """, device="cpu")
    proof = r.explain('q("b")')
    assert proof is not None
    text = proof.text()
    assert "equality axiom (replacement)" in text and 'same("c", "a")' in text
    assert 'q("c")    [explicit]' in text
    d = proof.to_dict()
    assert d["rule"].startswith("q(y) :- p(x, y), q(x)")
    assert r.explain('q("zz")') is None and r.explain('p("b", "a")') is None
    same = r.explain('same("c", "c")')
    assert same is not None and same.kind == "derived"


@pytest.mark.parametrize("seed", range(10))
def test_generated_explanations_check(seed: int) -> None:
    """Proofs of random facts of generated programs check against the program, the four
    axiom groups and the explicit facts; facts that do not hold have no proof."""
    case = equality_program(seed)
    try:
        r = Reasoner(case.text, device="cpu")
    except ProgramError:
        pytest.skip("program refused by the front end")
    r.materialise()
    explicit = {n: {tuple(row) for row in rows} for n, rows in case.spelled.inline_facts.items()}
    program_rules = [rule for rule in case.spelled.rules if rule not in set(axioms(case.kinds))]
    by_kind = _axioms_by_kind(case.kinds)
    rng = random.Random(seed)
    checked = 0
    for name, cols in case.kinds.items():
        facts = [tuple(x.values()) for x in r.relation(name).to_pylist()]
        for fact in rng.sample(facts, min(3, len(facts))):
            text = f"{name}({', '.join(json.dumps(v) for v in fact)})"
            proof = r.explain(text)
            assert proof is not None, text
            check_proof(proof.to_dict(), program_rules, by_kind, explicit)
            checked += 1
        missing = tuple("zz" if k in ("D", "O", "S") else 99 for k in cols)
        assert r.explain(f"{name}({', '.join(json.dumps(v) for v in missing)})") is None
    assert checked


def test_checker_rejects_broken_proofs() -> None:
    """The checker is not vacuous: a wrong leaf, a wrong axiom or a wrong height fails."""
    case = equality_program(3)
    r = Reasoner(case.text, device="cpu")
    explicit = {n: {tuple(row) for row in rows} for n, rows in case.spelled.inline_facts.items()}
    program_rules = [rule for rule in case.spelled.rules if rule not in set(axioms(case.kinds))]
    by_kind = _axioms_by_kind(case.kinds)
    proofs = []
    for name in case.kinds:
        for fact in [tuple(x.values()) for x in r.relation(name).to_pylist()][:4]:
            p = r.explain(f"{name}({', '.join(json.dumps(v) for v in fact)})")
            if p is not None and p.kind == "derived":
                proofs.append(p.to_dict())
    assert proofs
    with_axiom = [p for p in proofs if "axiom" in p]
    assert with_axiom
    p = json.loads(json.dumps(with_axiom[0]))
    p["axiom"] = "transitivity" if p["axiom"] != "transitivity" else "symmetry"
    with pytest.raises(AssertionError):
        check_proof(p, program_rules, by_kind, explicit)
    p = json.loads(json.dumps(proofs[0]))
    p["height"] += 1
    with pytest.raises(AssertionError):
        check_proof(p, program_rules, by_kind, explicit)
    p = json.loads(json.dumps(proofs[0]))
    leaf = p
    while leaf.get("children"):
        leaf = leaf["children"][0]
    leaf["fact"] = leaf["fact"].replace('"', '"z', 1)
    with pytest.raises(AssertionError):
        check_proof(p, program_rules, by_kind, explicit)


def test_cli_query_and_explain_over_a_store(tmp_path: Path) -> None:
    from souffle_cases import run_cli

    prog = tmp_path / "p.dl"
    prog.write_text("""
        .decl same(x: symbol, y: symbol) equality
        .decl p(x: symbol, y: symbol)
        .decl key(x: symbol, k: symbol)
        .decl q(x: symbol)
        .output q
        p("a", "b"). key("a", "k"). key("c", "k"). q("c").
        same(x, y) :- key(x, k), key(y, k).
        q(y) :- p(x, y), q(x).
    """)
    store = tmp_path / "st"
    rc, _, err = run_cli(["run", str(prog), "-D", str(tmp_path / "o"), "--store", str(store),
                          "--quiet", "--device", "cpu"])
    assert rc == 0, err
    rc, out, err = run_cli(["query", str(store), "q(X), p(Y, X)", "--device", "cpu"])
    assert rc == 0, err
    assert out.splitlines() == ["b\ta", "b\tc"]
    rc, out, err = run_cli(["explain", str(store), 'p("c", "b")', "--json", "--device", "cpu"])
    assert rc == 0, err
    tree = json.loads(out)
    assert tree["axiom"] == "replacement" and tree["children"][0]["kind"] == "explicit"
    rc, out, err = run_cli(["query", str(store), "p(X, _), X = cat(X, \"\")", "--device", "cpu"])
    assert rc == 1 and "<query>:1:" in err


def test_expansion_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.equality_expand import main

    assert main(["--rows", "20000", "--repeat", "1"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {x["method"] for x in lines} == {"pairwise", "sorted", "chunks"}
    assert len({(x["case"], x["rows_out"]) for x in lines}) == 4
