"""Translate VLog ``.dlog`` LUBM rule files into Soufflé-syntax Datalog for gpu-engine.

The VLog files (``LUBM_L.dlog``, ``LUBM_LE.dlog``, ``LUBM_U.dlog``) hold one rule per line::

    RP0(A) :- TE(A,rdf:type,<http://swat.cse.lehigh.edu/onto/univ-bench.owl#University>)
    RP16(X) :- RP2(X),RP20(X,X1),RP34(X1)
    RP3(X,<http://swat.cse.lehigh.edu/onto/univ-bench.owl#NI6>) :- RP21(X)

Identifiers starting with an upper-case letter in argument position are variables;
``prefix:local`` names are expanded with the known prefixes (``rdf:type`` ...) and every
IRI becomes a quoted symbol that keeps its angle brackets (``"<http://...#type>"``), the
form the N-Triples reader and the expected model files use. ``TE(s, p, o)`` is the triple
relation (EDB); every other predicate is declared with ``symbol`` attributes and output.

Usage::

    python -m benchmarks.lubm_rules RULES.dlog [-o OUT.dl] [--input]
    python -m benchmarks.lubm_rules --examples   # regenerate examples/lubm/*.dl
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_LUBM = REPO_ROOT.parent / "shared" / "bench-data" / "lubm"
RULES_DIR = SHARED_LUBM / "rules" / "vlog-aaai2016"
EXAMPLES_DIR = REPO_ROOT / "examples" / "lubm"
RULE_SETS = ("LUBM_L", "LUBM_LE", "LUBM_U")
# The example files carry `.input TE` so that `gpu-engine run X.dl -F DIR` (and `souffle -F`)
# read DIR/TE.facts; the Python API ignores it and takes facts from `add_facts`.
EXAMPLES_WITH_INPUT = True

UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
PREFIXES: dict[str, str] = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "ub": UB,
}
RDF_TYPE = f"<{PREFIXES['rdf']}type>"
EDB = "TE"

_ATOM_RE = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(((?:<[^>]*>|"(?:[^"\\]|\\.)*"|[^()<>"])*)\)\s*')
_TERM_RE = re.compile(r'<[^>]*>|"(?:[^"\\]|\\.)*"|[^,\s]+')
_PREFIX_DECL_RE = re.compile(r"^@prefix\s+([A-Za-z][\w-]*)?:\s*<([^>]*)>\s*\.?\s*$")
_VAR_RE = re.compile(r"^[A-Z][A-Za-z0-9_]*$")
_PNAME_RE = re.compile(r"^([A-Za-z][\w-]*)?:([^\s,()]*)$")
_NUMBER_RE = re.compile(r"^-?[0-9]+$")


@dataclass(frozen=True)
class Term:
    """A rule argument: a variable name or a constant (IRI with brackets, or literal)."""

    text: str
    is_var: bool

    def souffle(self) -> str:
        """The term in Soufflé syntax (constants become quoted symbols)."""
        if self.is_var:
            return self.text
        escaped = self.text.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'


@dataclass(frozen=True)
class Atom:
    """A predicate applied to terms."""

    pred: str
    args: tuple[Term, ...]

    def souffle(self) -> str:
        """The atom in Soufflé syntax."""
        return f"{self.pred}({', '.join(a.souffle() for a in self.args)})"


@dataclass(frozen=True)
class Rule:
    """``head :- body`` with the 1-based line of the source file."""

    head: Atom
    body: tuple[Atom, ...]
    line: int

    def souffle(self) -> str:
        """The rule in Soufflé syntax."""
        if not self.body:
            return f"{self.head.souffle()}."
        return f"{self.head.souffle()} :- {', '.join(a.souffle() for a in self.body)}."


@dataclass
class Program:
    """A parsed rule file: rules, predicate arities, and the IRI each EDB-mapped predicate reads."""

    name: str
    rules: list[Rule] = field(default_factory=list)
    arity: dict[str, int] = field(default_factory=dict)
    loaded_from: dict[str, str] = field(default_factory=dict)

    @property
    def idb_predicates(self) -> list[str]:
        """Every predicate but ``TE``, in numeric order (``RP0``, ``RP1``, ...)."""
        return sorted((p for p in self.arity if p != EDB), key=_pred_key)


def _pred_key(name: str) -> tuple[str, int]:
    m = re.match(r"^(.*?)(\d+)$", name)
    return (m.group(1), int(m.group(2))) if m else (name, -1)


def _parse_term(text: str, prefixes: dict[str, str], where: str) -> Term:
    if text.startswith("<") and text.endswith(">"):
        return Term(text, False)
    if text.startswith('"'):
        return Term(text, False)
    if _VAR_RE.match(text):
        return Term(text, True)
    if _NUMBER_RE.match(text):
        return Term(text, False)
    m = _PNAME_RE.match(text)
    if m:
        prefix = m.group(1) or ""
        if prefix not in prefixes:
            raise ValueError(f"{where}: unknown prefix {prefix!r} in {text!r}")
        return Term(f"<{prefixes[prefix]}{m.group(2)}>", False)
    raise ValueError(f"{where}: cannot read term {text!r}")


def _parse_atoms(text: str, prefixes: dict[str, str], where: str) -> list[Atom]:
    atoms: list[Atom] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _ATOM_RE.match(text, pos)
        if not m:
            raise ValueError(f"{where}: cannot read atom at {text[pos:]!r}")
        args = tuple(_parse_term(t, prefixes, where) for t in _TERM_RE.findall(m.group(2)))
        atoms.append(Atom(m.group(1), args))
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                raise ValueError(f"{where}: expected ',' between atoms at {text[pos:]!r}")
            pos += 1
    return atoms


def parse_dlog(text: str, name: str = "<dlog>") -> Program:
    """Parse VLog ``.dlog`` rules; raise ``ValueError`` (with line) on bad syntax or arity."""
    prog = Program(name)
    prefixes = dict(PREFIXES)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        where = f"{name}:{lineno}"
        if not line or line.startswith(("%", "#", "//")):
            continue
        pm = _PREFIX_DECL_RE.match(line)
        if pm:
            prefixes[pm.group(1) or ""] = pm.group(2)
            continue
        if line.endswith("."):
            line = line[:-1].rstrip()
        if ":-" in line:
            head_text, body_text = line.split(":-", 1)
        else:
            head_text, body_text = line, ""
        heads = _parse_atoms(head_text, prefixes, where)
        if len(heads) != 1:
            raise ValueError(f"{where}: expected one head atom, got {len(heads)}")
        body = _parse_atoms(body_text, prefixes, where) if body_text.strip() else []
        head = heads[0]
        if head.pred == EDB:
            raise ValueError(f"{where}: {EDB} is the triple relation and cannot be a rule head")
        body_vars = {t.text for a in body for t in a.args if t.is_var}
        unsafe = [t.text for t in head.args if t.is_var and t.text not in body_vars]
        if unsafe:
            raise ValueError(f"{where}: head variable(s) {unsafe} not bound in the body")
        for atom in (head, *body):
            known = prog.arity.setdefault(atom.pred, len(atom.args))
            if known != len(atom.args):
                raise ValueError(
                    f"{where}: {atom.pred} used with arity {len(atom.args)}, earlier {known}"
                )
        if len(body) == 1 and body[0].pred == EDB and len(body[0].args) == 3:
            p, o = body[0].args[1], body[0].args[2]
            if p.text == RDF_TYPE and not o.is_var:
                prog.loaded_from.setdefault(head.pred, o.text)
            elif not p.is_var:
                prog.loaded_from.setdefault(head.pred, p.text)
        prog.rules.append(Rule(head, tuple(body), lineno))
    if prog.arity.get(EDB, 3) != 3:
        raise ValueError(f"{name}: {EDB} must have arity 3")
    return prog


def to_souffle(prog: Program, with_input: bool = False, source: str | None = None) -> str:
    """Render a parsed program as Soufflé text: declarations, rules, outputs."""
    out: list[str] = []
    out.append(f"// {prog.name}: translated by benchmarks/lubm_rules.py")
    if source:
        out.append(f"// from {source}: LUBM rule sets of the VLog AAAI 2016 evaluation,")
        out.append("// karmaresearch/vlog papers/aaai2016_support/rulesets (Apache-2.0)")
    out.append(f"// {len(prog.rules)} rules, {len(prog.idb_predicates)} IDB predicates")
    out.append("")
    out.append(".decl TE(s:symbol, p:symbol, o:symbol)")
    if with_input:
        out.append(".input TE")
    for pred in prog.idb_predicates:
        n = prog.arity[pred]
        attrs = ", ".join(f"a{i}:symbol" for i in range(n))
        note = f"  // {prog.loaded_from[pred]}" if pred in prog.loaded_from else ""
        out.append(f".decl {pred}({attrs}){note}")
    out.append("")
    out.extend(rule.souffle() for rule in prog.rules)
    out.append("")
    out.extend(f".output {pred}" for pred in prog.idb_predicates)
    out.append("")
    return "\n".join(out)


def translate_file(path: str | Path, with_input: bool = False) -> str:
    """Translate one ``.dlog`` file to Soufflé text."""
    path = Path(path)
    prog = parse_dlog(path.read_text(encoding="utf-8"), name=path.stem)
    src = path.name
    return to_souffle(prog, with_input=with_input, source=src)


def rule_set_path(name: str) -> Path:
    """The shared ``.dlog`` file for a rule-set name such as ``LUBM_L``."""
    return RULES_DIR / f"{name}.dlog"


def program_text(name: str) -> str:
    """Soufflé text of a LUBM rule set: the repo's example file, else a fresh translation."""
    example = EXAMPLES_DIR / f"{name}.dl"
    if example.exists():
        return example.read_text(encoding="utf-8")
    return translate_file(rule_set_path(name), with_input=EXAMPLES_WITH_INPUT)


def write_examples(out_dir: Path = EXAMPLES_DIR) -> list[Path]:
    """Regenerate ``examples/lubm/LUBM_{L,LE,U}.dl`` from the shared rule files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in RULE_SETS:
        target = out_dir / f"{name}.dl"
        text = translate_file(rule_set_path(name), with_input=EXAMPLES_WITH_INPUT)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rules", nargs="*", help=".dlog files to translate")
    ap.add_argument("-o", "--output", help="output file (default: stdout; one input only)")
    ap.add_argument("--input", action="store_true", help="add '.input TE' (for souffle -F)")
    ap.add_argument("--examples", action="store_true", help="regenerate examples/lubm/*.dl")
    args = ap.parse_args(argv)
    if args.examples:
        for p in write_examples():
            print(f"wrote {p}")
        return 0
    if not args.rules:
        ap.error("give .dlog files or --examples")
    if args.output and len(args.rules) != 1:
        ap.error("-o takes one input file")
    for rules in args.rules:
        text = translate_file(rules, with_input=args.input)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
