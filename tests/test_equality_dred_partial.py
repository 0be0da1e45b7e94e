"""DRed≈'s partial split (gpu_engine/equality_maintenance.py, step 2): a class whose lost
merge certain equalities still justify for all but some members keeps the rest, and
only the leavers' facts are deleted and added again; a class explodes instead when a
leaver is a rule constant or a rule takes a merged column from an unmerged one.  Past
block 0, a fact that a fact of E′ holding no leaver still gives stays out of D.  Every
update is judged against a fresh Remat≈ with the same dictionary (rewritten rows,
expansion and classes)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from gpu_engine.kernels.backend import get_backend  # noqa: E402
from test_equality_bf import fresh, same_state  # noqa: E402

from benchmarks.equality_update import RULES  # noqa: E402
from gpu_engine import Reasoner, equality_dred  # noqa: E402
from gpu_engine import equality_maintenance as EM  # noqa: E402
from gpu_engine import equality_occurrences as occ  # noqa: E402
from gpu_engine.equality_expand import class_index, shrink_classes  # noqa: E402

# the synthetic benchmark's program: classes by a shared key; fan, reach and star above
KEYS = RULES.replace("{const}", "m12")

MEMBERS = [f"m{i}" for i in range(40)]


def _facts(rng: random.Random) -> dict[str, list[tuple]]:
    """40 members sharing key K (and some a second key L), 20 others with keys of their
    own; attributes from 3 values, two random ``knows`` edges each."""
    names = MEMBERS + [f"o{i}" for i in range(20)]
    key = [(m, "K") for m in MEMBERS] + [(m, "L") for m in MEMBERS[:8]]
    key += [(o, f"k{o}") for o in names[40:]]
    return {"key": key,
            "attr": [(x, rng.choice("123")) for x in names],
            "knows": sorted({(x, rng.choice(names)) for x in names for _ in range(2)}),
            "same": []}


def _run(facts: dict[str, list[tuple]], updates: list[tuple[dict, dict]], text: str = KEYS
         ) -> list[str]:
    r = fresh(text, facts, Reasoner(text, device="cpu"))
    notes = []
    for ins, dele in updates:
        st = r.update(insert=ins, delete=dele, algorithm="dred_eq")
        for n, v in dele.items():
            facts[n] = [x for x in facts[n] if x not in v]
        for n, v in ins.items():
            facts[n] = facts[n] + [x for x in v if x not in facts[n]]
        assert same_state(r, fresh(text, facts, r)), (ins, dele, st.note)
        be = r.engine.be
        got = r.engine.class_index()
        want = class_index(be, r.engine.rho())
        assert all(np.array_equal(be.to_host(a), be.to_host(b)) for a, b in
                   zip(_classes(got), _classes(want))), st.note
        kept = occ.kept(r.engine, r.engine.store)  # the occurrence counts carried on
        if kept is not None:
            saved = r.engine.__dict__.pop("_eq_occurrences")
            again = occ.occurrences(r.engine, r.engine.store)
            r.engine._eq_occurrences = saved
            n = max(len(kept), len(again))
            assert np.array_equal(np.pad(np.asarray(kept), (0, n - len(kept))),
                                  np.pad(np.asarray(again), (0, n - len(again)))), st.note
        notes.append(st.note)
    return notes


def _classes(index: tuple) -> tuple:
    """A class index compared by what it says: each representative's sorted members."""
    members, offsets, sizes = (np.asarray(x) for x in index)
    reps = np.flatnonzero(sizes > 1)
    return (reps, *(np.sort(members[offsets[r]:offsets[r] + sizes[r]]) for r in reps))


@pytest.fixture(autouse=True)
def _no_normal_form_dred(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(equality_dred, "ENABLED", False)


def test_one_member_leaves_a_large_class() -> None:
    """Deleting ``key(m20, K)`` takes only m20 out of the class of 40; the facts of the
    representative's rows that other members still give stay (few overdeleted)."""
    rng = random.Random(1)
    facts = _facts(rng)
    r = fresh(KEYS, facts, Reasoner(KEYS, device="cpu"))
    st = r.update(delete={"key": [("m20", "K")]}, algorithm="dred_eq")
    assert "1 classes split off 1 members" in st.note, st.note
    assert "exploded" not in st.note
    facts["key"].remove(("m20", "K"))
    assert same_state(r, fresh(KEYS, facts, r))
    assert st.overdeleted < 40, st.overdeleted  # the class's rows: about 200


def test_the_representative_leaving_hands_the_class_to_the_rest() -> None:
    """Deleting the representative's keys leaves it alone in its component: the other
    39 members stay one class, renamed after the least of them (m1), and only m0's facts
    are deleted and added again; the class index and the occurrence counts of the
    renamed rows equal those taken afresh, and the next updates read them."""
    facts = _facts(random.Random(6))
    notes = _run(facts, [({}, {"key": [("m0", "K"), ("m0", "L")]}),
                         ({}, {"key": [("m30", "K")]}),
                         ({"key": [("m0", "K")]}, {"attr": [facts["attr"][5]]})])
    assert "1 classes split off 1 members" in notes[0], notes[0]
    assert "exploded" not in notes[0], notes[0]
    assert "1 classes split off 1 members" in notes[1], notes[1]


def test_the_representative_leaving_as_a_rule_constant_merges_the_rest_again() -> None:
    """As above with m0 the constant of ``star(x) :- knows(x, "m0")``: the class explodes
    and the insertion merges the others again; the occurrence counts carried through
    those merges equal counts taken afresh."""
    text = RULES.replace("{const}", "m0")
    facts = _facts(random.Random(6))
    notes = _run(facts, [({}, {"key": [("m0", "K"), ("m0", "L")]}),
                         ({}, {"key": [("m30", "K")]}),
                         ({"key": [("m0", "K")]}, {"attr": [facts["attr"][5]]})], text)
    assert "exploded 1 classes (40 members)" in notes[0], notes[0]
    assert "1 classes split off 1 members" in notes[1], notes[1]


def test_the_representative_leaving_a_class_in_two_pieces() -> None:
    """The representative held two groups together (m0 alone shares K with m1..m9 and L
    with m10..m19, where L is the key of only those): the larger group stays, renamed,
    and the other members stand alone."""
    names = [f"m{i}" for i in range(20)]
    key = [("m0", "K"), ("m0", "L")] + [(m, "K") for m in names[1:10]]
    key += [(m, "L") for m in names[10:]]
    rng = random.Random(4)
    facts = {"key": key, "attr": [(x, rng.choice("123")) for x in names],
             "knows": sorted({(x, rng.choice(names)) for x in names for _ in range(2)}),
             "same": []}
    notes = _run(facts, [({}, {"key": [("m0", "K"), ("m0", "L")]}),
                         ({"key": [("m0", "L")]}, {})])
    assert "1 classes split off 10 members" in notes[0], notes[0]


def test_a_leaver_held_by_a_second_key_stays() -> None:
    """m3 has keys K and L; deleting ``key(m3, K)`` leaves it connected through L."""
    notes = _run(_facts(random.Random(2)), [({}, {"key": [("m3", "K")]})])
    assert "split off" not in notes[0] and "exploded" not in notes[0], notes[0]


def test_a_leaver_that_is_a_rule_constant_explodes_its_class() -> None:
    """m12 is the constant of ``star(x) :- knows(x, "m12")``: when it leaves, the rule's
    normal form changes, and the class explodes."""
    notes = _run(_facts(random.Random(3)), [({}, {"key": [("m12", "K")]})])
    assert "exploded 1 classes (40 members)" in notes[0], notes[0]


def test_a_rule_from_an_unmerged_column_explodes() -> None:
    """``seen(x) :- raw(x)`` takes a merged column from an unmerged one: a leaver could
    come back through it, so classes explode."""
    text = """
    .type D <: symbol
    .decl key(x: D, k: symbol)
    .decl knows(x: D, y: D)
    .decl raw(x: symbol)
    .decl same(x: D, y: D) equality
    .decl seen(x: D)
    same(x, y) :- key(x, k), key(y, k).
    seen(as(x, D)) :- raw(x).
    seen(x) :- knows(x, _).
    """
    facts = {"key": [(m, "K") for m in MEMBERS[:10]], "raw": [("m3",), ("m5",)],
             "knows": [("m1", "m2"), ("m3", "o1")], "same": []}
    notes = _run(facts, [({}, {"key": [("m3", "K")]})], text)
    assert "exploded 1 classes (10 members)" in notes[0], notes[0]


def test_a_class_found_whole_is_judged_again_after_later_leavers() -> None:
    """{a1, a2, a3} is kept whole by ``p(a1, b2), p(a2, b2)`` and ``p(a1, b3), p(a3,
    b3)`` when judged first; then b2 leaves {b1, b2, b3}, and without b2's facts nothing
    connects a2 to a1: it leaves too (the final state merges it again through them)."""
    text = """
    .decl p(x: symbol, z: symbol)
    .decl k(x: symbol, c: symbol)
    .decl same(x: symbol, y: symbol) equality
    .decl q(x: symbol)
    same(x, y) :- p(x, z), p(y, z).
    same(x, y) :- k(x, c), k(y, c).
    q(x) :- p(x, _).
    """
    facts = {"p": [("a1", "b1"), ("a2", "b2"), ("a1", "b2"), ("a1", "b3"), ("a3", "b3")],
             "k": [("b1", "c"), ("b2", "c"), ("b3", "c")], "same": []}
    notes = _run(facts, [({}, {"p": [("a1", "b1")], "k": [("b2", "c")]})], text)
    assert "2 classes split off 2 members" in notes[0], notes[0]


@pytest.mark.parametrize("seed", range(8))
def test_random_updates_with_and_without_partial_splits(seed: int,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """Random deletions (keys among them) and mixed updates, re-inserting what went:
    the partial split and the explosion both equal Remat≈."""
    rng = random.Random(seed)
    base = _facts(rng)
    for partial in (True, False):
        monkeypatch.setattr(EM, "PARTIAL", partial)
        facts = {n: list(v) for n, v in base.items()}
        ups: list[tuple[dict, dict]] = []
        gone: list[tuple[str, tuple]] = []
        r2 = random.Random(seed * 31 + 7)
        for _ in range(5):
            pool = [(n, x) for n in ("key", "attr", "knows") for x in facts[n]]
            dele: dict[str, list[tuple]] = {}
            for n, x in r2.sample(pool, 3):
                dele.setdefault(n, []).append(x)
                gone.append((n, x))
            ins: dict[str, list[tuple]] = {}
            if r2.random() < 0.4 and gone:
                n, x = r2.choice(gone)
                if x not in dele.get(n, []):
                    ins.setdefault(n, []).append(x)
            ups.append((ins, dele))
            for n, v in dele.items():
                facts[n] = [x for x in facts[n] if x not in v]
            for n, v in ins.items():
                facts[n] += [x for x in v if x not in facts[n]]
        _run({n: list(v) for n, v in base.items()}, ups)


def test_shrink_classes_is_the_class_index_of_the_new_rho() -> None:
    """Members leaving their classes: the index :func:`shrink_classes` edits equals the
    one built from the new ρ."""
    be = get_backend("cpu")
    rng = np.random.default_rng(5)
    rho = np.arange(200, dtype=np.int64)
    for rep in (3, 50, 120):
        members = rng.choice(np.arange(rep + 1, 200), 15, replace=False)
        rho[members] = rep
    index = class_index(be, rho)
    gone = np.zeros(200, dtype=bool)
    left = np.concatenate([np.flatnonzero(rho == 3)[1:4], np.flatnonzero(rho == 120)[-2:]])
    gone[left] = True
    rho2 = rho.copy()
    rho2[left] = left
    got = shrink_classes(be, index, np.array([3, 120]), gone)
    assert all(np.array_equal(a, b) for a, b in zip(_classes(got),
                                                    _classes(class_index(be, rho2))))


def _hub_facts(rng: random.Random) -> dict[str, list[tuple]]:
    """Three classes whose members share keys from a small pool each (a member holds one
    to three), so that a deleted key may take a class's representative (its first
    member, the least id) away from the rest, or cut the rest in pieces."""
    names = [f"c{c}m{i}" for c in range(3) for i in range(12)] + [f"o{i}" for i in range(6)]
    key = [(f"c{c}m{i}", f"K{c}{rng.randrange(4)}") for c in range(3) for i in range(12)
           for _ in range(rng.randint(1, 3))]
    key += [(f"o{i}", f"ko{i}") for i in range(6)]
    return {"key": sorted(set(key)),
            "attr": [(x, rng.choice("123")) for x in names],
            "knows": sorted({(x, rng.choice(names)) for x in names for _ in range(2)}),
            "same": []}


@pytest.mark.parametrize("seed", range(12))
def test_random_updates_taking_representatives_away(seed: int) -> None:
    """Random deletions of the representatives' keys (and others), with re-insertions:
    the classes renamed after a member, split and exploded all equal Remat≈, with the
    class index and occurrence counts taken afresh."""
    rng = random.Random(seed)
    facts = _hub_facts(rng)
    ups: list[tuple[dict, dict]] = []
    cur = {n: list(v) for n, v in facts.items()}
    gone: list[tuple] = []
    for _ in range(4):
        reps = [x for x in cur["key"] if x[0].endswith("m0") or x[0].endswith("m1")]
        pool = reps + rng.sample(cur["key"], min(3, len(cur["key"])))
        dele = {"key": sorted(set(rng.sample(pool, min(len(pool), rng.randint(1, 3)))))}
        ins: dict[str, list[tuple]] = {}
        if gone and rng.random() < 0.4:
            back = rng.choice(gone)
            if back not in dele["key"]:
                ins = {"key": [back]}
        gone += dele["key"]
        ups.append((ins, dele))
        cur["key"] = [x for x in cur["key"] if x not in dele["key"]] + ins.get("key", [])
    _run(facts, ups)
