"""B/F≈ (paper 001 Algorithms 1–7, gpu_engine/equality_bf.py): the paper's examples (brief
§1.2), class splits, deleted facts whose constants were merged, re-insertions, explicit
facts that are also derived, mixed updates, constants in rules, the statistics, the
store, the CLI and the streaming sink; random update sequences judged against a fresh
Remat≈ and the spelled-out reference (``make fuzz-eq-update`` runs 1,000)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from eq_generators import PAPER_31, RULE_CONSTANT_SPLIT, paper_31, rows  # noqa: E402
from eq_update_fuzz import run_sequence  # noqa: E402

from gpu_engine import Reasoner  # noqa: E402

TRIPLES = """
.decl triple(s: symbol, p: symbol, o: symbol)
.decl same(x: symbol, y: symbol) equality
.output triple
same(y1, y2) :- triple(y1, "R", x), triple(y2, "R", x).
same(y1, y2) :- triple(x, "R", y1), triple(x, "R", y2).
"""


def fresh(text: str, facts: dict[str, list[tuple]], like: Reasoner) -> Reasoner:
    """Remat≈ of ``facts`` with the same dictionary (the same min-id representatives)."""
    r = Reasoner(text, device="cpu", symbols=like.symbols)
    for n, v in facts.items():
        if v:
            r.add_facts(n, v)
    r.materialise()
    return r


def rewritten(r: Reasoner) -> int:
    return sum(len(rows(r, n, False)) for n in r.engine.program.relations)


def same_state(a: Reasoner, b: Reasoner) -> bool:
    names = list(a.engine.program.relations)
    return all(rows(a, n, False) == rows(b, n, False) and rows(a, n) == rows(b, n)
               for n in names) and {tuple(x.values()) for x in
                                    a.equivalence_classes().to_pylist()} == {
        tuple(x.values()) for x in b.equivalence_classes().to_pylist()}


def test_paper_31_relational() -> None:
    """Brief §1.2 item 2: deleting R(a, d) splits both classes; the 3 rewritten facts
    become 6, which contain the old ones (I′ ⊇ I), and every count is the paper's."""
    r = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    before = {n: rows(r, n, False) for n in ("R", "eq")}
    assert rewritten(r) == 3 and sum(r.relation_sizes().values()) == 12
    st = r.update(delete={"R": [("a", "d")]}, algorithm="bf_eq")
    assert st.algorithm == "b/f≈" and st.deleted == 1
    assert rows(r, "R") == rows(r, "R", False) == {("a", "b"), ("c", "d")}
    assert rows(r, "eq") == {(x, x) for x in "abcd"}
    assert rewritten(r) == 6 == sum(r.relation_sizes().values())
    for n, old in before.items():
        assert old <= rows(r, n, False)
    assert r.equivalence_classes().num_rows == 0
    # the statistics: D = {R(a,b), a≈a, b≈b} (R(a,d)'s normal form is R(a,b)); all are
    # checked; R(a,b), R(c,d) and the four reflexive rows end up proved; 3 are added back
    assert st.overdeleted == 3 and st.checked >= 3 and st.proved == 6
    assert st.rederived == 3 and st.added == 3 and "re-added" in st.note
    st = r.update(insert={"R": [("a", "d")]}, algorithm="bf_eq")  # merged again
    assert st.algorithm == "mat≈"
    assert rows(r, "R", False) == {("a", "b")} and rewritten(r) == 3


def test_paper_31_rdf_form() -> None:
    """Brief §1.2 item 1 over a triple relation (≈ is the relation ``same`` here, not a
    constant of the triples, so the paper's ≈≈≈ has no counterpart): I = {⟨a,R,b⟩,
    a≈a, R≈R, b≈b}, π = {c↦a, d↦b}; after deleting ⟨a,R,d⟩: I′ = I ∪ {⟨c,R,d⟩, c≈c, d≈d},
    π′ the identity."""
    r = Reasoner(TRIPLES, device="cpu")
    r.add_facts("triple", [("a", "R", "b"), ("c", "R", "d"), ("a", "R", "d")])
    r.materialise()
    assert rows(r, "triple", False) == {("a", "R", "b")}
    assert rows(r, "same", False) == {("a", "a"), ("R", "R"), ("b", "b")}
    assert len(rows(r, "triple")) == 4
    st = r.update(delete={"triple": [("a", "R", "d")]}, algorithm="bf_eq")
    assert st.algorithm == "b/f≈"
    assert rows(r, "triple", False) == {("a", "R", "b"), ("c", "R", "d")}
    assert rows(r, "same", False) == {(x, x) for x in "abcdR"}
    assert r.equivalence_classes().num_rows == 0


def test_redundant_derivations_example() -> None:
    """Brief §1.2 item 3 (§3.2): R(a, b), R(a, d) merge b and d; deleting R(a, d) splits
    them, and deleting R(a, b) too leaves b's and d's reflexive rows only where E′ still
    mentions them (line 38 reads E′, brief pitfall 4)."""
    text = PAPER_31.replace("eq(y1, y2) :- R(y1, x), R(y2, x).\n", "")
    r = Reasoner(text, device="cpu")
    r.add_facts("R", [("a", "b"), ("a", "d")])
    r.materialise()
    assert rows(r, "eq", False) == {("a", "a"), ("b", "b")}
    st = r.update(delete={"R": [("a", "d")]}, algorithm="bf_eq")
    assert st.algorithm == "b/f≈"
    assert same_state(r, fresh(text, {"R": [("a", "b")]}, r))
    r.update(delete={"R": [("a", "b")]}, algorithm="bf_eq")
    assert sum(r.relation_sizes().values()) == 0


def test_explicit_equality_split_and_rule_constants() -> None:
    """Deleting an explicit equality splits a class that a rule constant reads: the
    rule's constant is normalised back (brief pitfall 7); re-inserting merges again."""
    text = RULE_CONSTANT_SPLIT
    r = Reasoner(text, device="cpu")
    r.materialise()
    assert rows(r, "q") == {("a",), ("b",), ("z",)}
    st = r.update(delete={"same": [("a", "b")]}, algorithm="bf_eq")
    assert st.algorithm == "b/f≈"
    assert rows(r, "q") == {("b",)} and r.equivalence_classes().num_rows == 0
    judge = Reasoner(text.replace('same("a", "b").', ""), device="cpu", symbols=r.symbols)
    judge.materialise()
    assert same_state(r, judge)
    r.update(insert={"same": [("b", "a")]}, algorithm="bf_eq")
    assert rows(r, "q") == {("a",), ("b",), ("z",)}


def test_deleted_fact_whose_constants_were_merged() -> None:
    """A fact of a merged constant is deleted while its class survives: its normal form
    stays when another member still has it, and goes (with the reflexive rows of
    constants nothing else mentions) when none does."""
    text = """
    .decl same(x: symbol, y: symbol) equality
    .decl name(x: symbol, n: symbol)
    .decl likes(x: symbol, y: symbol)
    .decl fan(x: symbol)
    same(x, y) :- name(x, n), name(y, n).
    fan(x) :- likes(x, _).
    """
    facts = {"name": [("a", "N"), ("b", "N"), ("c", "M")],
             "likes": [("a", "t"), ("b", "t"), ("c", "u")]}
    r = fresh(text, facts, Reasoner(text, device="cpu"))
    assert rows(r, "likes", False) == {("a", "t"), ("c", "u")}
    st = r.update(delete={"likes": [("b", "t")]}, algorithm="bf_eq")  # a still likes t
    assert st.algorithm == "b/f≈" and st.added == 0
    facts["likes"].remove(("b", "t"))
    assert same_state(r, fresh(text, facts, r))
    r.update(delete={"likes": [("a", "t")], "name": [("c", "M")]}, algorithm="bf_eq")
    facts["likes"].remove(("a", "t"))
    facts["name"].remove(("c", "M"))
    assert same_state(r, fresh(text, facts, r))
    assert ("t", "t") not in rows(r, "same") and ("M", "M") not in rows(r, "same")
    r.update(insert={"likes": [("b", "t")]}, algorithm="bf_eq")  # re-inserted
    facts["likes"].append(("b", "t"))
    assert same_state(r, fresh(text, facts, r))


def test_mixed_update_and_explicit_fact_also_derived() -> None:
    """Deleting and inserting at once: B/F≈ for E⁻, then Mat≈ for E⁺ under π′ (pitfall
    8); deleting an explicit fact that is also derived keeps it."""
    r = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    st = r.update(delete={"R": [("a", "d")]}, insert={"R": [("c", "b")]},
                  algorithm="bf_eq")
    assert st.algorithm == "b/f≈" and "Mat≈ continued" in st.note
    assert rows(r, "R", False) == {("a", "b")} and len(rows(r, "R")) == 4
    r.update(insert={"R": [("a", "d")]}, algorithm="bf_eq")  # R(a,d) derived and explicit
    st = r.update(delete={"R": [("a", "d")]}, algorithm="bf_eq")
    assert st.algorithm == "b/f≈" and st.added == 0
    assert rows(r, "R", False) == {("a", "b")} and len(rows(r, "R")) == 4
    # the same equality deleted and inserted in one update: it stays
    t = "\n".join(x for x in PAPER_31.splitlines() if not x.startswith("eq(")) + \
        '\neq("p", "q").\n.decl s(x: symbol)\ns("p").\n'
    r = Reasoner(t, device="cpu")
    r.add_facts("eq", [("x", "y")])
    r.materialise()
    st = r.update(delete={"eq": [("x", "y")]}, insert={"eq": [("x", "y")]},
                  algorithm="bf_eq")
    assert len(rows(r, "eq")) == 8 and st.deleted == 0


def test_split_class_sequence_against_remat() -> None:
    """Classes built by an inverse-functional rule split and merge again as keys are
    deleted and re-inserted; after every step the state is Remat≈'s."""
    text = """
    .decl same(x: symbol, y: symbol) equality
    .decl key(x: symbol, k: symbol)
    .decl knows(x: symbol, y: symbol)
    .decl fan(x: symbol, y: symbol)
    same(x, y) :- key(x, k), key(y, k).
    fan(x, z) :- knows(x, y), knows(y, z).
    """
    keys = [(f"e{i}", f"K{i % 3}") for i in range(9)]
    knows = [(f"e{i}", f"e{(i * 4 + 1) % 9}") for i in range(9)]
    facts = {"key": list(keys), "knows": list(knows)}
    r = fresh(text, facts, Reasoner(text, device="cpu"))
    steps = [({"key": [("e0", "K0"), ("e3", "K0")]}, {}),
             ({"knows": [("e1", "e5")]}, {"key": [("e0", "K1")]}),
             ({}, {"key": [("e3", "K0")]}),
             ({"key": [("e6", "K0"), ("e4", "K1")], "knows": [("e2", "e0")]}, {})]
    for dele, ins in steps:
        st = r.update(delete=dele, insert=ins, algorithm="bf_eq")
        assert st.algorithm in ("b/f≈", "mat≈")
        for n, v in dele.items():
            facts[n] = [x for x in facts[n] if x not in v]
        for n, v in ins.items():
            facts[n] = facts[n] + v
        assert same_state(r, fresh(text, facts, r)), (dele, ins)


def test_body_less_rule_and_budget() -> None:
    """A rule without body atoms holds unconditionally (its head is proved, not only
    checked); ``auto`` falls back to Remat≈ past its budget of checked facts."""
    text = """
    .decl same(x: symbol, y: symbol) equality
    .decl r(x: symbol)
    .decl s(x: symbol)
    r("x"). s("g"). s("e").
    same("e", "g") :- r("x").
    same("e", "h").
    """
    r = Reasoner(text, device="cpu")
    r.materialise()
    st = r.update(delete={"r": [("x",)]}, algorithm="bf_eq")
    assert st.algorithm == "b/f≈"
    assert rows(r, "s") == {("g",), ("e",), ("h",)}
    assert {tuple(x.values()) for x in r.equivalence_classes().to_pylist()} == {
        ("e", "e"), ("e", "h")}
    import gpu_engine.equality_maintenance as EM

    big = paper_31([(f"s{i}", "o") for i in range(30)] + [("t", f"u{i}") for i in range(30)])
    old = EM.BF_BUDGET, EM.LARGE_E, EM.SPLIT_MEMBERS, EM.LEAVE_SHARE
    EM.BF_BUDGET, EM.LARGE_E, EM.SPLIT_MEMBERS, EM.LEAVE_SHARE = 0.0, 1, 0, 0.0
    try:
        st = big.update(delete={"R": [("s0", "o")]})
    finally:
        EM.BF_BUDGET, EM.LARGE_E, EM.SPLIT_MEMBERS, EM.LEAVE_SHARE = old
    assert st.algorithm == "remat≈" and "B/F≈ stopped" in st.note


def test_store_cli_and_stats(tmp_path: Path) -> None:
    from gpu_engine.host.store import save_store

    prog = tmp_path / "p.dl"
    prog.write_text(PAPER_31.replace(".decl R(x: symbol, y: symbol)",
                                     ".decl R(x: symbol, y: symbol)\n.input R"))
    r = Reasoner(prog, device="cpu")
    r.add_facts("R", [("a", "b"), ("c", "d"), ("a", "d")])
    r.materialise()
    save_store(r, tmp_path / "db")
    (tmp_path / "del").mkdir()
    (tmp_path / "del" / "R.facts").write_text("a\td\n")
    out = subprocess.run(
        [sys.executable, "-m", "gpu_engine.host.cli", "update", str(tmp_path / "db"),
         "--delete", str(tmp_path / "del"), "--algorithm", "bf_eq", "--stats", "-D", "-"],
        capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert "b/f≈" in text and "checked" in text and "disproved" in text
    from gpu_engine.host.store import open_store

    back = open_store(tmp_path / "db", device="cpu")
    assert sum(back.relation_sizes().values()) == 6


def test_streaming_sink(tmp_path: Path) -> None:
    from gpu_engine.host.spark.exchange import StreamingUpdateSink
    from gpu_engine.host.store import open_store, save_store

    r = paper_31([("a", "b"), ("c", "d"), ("a", "d")])
    save_store(r, tmp_path / "db")
    sink = StreamingUpdateSink(tmp_path / "db", "R", op_column="op", device="cpu",
                               coalesce=False, algorithm="bf_eq")
    st = sink.apply(pa.table({"x": ["a"], "y": ["d"], "op": ["-"]}), 1)
    assert st is not None and st.algorithm == "b/f≈"
    back = open_store(tmp_path / "db", device="cpu")
    assert sum(back.relation_sizes().values()) == 6


def test_processed_fact_that_held_is_not_in_o() -> None:
    """Line 16 is inside line 8's block: r2(e, f) is doubtful but holds (its normal form
    r2(e, b) is proved through r2(e, c)), then r0("a") loses its class {a, g}; the
    instance r0(e) :- r0("a"), r2(e, c) must still be considered from r0(g)'s side
    (fuzz campaign, seed 345)."""
    text = """
    .decl same(a0: symbol, a1: symbol) equality
    .decl r0(a0: symbol)
    .decl r1(a0: symbol, a1: symbol)
    .decl r2(a0: symbol, a1: symbol)
    .decl raw(a0: symbol, a1: symbol)
    r1(m0, m1) :- raw(m0, m1).
    same(y1, y2) :- r2(s0, y1), r2(s0, y2), r0(y1).
    r2(v2, v1) :- r2(v1, v1), r1(v2, v2).
    r0(v3) :- r1(v3, v3), r0(v4).
    r0(v5) :- r0("a"), r2(v5, v6).
    """
    facts = {"r0": [("b",), ("g",), ("f",)],
             "r1": [("a", "c"), ("b", "g"), ("b", "f"), ("g", "g"), ("c", "d")],
             "r2": [("e", "c"), ("e", "f"), ("d", "b"), ("f", "b"), ("f", "c")],
             "same": [("a", "g"), ("f", "b")], "raw": [("d", "f")]}
    dele = {"same": [("a", "g")], "r0": [("f",)], "r2": [("e", "f")]}
    r = fresh(text, facts, Reasoner(text, device="cpu"))
    assert ("e",) in rows(r, "r0")
    st = r.update(delete=dele, algorithm="bf_eq")
    assert st.algorithm == "b/f≈"
    left = {n: [x for x in v if x not in dele.get(n, [])] for n, v in facts.items()}
    assert same_state(r, fresh(text, left, r))
    assert ("e",) not in rows(r, "r0")


@pytest.mark.parametrize("seed", range(8))
def test_random_update_sequences(seed: int) -> None:
    """Judge J4: after every step of a random sequence (deletions splitting classes,
    re-insertions, derived facts made explicit and deleted, mixed updates), B/F≈ and the
    other paths equal a fresh Remat≈ and, expanded, the spelled-out reference."""
    rec = run_sequence(1000 + seed, steps=5)
    assert rec["disagreements"] == [], rec
    assert rec["paths"].get("b/f≈", 0) > 0 or rec["paths"].get("mat≈", 0) > 0


def test_bf_eq_update_killed_leaves_old_or_new_store(tmp_path: Path) -> None:
    """The crash test with equality in the store: ``update --algorithm bf_eq`` killed
    with SIGKILL at random moments leaves the store loadable and equal to the state
    before or after the update (rewritten rows and classes), never a mixture."""
    import random
    import signal
    import time

    from gpu_engine.host.store import open_store, save_store

    prog = tmp_path / "p.dl"
    prog.write_text(PAPER_31.replace(".decl R(x: symbol, y: symbol)",
                                     ".decl R(x: symbol, y: symbol)\n.input R"))
    facts = [(f"s{i}", f"o{i % 7}") for i in range(60)] + [("a", "d"), ("c", "d")]
    r = Reasoner(prog, device="cpu")
    r.add_facts("R", facts)
    r.materialise()
    save_store(r, tmp_path / "db")

    def state() -> tuple:
        s = open_store(tmp_path / "db", device="cpu")
        return (tuple(sorted(rows(s, n, False)) for n in ("R", "eq")),
                tuple(sorted(tuple(x.values()) for x in s.equivalence_classes().to_pylist())))

    dirs = []
    for k, (ins, dele) in enumerate((([], [("a", "d"), ("s3", "o3")]),
                                     ([("a", "d"), ("s3", "o3")], []))):
        for kind, rs in (("ins", ins), ("del", dele)):
            d = tmp_path / f"{kind}{k}"
            d.mkdir()
            (d / "R.facts").write_text("".join(f"{x}\t{y}\n" for x, y in rs))
        dirs.append([sys.executable, "-m", "gpu_engine.host.cli", "update",
                     str(tmp_path / "db"), "--insert", str(tmp_path / f"ins{k}"), "--delete",
                     str(tmp_path / f"del{k}"), "--algorithm", "bf_eq", "--device", "cpu",
                     "--quiet"])
    root = Path(__file__).parent.parent
    s0 = state()
    t0 = time.monotonic()
    assert subprocess.run(dirs[0], cwd=root, capture_output=True).returncode == 0
    t_run = time.monotonic() - t0
    s1 = state()
    assert s0 != s1
    states, cur = (s0, s1), 1
    rng = random.Random(7)
    for _ in range(4):
        proc = subprocess.Popen(dirs[cur], cwd=root, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.0) * t_run)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = state()
        assert now in states
        cur = 1 - states.index(now)
