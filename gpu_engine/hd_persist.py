"""Kept bags (gpu_engine.hd_bags) in and out of a saved materialisation (paper 003's
inst_p^I, so that a reopened store does not rebuild them).

:func:`export_bags` gives, for every node of every decomposed rule that keeps bags, its
bag over the materialisation being saved (the state's relations ``I``), with counts, as
host columns: a kept bag brought to ``I`` by the versions' difference, as an update
would, or computed over ``I`` when the kept ones are too far (hd_bags.DIFF_SHARE).  A
node that keeps no bag is not computed for the store: bags are kept where evaluations
read them (by default in updates, not while materialising: hd_bags.keeping), and
measured on LUBM(10) L+C, computing every node's bag at save time added 56 MB (26 %) to
the store and ~0.3 s to the save for no measurable gain in the updates after reopening
(its updates read few bags).  Nodes with a negated atom are left out: their
kept bags are tagged by the negation's version object too, which no later evaluation
asks for again.  :func:`import_bags` puts the saved bags back as kept entries tagged with
the loaded state's relations, the versions an update reads first (an update's ``I`` is
the state's RunSet itself, so the difference is empty and the bag is used as it is).

A saved bag names its rule by the rule's index in ``Engine.rules`` and its decomposition
by the decomposition's JSON: a bag whose decomposition is no longer the rule's (a
re-plan) is not imported.  The store (``host/store.py``) writes the bags as Arrow files
of the version being committed, checksummed and committed with it (one rename), so a
crash leaves the previous version with its own bags.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_engine.kernels.backend import INDEX

from .hd_bags import Entry, NodeBags


@dataclass
class SavedBag:
    """One node's bag over a saved materialisation: ``cols`` in χ(p) order, ``count``."""

    rule: str  # the rule's index in Engine.rules (the key of EngineState.decompositions)
    node: int
    decomposition: str  # its decomposition's JSON (canonical)
    chi: list[str]
    cols: list[np.ndarray]
    count: np.ndarray


def _canonical(dec: Any) -> str:
    return json.dumps(dec, sort_keys=True)


def _plans(engine: Any) -> list[tuple[str, Any]]:
    """(rule key, plan) of every rule the engine's state has decomposed."""
    out = []
    st = engine.state
    for key, dec in sorted(st.decompositions.items()):
        if dec is None:
            continue
        plan = engine.hd.plan(engine.rules[int(key)])
        if plan is not None:
            out.append((key, plan))
    return out


def export_bags(engine: Any) -> list[SavedBag]:
    """The kept bags of the decomposed rules' nodes (without negation) brought to the
    engine's current materialisation, as host arrays."""
    st = engine.current_state()  # no switch back from a host twin when there is nothing
    if st.decompose == "off" or all(d is None for d in st.decompositions.values()):
        return []
    st = engine.state  # the bags live with the engine's own state
    bags: NodeBags = engine.hd.bags()
    ev, be = engine.evaluator, engine.be
    out: list[SavedBag] = []
    for key, plan in _plans(engine):
        sources = [st.store[a.relation] for a in plan.rule_atoms]
        for p in range(len(plan.dec.nodes)):
            if plan.node_negs[p] or not bags.entries.get((plan.key, p)):
                continue
            t = bags.bag(ev, plan, p, sources, {})
            chi = list(plan.dec.chi[p])
            out.append(SavedBag(key, p, _canonical(st.decompositions[key]), chi,
                                [np.asarray(be.to_host(t.cols[v]), np.int64) for v in chi],
                                np.asarray(be.to_host(t.cnt), np.int64)))
    return out


def import_bags(engine: Any, saved: list[SavedBag]) -> int:
    """Install saved bags as kept entries over the engine's current relations; returns
    how many were installed (those of decompositions still chosen)."""
    from .hd_eval import Table

    st = engine.state
    if st.decompose == "off" or not saved:
        return 0
    plans = dict(_plans(engine))
    bags: NodeBags = engine.hd.bags()
    be = engine.be
    n = 0
    for s in saved:
        plan = plans.get(s.rule)
        if (plan is None or _canonical(st.decompositions.get(s.rule)) != s.decomposition
                or s.node >= len(plan.dec.nodes) or plan.node_negs[s.node]
                or list(plan.dec.chi[s.node]) != s.chi):
            continue
        srcs = tuple(st.store[plan.rule_atoms[i].relation] for i in plan.node_atoms[s.node])
        table = Table({v: be.asarray(c, INDEX) for v, c in zip(s.chi, s.cols)},
                      be.asarray(s.count, INDEX))
        bags.entries.setdefault((plan.key, s.node), []).append(Entry(srcs, (), table))
        n += 1
    return n


__all__ = ["SavedBag", "export_bags", "import_bags"]
