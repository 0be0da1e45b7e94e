"""DRed≈ in normal form (gpu_engine/equality_dred.py): deletions that reach no equality
run plain DRed over the rewritten relations; every result is judged against a fresh
Remat≈ with the same dictionary (rewritten rows, expansion and classes)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from test_equality_bf import fresh, same_state  # noqa: E402

from gpu_engine import Reasoner, equality_dred  # noqa: E402

# same is derived from key only; reach is recursive; star reads a rule constant that a
# merge normalises; low sits in a stratum that does not feed the equality
PROGRAM = """
.decl key(x: symbol, k: symbol)
.decl attr(x: symbol, v: symbol)
.decl knows(x: symbol, y: symbol)
.decl same(x: symbol, y: symbol) equality
.decl fan(x: symbol, v: symbol)
.decl reach(x: symbol, y: symbol)
.decl star(x: symbol)
.decl low(x: symbol)
same(x, y) :- key(x, k), key(y, k).
fan(x, v) :- knows(x, y), attr(y, v).
reach(x, y) :- knows(x, y).
reach(x, z) :- reach(x, y), knows(y, z).
star(x) :- knows(x, "b").
low(x) :- attr(x, "1").
"""

NAMES = "abcdefghij"


def _facts(rng: random.Random) -> dict[str, list[tuple]]:
    keys = [(x, rng.choice("KKLM")) for x in NAMES if rng.random() < 0.6]
    attr = [(x, rng.choice("123")) for x in NAMES if rng.random() < 0.7]
    knows = sorted({(rng.choice(NAMES), rng.choice(NAMES)) for _ in range(12)})
    return {"key": keys, "attr": attr, "knows": knows, "same": [("d", "f")]}


def _delete(rng: random.Random, facts: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    """1-3 random attr/knows facts, or every attr/knows fact of one constant (so it may
    leave every domain column and lose its reflexive row)."""
    pool = [(n, r) for n in ("attr", "knows") for r in facts[n]]
    if not pool:
        return {}
    if rng.random() < 0.3:
        c = rng.choice(NAMES)
        pick = [(n, r) for n, r in pool if c in r]
    else:
        pick = rng.sample(pool, k=min(len(pool), rng.randint(1, 3)))
    out: dict[str, list[tuple]] = {}
    for n, r in pick:
        out.setdefault(n, []).append(r)
    return out


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("algorithm", ["dred_eq", "auto"])
def test_sequences_equal_remat(seed: int, algorithm: str) -> None:
    rng = random.Random(seed)
    facts = _facts(rng)
    r = fresh(PROGRAM, facts, Reasoner(PROGRAM, device="cpu"))
    normal = 0
    for _ in range(5):
        dele = _delete(rng, facts)
        if not dele:
            break
        st = r.update(delete=dele, algorithm=algorithm)
        normal += st.note.startswith("DRed≈ in normal form")
        facts = {n: [x for x in v if x not in dele.get(n, ())] for n, v in facts.items()}
        assert same_state(r, fresh(PROGRAM, facts, r)), (seed, dele, st.note)
    assert normal  # attr/knows deletions reach no equality: the normal-form path ran


def test_explicit_through_another_member() -> None:
    """knows(a, b) and knows(c, b) with a ≈ c share a normal form; deleting one keeps it
    explicit (π(E′) still holds it), and deleting both removes it and its consequences."""
    facts = {"key": [("a", "K"), ("c", "K")], "knows": [("a", "b"), ("c", "b")],
             "attr": [("b", "1")], "same": []}
    r = fresh(PROGRAM, facts, Reasoner(PROGRAM, device="cpu"))
    st = r.update(delete={"knows": [("a", "b")]}, algorithm="dred_eq")
    assert st.note.startswith("DRed≈ in normal form"), st.note
    left = dict(facts, knows=[("c", "b")])
    assert same_state(r, fresh(PROGRAM, left, r))
    st = r.update(delete={"knows": [("c", "b")]}, algorithm="dred_eq")
    assert st.note.startswith("DRed≈ in normal form"), st.note
    assert same_state(r, fresh(PROGRAM, dict(facts, knows=[]), r))


def test_reflexive_row_of_a_vanished_constant() -> None:
    """Deleting the only fact that mentions z removes z≈z (the ≈4 closure row); a
    singleton whose equality is explicit keeps it."""
    facts = {"key": [("a", "K")], "attr": [("z", "9"), ("a", "1")], "knows": [],
             "same": [("y", "y")]}
    r = fresh(PROGRAM, facts, Reasoner(PROGRAM, device="cpu"))
    st = r.update(delete={"attr": [("z", "9")]}, algorithm="dred_eq")
    assert st.note.startswith("DRed≈ in normal form"), st.note
    assert same_state(r, fresh(PROGRAM, dict(facts, attr=[("a", "1")]), r))


def test_key_deletion_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key fact feeds the equality: DRed≈ proper runs (the class may split); with the
    normal-form path switched off, attr deletions give the same state as with it."""
    rng = random.Random(7)
    facts = _facts(rng)
    r = fresh(PROGRAM, facts, Reasoner(PROGRAM, device="cpu"))
    k = facts["key"][0]
    st = r.update(delete={"key": [k]}, algorithm="dred_eq")
    assert not st.note.startswith("DRed≈ in normal form")
    facts["key"] = facts["key"][1:]
    assert same_state(r, fresh(PROGRAM, facts, r))
    monkeypatch.setattr(equality_dred, "ENABLED", False)
    off = fresh(PROGRAM, facts, r)
    dele = {"attr": facts["attr"][:2]}
    st = off.update(delete=dele, algorithm="dred_eq")
    assert not st.note.startswith("DRed≈ in normal form")
    monkeypatch.setattr(equality_dred, "ENABLED", True)
    st = r.update(delete=dele, algorithm="dred_eq")
    assert st.note.startswith("DRed≈ in normal form")
    assert same_state(r, off)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("bf", [True, False])
def test_auto_takes_a_deletion_whole(seed: int, bf: bool, monkeypatch: pytest.MonkeyPatch
                                     ) -> None:
    """auto: a deletion of attr/knows facts and key facts (which may split a class) goes
    whole to B/F≈ (chosen for large classes) or DRed≈ (small classes), without a first
    part by DRed in normal form.  The result is Remat≈'s."""
    from gpu_engine import equality_maintenance

    if bf:
        monkeypatch.setattr(equality_maintenance, "SPLIT_MEMBERS", 0)
        monkeypatch.setattr(equality_maintenance, "LEAVE_SHARE", 0.0)
    rng = random.Random(100 + seed)
    facts = _facts(rng)
    r = fresh(PROGRAM, facts, Reasoner(PROGRAM, device="cpu"))
    dele = _delete(rng, facts)
    dele["key"] = rng.sample(facts["key"], k=min(2, len(facts["key"])))
    st = r.update(delete=dele, algorithm="auto")
    if not st.note.startswith("Remat"):
        assert st.note.startswith("B/F≈:" if bf else "DRed≈:"), st.note
    facts = {n: [x for x in v if x not in dele.get(n, ())] for n, v in facts.items()}
    assert same_state(r, fresh(PROGRAM, facts, r)), (seed, dele, st.note)


def test_rules_follow_the_new_rho() -> None:
    """Regression (fuzz seed 5074): DRed≈ split a class, so the rule constant "f" is its
    own representative again; the insertion that merges it once more must evaluate the
    rule reading "f" in full (the stratum's rules had kept the old normal form, and
    Mat≈'s continuation missed r0(1, a))."""
    from eq_update_fuzz import run_sequence

    rec = run_sequence(5074, steps=3, paths_run=("dred_eq", "bf_eq", "remat"))
    assert rec["disagreements"] == [], rec


def test_occurrence_counts_follow_other_updates() -> None:
    """Regression (fuzz seed 10401): delete r2(e) (e leaves every column: e≈e goes),
    insert it again (Mat≈), delete it again: the occurrence counts kept on the engine
    must not be taken for the store the insertion changed in place."""
    from eq_update_fuzz import run_sequence

    rec = run_sequence(10401, steps=3, paths_run=("dred_eq", "remat"))
    assert rec["disagreements"] == [], rec


def test_occurrence_counts_cover_new_ids() -> None:
    """Regression (fuzz seed 350013): an update gave a new symbol an id, which went
    into the equality relation only (not counted), and a later deletion of its
    reflexive row read the occurrence counts kept from before at that id (an index
    past their end)."""
    from eq_update_fuzz import run_sequence

    rec = run_sequence(350013, steps=6, paths_run=("dred_eq", "auto", "remat"))
    assert rec["disagreements"] == [], rec
