"""The OWL 2 RL/RDF rule set shipped with the package (W3C OWL 2 Profiles §4.3, tables 4-9).

Three resources (``.dl`` files beside this module, installed as package data):

* ``owl2rl-core.dl``: declarations (``triple(s, p, o)`` over ``.type Node <: symbol``,
  ``inconsistency(rule, x, y)``) and the rules of tables 4 (constraints only), 5, 6, 7 and 9,
  list-based rules by walking ``rdf:first``/``rdf:rest``;
* ``owl2rl-spelled.dl``: the core plus eq-ref, eq-sym, eq-trans, eq-rep-s/p/o as rules;
* ``owl2rl-eq.dl``: the core plus ``.decl sameAs(x: Node, y: Node) equality`` (equality by
  rewriting), fed from and written back to ``owl:sameAs`` triples.

Rule set names (``--rules NAME``, :func:`rule_set`): ``owl2rl`` is ``owl2rl-compiled``
(:mod:`.compiler`: the rules instantiated with the ontology over one relation per class and
per property, falling back to ``owl2rl-eq`` where that is not exact) where the engine
supports the ``equality`` qualifier (:func:`equality_supported`), otherwise
``owl2rl-spelled``; ``owl2rl-generic`` is ``owl2rl-eq`` (or ``owl2rl-spelled``), the rules
over one triple relation; ``owl2rl-spelled`` and ``owl2rl-eq`` name one variant.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from gpu_engine.ir import ProgramError

HERE = Path(__file__).resolve().parent
RULE_SETS = ("owl2rl", "owl2rl-compiled", "owl2rl-generic", "owl2rl-spelled", "owl2rl-eq")
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
    """The variant a rule set name stands for (``owl2rl`` -> ``owl2rl-compiled`` or
    ``owl2rl-spelled``; ``owl2rl-generic`` -> ``owl2rl-eq`` or ``owl2rl-spelled``)."""
    if name not in RULE_SETS:
        raise ProgramError(f"unknown rule set {name!r} (known: {', '.join(RULE_SETS)})")
    if name in ("owl2rl", "owl2rl-compiled", "owl2rl-generic"):
        if not equality_supported():
            return "owl2rl-spelled"
        return "owl2rl-eq" if name == "owl2rl-generic" else "owl2rl-compiled"
    return name


def is_compiled(name: str) -> bool:
    """Whether ``name`` stands for the compiled rule set (:mod:`.compiler`), which needs the
    RDF data before it has a program."""
    return resolve(name) == "owl2rl-compiled"


def rule_set(name: str = "owl2rl") -> Path:
    """The path of the shipped rule set ``name`` (a ``.dl`` file that includes the core);
    for the compiled set, which has no file, the generic rules it falls back to."""
    variant = resolve(name)
    if variant == "owl2rl-compiled":
        variant = "owl2rl-eq"
    if variant == "owl2rl-eq" and not equality_supported():
        raise ProgramError("rule set owl2rl-eq needs the 'equality' relation qualifier, which "
                           "this engine does not support yet; use owl2rl-spelled")
    return HERE / f"{variant}.dl"
