"""Benchmark programs as Soufflé text, plus what each one reads and outputs."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.lubm_rules import RULE_SETS, program_text

__all__ = [
    "Program",
    "TC_LINEAR",
    "TC_NONLINEAR",
    "SAME_GENERATION",
    "GRAPH_PROGRAMS",
    "lubm_program",
    "EXAMPLE1",
    "sspe_program",
    "RELATED_PLACES",
]


@dataclass(frozen=True)
class Program:
    """A benchmark program: Soufflé text, its EDB relation and the IDB relations it outputs."""

    name: str
    text: str
    edb: str
    outputs: tuple[str, ...]


TC_LINEAR = Program(
    name="tc-linear",
    text="""\
.decl edge(x:number, y:number)
.decl path(x:number, y:number)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
.output path
""",
    edb="edge",
    outputs=("path",),
)

TC_NONLINEAR = Program(
    name="tc-nonlinear",
    text="""\
.decl edge(x:number, y:number)
.decl path(x:number, y:number)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), path(y, z).
.output path
""",
    edb="edge",
    outputs=("path",),
)

SAME_GENERATION = Program(
    name="sg",
    text="""\
.decl edge(x:number, y:number)
.decl sg(x:number, y:number)
sg(x, y) :- edge(p, x), edge(p, y), x != y.
sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
.output sg
""",
    edb="edge",
    outputs=("sg",),
)

GRAPH_PROGRAMS: dict[str, Program] = {p.name: p for p in (TC_LINEAR, TC_NONLINEAR, SAME_GENERATION)}


def lubm_program(rule_set: str) -> Program:
    """LUBM rule set ``LUBM_L``, ``LUBM_LE`` or ``LUBM_U`` (from examples/lubm or translated)."""
    if rule_set not in RULE_SETS:
        raise ValueError(f"unknown LUBM rule set {rule_set!r}; expected one of {RULE_SETS}")
    text = program_text(rule_set)
    outputs = tuple(
        line.split()[1] for line in text.splitlines() if line.startswith(".output ")
    )
    return Program(name=rule_set, text=text, edb="TE", outputs=outputs)


EXAMPLE1 = Program(
    name="example1",
    text="""\
.decl R(x:number, y:number)
.decl S(y1:number, y2:number)
S(y1, y2) :- R(x, y1), R(x, y2).
.output S
""",
    edb="R",
    outputs=("S",),
)
"""Paper 000, rule (4): non-recursive; DRed's one-step rederivation is quadratic on (5)."""


def sspe_program(source: int = 0) -> Program:
    """SSPE (paper 000, rules (6)-(7)): ``D(y, z)``: a path of length ``z`` from ``source``."""
    return Program(
        name="sspe",
        text=f"""\
.decl B(x:number, y:number, z:number)
.decl D(y:number, z:number)
D(y, z) :- B({int(source)}, y, z).
D(y, z) :- D(x, z1), B(x, y, z2), z = z1 + z2.
.output D
""",
        edb="B",
        outputs=("D",),
    )


RELATED_PLACES = Program(
    name="related-places",
    text="""\
.decl link(x:number, y:number)
.decl place(x:number)
.decl related(x:number, y:number)
.decl relatedToPlace(x:number)
.decl standalone(x:number)
related(x, y) :- link(x, y).
related(y, x) :- related(x, y).
related(x, z) :- related(x, y), related(y, z).
relatedToPlace(x) :- related(x, y), place(y), x != y.
standalone(x) :- place(x), !relatedToPlace(x).
.output related
.output relatedToPlace
.output standalone
""",
    edb="link",
    outputs=("related", "relatedToPlace", "standalone"),
)
"""The clique benchmark (``generators.related_places``), after Claros' ``relatedPlaces``:
an STC module for ``related`` (paper 002), a non-recursive join with the unary ``place``
(a second explicit relation, never updated) and a negation in a higher stratum."""
