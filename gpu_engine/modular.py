"""MAT-MOD and DRed^c-MOD (paper 002, Algorithms 2 and 3) over the modules of
:mod:`gpu_engine.modules`.

Only strata with a TC or STC module take these paths; every other stratum keeps the plain
seminaive evaluation and DRed^c of paper 000, so a program without such modules behaves
exactly as before.  In a modular stratum the non-recursive counters are maintained
globally (as in DRed^c) and no recursive counters are kept: the custom modules do not
consider every rule instance (paper 002 §4.2).

Invariant kept for a TC module: X_R holds every R fact with a non-zero non-recursive counter
(such a fact is never overdeleted, so X_R must keep it for its closure to cover the R facts
once the chains that derived it recursively are gone).  Algorithm 3 lines 32 and 37 add
facts that gain a non-recursive derivation to Δ even when they are already in I; we keep
Δ to the facts that are new and add those facts to X_R directly.

Reading of Algorithm 3 line 23: the facts that lost a non-recursive derivation start the
overdeletion only when their non-recursive counter dropped to zero, as in DRed^c (paper
000 Algorithm 2 line 34); the TC module's Del (Algorithm 5) applies the same test.
"""

from __future__ import annotations

from typing import Any

from .modules import ModulePlan, SeminaiveModule, STCModule, TCModule
from .rowset import RowSet, union_rows
from .runs import RunSet
from .stratify import Stratum
from .views import View

Module = SeminaiveModule | TCModule | STCModule


def instantiate(plans: list[ModulePlan], be: Any) -> list[Module]:
    """Fresh modules (empty X_R / C_R) for materialisation from scratch."""
    out: list[Module] = []
    for p in plans:
        if p.kind == "tc":
            out.append(TCModule(p.relation or "", RunSet.empty(be, 2)))
        elif p.kind == "stc":
            out.append(STCModule.empty(be, p.relation or "", be.join_chunk_rows))
        else:
            out.append(SeminaiveModule(p.rules))
    return out


def _minus(delta: dict[str, RowSet], prev: dict[str, RowSet]) -> dict[str, RowSet]:
    """Δ \\ Δ_i (Algorithm 2 line 14, Algorithm 3 lines 28 and 39)."""
    out = {}
    for r, d in delta.items():
        p = prev.get(r)
        d = d.minus(p) if p is not None and len(p) else d
        if len(d):
            out[r] = d
    return out


def _merge(be: Any, arity: dict[str, int], outs: list[dict[str, RowSet]]
           ) -> dict[str, RowSet]:
    parts: dict[str, list[RowSet]] = {}
    for o in outs:
        for r, rows in o.items():
            if len(rows):
                parts.setdefault(r, []).append(rows)
    return {r: union_rows(be, arity[r], p) for r, p in parts.items()}


def _call_add(m: Module, ev: Any, version: Any, delta: dict[str, RowSet],
              arity: dict[str, int]) -> dict[str, RowSet]:
    if isinstance(m, SeminaiveModule):
        return m.add(ev, version, version, delta, arity)
    d = delta.get(m.relation)
    if d is None or not len(d):
        return {}
    return {m.relation: m.add(ev, version(m.relation), d)}


# --- Algorithm 2: MAT-MOD ---------------------------------------------------------------


def mat_mod(engine: Any, s: Stratum, modules: list[Module]) -> int:
    """Lines 11-15 for stratum ``s``: the facts in the engine's store so far (E ∩ O^s and
    the non-recursive consequences, line 10) are closed module by module.  Returns the
    number of rounds."""
    ev, be = engine.evaluator, engine.be
    arity = {n: r.arity for n, r in engine.program.relations.items()}

    def version(name: str) -> View:
        return View.of(engine.store[name])

    delta = {r: engine.store[r].compact() for r in s.relations if len(engine.store[r])}
    prev: list[dict[str, RowSet]] = [{} for _ in modules]
    rounds = 0
    while delta:  # line 11 (line 12: Δ is already in the store)
        rounds += 1
        outs = [_call_add(m, ev, version, _minus(delta, prev[i]), arity)  # line 14
                for i, m in enumerate(modules)]
        prev = outs
        delta = {}
        for r, rows in _merge(be, arity, outs).items():  # line 15
            new = engine.store[r].new_rows(rows)
            if len(new):
                engine.store[r] = engine.store[r].append(new)
                delta[r] = new
    return rounds


def rebuild(engine: Any, s: Stratum, plans: list[ModulePlan]) -> list[Module]:
    """Module state for a materialisation that was loaded or maintained without it:
    X_R = the R facts with a derivation outside the TC module (explicit, or by another
    rule of the program over I), C_R = the components of the R facts."""
    from gpu_engine.kernels import components as CC
    from gpu_engine.kernels.sets import unique_keys

    be, ev, xp = engine.be, engine.evaluator, engine.be.xp
    mods = instantiate(plans, be)
    for m in mods:
        if isinstance(m, TCModule):
            R = m.relation
            parts = [engine.explicit[R].compact()]
            tc_rule = next(p.rules[0] for p in plans if p.relation == R)
            for rule in s.rules:
                if rule.head.relation != R or rule is tc_rule:
                    continue
                from .ir import Atom, Negation

                atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
                neg = {lit.atom.relation: engine.store[lit.atom.relation]
                       for lit in rule.body if isinstance(lit, Negation)}
                outs = ev.evaluate(rule, [engine.store[a.relation] for a in atoms], neg)
                if outs:
                    cols = tuple(xp.concatenate([o.cols[c] for o in outs]) for c in range(2))
                    parts.append(RowSet.from_columns(be, cols, 2))
            m.X = RunSet.of(union_rows(be, 2, parts))
        elif isinstance(m, STCModule):
            rows = engine.store[m.relation].compact()
            if len(rows):
                verts = unique_keys(be, xp.concatenate([rows.cols[0], rows.cols[1]]), overwrite=True)
                a = xp.searchsorted(verts, rows.cols[0])
                b = xp.searchsorted(verts, rows.cols[1])
                m.verts, m.label = verts, CC.connected_components(be, a, b, len(verts))
    return mods


# --- Algorithm 3: DRed^c-MOD ------------------------------------------------------------


def dredc_mod(u: Any, s: Stratum, modules: list[Module]) -> None:
    """OVERDELETE and REDERIVE-INSERT (lines 21-40) for one modular stratum."""
    st, ev, be = u.state, u.ev, u.be

    def zero_nr(r: str, rows: RowSet) -> Any:
        return st.counter(r, rows, False) == 0

    # --- OVERDELETE, lines 22-30
    cand: dict[str, list[RowSet]] = {r: [] for r in s.relations}
    for r in s.relations:  # line 23: E⁻ ∩ O^s
        em = u.e_minus[r]
        if len(em):
            st.bump(r, em, u.ones(em), False, -1)
            cand[r].append(em)
    P, N = u.removed(), u.added()
    for r, (rows, cnt) in u.derive(s.nonrecursive_rules, st.old, st.old, P, N).items():
        st.bump(r, rows, cnt, False, -1)  # line 23: Π_nr[I : D \ A, A \ D], update C_nr
        cand[r].append(rows)
    for m in modules:  # lines 24-25
        if isinstance(m, SeminaiveModule):
            for r, rows in m.diff(ev, st.old, st.old, P, N).items():
                cand[r].append(rows)
    delta: dict[str, RowSet] = {}
    for r in s.relations:
        nd = st.not_deleted(r, u.union(r, cand[r]))
        d = nd.select(zero_nr(r, nd)) if len(nd) else nd
        if len(d):
            delta[r] = d
    prev: list[dict[str, RowSet]] = [{} for _ in modules]
    while delta:  # line 26
        outs = []
        for i, m in enumerate(modules):  # lines 27-28
            d = _minus(delta, prev[i])
            if isinstance(m, SeminaiveModule):
                outs.append(m.delete(ev, st.mid, st.old_plus, d, zero_nr))
            elif m.relation in d:
                Ip = st.mid(m.relation)
                outs.append({m.relation: m.delete(ev, Ip, d[m.relation], zero_nr)})
            else:
                outs.append({})
        for r, d in delta.items():  # line 29
            st.overdelete(r, d)
            u.stats.overdeleted += len(d)
        prev = outs
        delta = {}
        for r, rows in _merge(be, u.arity, outs).items():  # line 30
            rows = st.not_deleted(r, rows)
            if len(rows):
                delta[r] = rows

    # --- REDERIVE-INSERT, lines 31-40
    for m in modules:
        if isinstance(m, TCModule):
            m.restrict(st.removed(m.relation))
    cand = {r: [] for r in s.relations}
    for r in s.relations:  # line 32: E⁺ ∩ O^s
        ep = u.e_plus[r]
        if len(ep):
            st.bump(r, ep, u.ones(ep), False, +1)
            cand[r].append(ep)
    P, N = u.added(), u.removed()
    for r, (rows, cnt) in u.derive(s.nonrecursive_rules, st.new, st.new, P, N).items():
        st.bump(r, rows, cnt, False, +1)  # line 32: Π_nr[(I \ D) ∪ A : A \ D, D \ A]
        cand[r].append(rows)
    for m in modules:  # facts gaining an external derivation join X_R even when they
        if isinstance(m, TCModule) and cand[m.relation]:  # are already in I (see below)
            m.include(u.union(m.relation, cand[m.relation]))
    gone = {r: st.removed(r).compact() for r in s.relations}
    prev = []
    for m in modules:  # lines 33-35
        if isinstance(m, SeminaiveModule):
            red = m.rederive(ev, st.mid, st.new, {r: g for r, g in gone.items() if len(g)})
        else:
            j = m.rederive(ev, gone[m.relation])
            red = {m.relation: j} if len(j) else {}
        prev.append(red)
        for r, rows in red.items():
            cand[r].append(rows)
    # the explicit changes' derivations read the rederived facts too: a module's Add never
    # sees its own rederived facts again (prev), so an instance joining one of them with an
    # inserted fact (e(2,0) with a rederived tr(0,0)) would otherwise be lost
    back = _merge(be, u.arity, prev)

    def new_or_back(name: str) -> View:
        b = back.get(name)
        return st.new(name) if b is None else st.new(name).plus(RunSet.of(b))

    for m in modules:
        if isinstance(m, SeminaiveModule):
            for r, rows in m.diff(ev, new_or_back, st.new, P, N).items():
                cand[r].append(rows)
    delta = {}
    for r in s.relations:
        d = st.not_in_new(r, u.union(r, cand[r]))
        if len(d):
            delta[r] = d
    while delta:  # line 36
        for r, d in delta.items():  # line 37
            st.add(r, d)
            u.stats.added += len(d)
        outs = [_call_add(m, ev, st.new, _minus(delta, prev[i]), u.arity)  # lines 38-39
                for i, m in enumerate(modules)]
        prev = outs
        delta = {}
        for r, rows in _merge(be, u.arity, outs).items():  # line 40
            rows = st.not_in_new(r, rows)
            if len(rows):
                delta[r] = rows
    u.stats.derivations += sum(m.derivations for m in modules)
