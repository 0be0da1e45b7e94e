"""The OWL 2 RL/RDF rule set shipped with the package (W3C OWL 2 Profiles §4.3, tables 4-9).

Three resources (``.dl`` files beside this module, installed as package data):

* ``owl2rl-core.dl``: declarations (``triple(s, p, o)`` over ``.type Node <: symbol``,
  ``inconsistency(rule, x, y)``) and the rules of tables 4 (constraints only), 5, 6, 7 and 9,
  list-based rules by walking ``rdf:first``/``rdf:rest``;
* ``owl2rl-spelled.dl``: the core plus eq-ref, eq-sym, eq-trans, eq-rep-s/p/o as rules;
* ``owl2rl-eq.dl``: the core plus ``.decl sameAs(x: Node, y: Node) equality`` (equality by
  rewriting), fed from and written back to ``owl:sameAs`` triples.

Rule set names (``--rules NAME``, :func:`rule_set`): ``owl2rl`` is ``owl2rl-eq`` where the
engine supports the ``equality`` qualifier (:func:`equality_supported`), otherwise
``owl2rl-spelled``; ``owl2rl-spelled`` and ``owl2rl-eq`` name one variant.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from gpu_engine.ir import ProgramError

HERE = Path(__file__).resolve().parent
RULE_SETS = ("owl2rl", "owl2rl-spelled", "owl2rl-eq")
TRIPLE = "triple"
INCONSISTENCY = "inconsistency"


@lru_cache(maxsize=1)
def equality_supported() -> bool:
    """Whether the front end accepts ``.decl r(x: T, y: T) equality``."""
    from gpu_engine.host.lang.parser import parse_program

    probe = ".type T <: symbol\n.decl same(x: T, y: T) equality\n"
    try:
        parse_program(probe, "<probe>")
    except ProgramError:
        return False
    return True


def resolve(name: str) -> str:
    """The variant a rule set name stands for (``owl2rl`` -> ``owl2rl-eq`` or
    ``owl2rl-spelled``)."""
    if name not in RULE_SETS:
        raise ProgramError(f"unknown rule set {name!r} (known: {', '.join(RULE_SETS)})")
    if name == "owl2rl":
        return "owl2rl-eq" if equality_supported() else "owl2rl-spelled"
    return name


def rule_set(name: str = "owl2rl") -> Path:
    """The path of the shipped rule set ``name`` (a ``.dl`` file that includes the core)."""
    variant = resolve(name)
    if variant == "owl2rl-eq" and not equality_supported():
        raise ProgramError("rule set owl2rl-eq needs the 'equality' relation qualifier, which "
                           "this engine does not support yet; use owl2rl-spelled")
    return HERE / f"{variant}.dl"
