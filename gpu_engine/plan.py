"""Delta variants of a rule: the one place seminaive evaluation enumerates them.

Seminaive evaluation with exact delta variants (docs/ARCHITECTURE.md): for a rule whose
positive atoms over changed relations sit at positions p_1..p_k, variant i reads Δ at
p_i, the old version ``I \\ Δ`` at p_j for j < i and the new version ``I`` at p_j for
j > i, so every rule instance that involves a change is considered exactly once.
Materialisation (``engine``), the multisets Π⟦...⟧ of maintenance (``affected``), the
compiled small-delta path (``small_rounds``) and the Spark backend (which needs set
semantics only: Δ at p_i, ``I`` everywhere else) all take their variants from here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum

from .ir import Atom


class Role(Enum):
    """The version of its relation an atom reads in one variant."""

    OLD = "old"  # I \ Δ
    DELTA = "delta"  # Δ
    NEW = "new"  # I (for a relation that does not change: its only version)


Variant = tuple[int, tuple[Role, ...]]  # (position of the Δ atom, role of every atom)


def delta_variants(atoms: Sequence[Atom], changed: Callable[[str], bool],
                   exact: bool = True) -> list[Variant]:
    """The variants of a rule body's positive ``atoms`` for the relations ``changed``
    says have a Δ; ``exact=False`` gives set-semantics variants (``I`` beside Δ)."""
    rec = [i for i, a in enumerate(atoms) if changed(a.relation)]
    out: list[Variant] = []
    for vi, p in enumerate(rec):
        before = set(rec[:vi]) if exact else set()
        out.append((p, tuple(Role.DELTA if j == p else Role.OLD if j in before else Role.NEW
                             for j in range(len(atoms)))))
    return out


__all__ = ["Role", "Variant", "delta_variants"]
