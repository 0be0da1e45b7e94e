"""What the front end hands to the rest of the host: the IR program plus directives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpu_engine import ir


@dataclass
class Directive:
    """An I/O directive: ``.input``/``.output``/``.printsize`` or the matching qualifier.

    ``params`` holds the ``(key=value, ...)`` parameters with quotes removed.
    """

    kind: Literal["input", "output", "printsize"]
    relation: str
    params: dict[str, str] = field(default_factory=dict)
    loc: ir.Location = field(default_factory=ir.Location, compare=False)


@dataclass
class ParsedProgram:
    """A checked program: IR, I/O directives in source order, and notes on ignored input.

    ``demand_only``: relations the magic-set transformation computes only as far as the
    outputs demand them (their own names do not hold all their facts)."""

    program: ir.Program
    directives: list[Directive] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    demand_only: frozenset[str] = frozenset()
