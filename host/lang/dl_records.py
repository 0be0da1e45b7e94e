"""Record and ADT patterns of one clause, rewritten into field equalities.

A record term in a positive body atom is a pattern: ``p([x, _, [y, z]])`` becomes
``p(r), x = r.0, y = r.2.0, z = r.2.1`` (``r.i`` an :class:`SField`); an ADT pattern
``$A(x)`` also checks the branch tag (``r.0 = k``, ``x = r.1``).  An equality
``t = [a, b]`` is read the same way once ``t`` is bound (deconstruction); when instead
every variable of the record term is bound it stays a construction (``t`` is bound to
the record's id).  Equalities between fields then bind or filter as any equality does.
Patterns that never become either stay as they are, and the safety check reports them.
"""

from __future__ import annotations

from itertools import count

from gpu_engine.host.lang.dl_safety import _wildcards, bound_variables, term_vars
from gpu_engine.host.lang.dl_syntax import (
    SAdt,
    SAtom,
    SCmp,
    SField,
    SLiteral,
    SNum,
    SRecord,
    STerm,
    SVar,
    SWild,
)
from gpu_engine.host.lang.dl_types import TypeEnv

_PATTERNS = (SRecord, SAdt)


def is_pattern(t: STerm) -> bool:
    """Whether ``t`` is a record or ADT term (constructor or pattern)."""
    return isinstance(t, _PATTERNS)


def flatten_records(body: list[SLiteral], types: TypeEnv) -> list[SLiteral]:
    """The body with record/ADT patterns replaced by field equalities (see module doc)."""
    fresh = count()
    out: list[SLiteral] = []
    pending: list[tuple[STerm, STerm, SCmp]] = []  # (pattern, other side, origin)
    for lit in body:
        if isinstance(lit, SAtom) and any(is_pattern(a) for a in lit.args):
            args: list[STerm] = []
            for a in lit.args:
                if is_pattern(a):
                    v = SVar(f"rec~{next(fresh)}", a.loc)
                    pending.append((a, v, SCmp("=", v, a, a.loc, a.loc)))
                    args.append(v)
                else:
                    args.append(a)
            out.append(SAtom(lit.relation, tuple(args), lit.loc))
        elif isinstance(lit, SCmp) and lit.op == "=" and is_pattern(lit.right):
            pending.append((lit.right, lit.left, lit))
        elif isinstance(lit, SCmp) and lit.op == "=" and is_pattern(lit.left):
            pending.append((lit.left, lit.right, lit))
        else:
            out.append(lit)
    changed = True
    while pending and changed:
        changed = False
        bound = bound_variables(out)
        for item in list(pending):
            pat, other, origin = item
            if isinstance(other, SWild):  # _ = [x, y]: holds (x, y must be bound elsewhere)
                pending.remove(item)
                changed = True
                continue
            if is_pattern(other):  # [a, b] = [c, d]: field by field
                pending.remove(item)
                changed = True
                if type(pat) is not type(other) or len(pat.args) != len(other.args) or (
                        isinstance(pat, SAdt) and pat.branch != other.branch):  # type: ignore[union-attr]
                    out.append(origin)  # reported by the type check
                    continue
                for a, b in zip(pat.args, other.args, strict=True):  # type: ignore[union-attr]
                    _equate(a, b, origin, pending, out)
                continue
            if all(v.name in bound for v in term_vars(other)) and not any(_wildcards(other)):
                pending.remove(item)
                changed = True
                _deconstruct(pat, other, origin, pending, out, types)
            elif not any(_wildcards(pat)) and all(v.name in bound for v in term_vars(pat)):
                pending.remove(item)
                changed = True
                out.append(SCmp("=", other, pat, origin.loc, origin.op_loc))
    out.extend(origin for _, _, origin in pending)
    return out


def _equate(a: STerm, b: STerm, origin: SCmp, pending: list, out: list[SLiteral]) -> None:
    if isinstance(a, SWild) or isinstance(b, SWild):
        return
    if is_pattern(a):
        pending.append((a, b, SCmp("=", b, a, origin.loc, origin.op_loc)))
    elif is_pattern(b):
        pending.append((b, a, SCmp("=", a, b, origin.loc, origin.op_loc)))
    else:
        out.append(SCmp("=", a, b, origin.loc, origin.op_loc))


def _deconstruct(pat: STerm, rec: STerm, origin: SCmp, pending: list,
                 out: list[SLiteral], types: TypeEnv) -> None:
    shift, branch = 0, ""
    if isinstance(pat, SAdt):
        _adt, k, _fields = types.branch(pat.branch, pat.loc)
        out.append(SCmp("=", SField(rec, 0, pat.loc, raw=True), SNum(k, "int", str(k), pat.loc),
                        origin.loc, origin.op_loc))
        shift, branch = 1, pat.branch
    args = pat.args  # type: ignore[union-attr]
    if not shift and all(isinstance(a, SWild) for a in args):  # [_, _] must not match nil
        probe = SField(rec, 0, pat.loc, raw=True)
        out.append(SCmp("=", probe, probe, origin.loc, origin.op_loc))
    for i, a in enumerate(args):
        _equate(a, SField(rec, i + shift, a.loc, branch=branch), origin, pending, out)
