"""Builds the surface syntax tree (:mod:`host.dl_syntax`) from lark's LALR reductions.

The builder runs inside the parser (lark's internal transformer), so an unsupported
construct is reported as soon as it is reduced, at its own location, before any later
syntax error.
"""

from __future__ import annotations

from typing import Any

from gpu_engine.host.lang.dl_syntax import (
    CompStmt,
    CompType,
    DeclStmt,
    FunctorStmt,
    InitStmt,
    IOStmt,
    Named,
    NoteStmt,
    OverrideStmt,
    RuleStmt,
    SAdt,
    SAgg,
    SAnd,
    SAtom,
    SBool,
    SCall,
    SCast,
    SChoice,
    SCmp,
    SNil,
    SNot,
    SNum,
    SOr,
    SRecord,
    SStr,
    STerm,
    SVar,
    SWild,
    TypeStmt,
)
from lark import Token, Transformer

from gpu_engine.ir import Location, ProgramError

_ESCAPES = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}

_BINOPS = {"PLUS": "+", "MINUS": "-", "STAR": "*", "SLASH": "/", "PERCENT": "%", "CARET": "^"}

# binding strength of the left-associative binary operators (as in Soufflé's grammar)
_PRECEDENCE = {
    "LOR": 1,
    "LXOR": 2,
    "LAND": 3,
    "BOR": 4,
    "BXOR": 5,
    "BAND": 6,
    "BSHL": 7,
    "BSHR": 7,
    "BSHRU": 7,
    "PLUS": 8,
    "MINUS": 8,
    "STAR": 9,
    "SLASH": 9,
    "PERCENT": 9,
}

_UNSUPPORTED_TERMS = {
    "ITERATION_CNT": "recursive_iteration_cnt() (the evaluation's iteration number) is not "
                     "supported",
}

def decode_string(raw: str, loc: Location) -> str:
    """Resolve the escapes of a string literal written with its quotes."""
    body = raw[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            esc = body[i + 1]
            if esc not in _ESCAPES:
                raise ProgramError(f"unknown escape sequence '\\{esc}' in string literal", loc)
            out.append(_ESCAPES[esc])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def parse_number(text: str, loc: Location) -> SNum:
    """Classify and evaluate a numeric literal token."""
    if text.startswith(("0x", "0b")):
        unsigned = text.endswith("u")
        digits = text[2:-1] if unsigned else text[2:]
        value = int(digits, 16 if text[1] == "x" else 2)
        return SNum(value, "uint" if unsigned else "int", text, loc, based=True)
    if text.count(".") == 3:
        parts = [int(p) for p in text.split(".")]
        if any(p > 255 for p in parts):
            raise ProgramError(f"IPv4 address {text} out of range", loc)
        value = (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]
        return SNum(value, "int", text, loc, based=True)
    if "." in text:
        return SNum(float(text), "float", text, loc)
    if text.endswith("u"):
        return SNum(int(text[:-1]), "uint", text, loc)
    return SNum(int(text), "int", text, loc)


class Builder(Transformer):
    """Callbacks named after the grammar rules; ``filename`` is set before each parse."""

    def __init__(self) -> None:
        super().__init__()
        self.filename = "<input>"

    def _loc(self, tok: Token) -> Location:
        # tokens from an included file or a preprocessed text name their own file
        return Location(getattr(tok, "file", self.filename), tok.line or 0, tok.column or 0)

    def _named(self, tok: Token) -> Named:
        return Named(str(tok), self._loc(tok))

    # ---- program and declarations -----------------------------------------------------

    def start(self, children: list[Any]) -> list[Any]:
        out = [c for c in children if c is not None]
        for k, s in enumerate(out):
            if isinstance(s, NoteStmt) and s.plan:
                _check_plan(s, out[k - 1] if k and isinstance(out[k - 1], RuleStmt) else None)
        return out

    def decl(self, children: list[Any]) -> DeclStmt:
        kw, names, attributes, *qualifiers = children
        for before, after in zip(qualifiers, qualifiers[1:]):
            if isinstance(before, SChoice):  # Soufflé's grammar: the choice-domain comes last
                raise ProgramError(f"syntax error: unexpected '{after.name}' after the "
                                   "choice-domain of a declaration", after.loc)
        return DeclStmt(tuple(names), tuple(attributes or ()), tuple(qualifiers), self._loc(kw))

    def ident_list(self, children: list[Token]) -> tuple[Named, ...]:
        return tuple(self._named(t) for t in children)

    def attributes(self, children: list[tuple[Named, Named]]) -> tuple[tuple[Named, Named], ...]:
        return tuple(children)

    def attribute(self, children: list[Any]) -> tuple[Named, Named]:
        return self._named(children[0]), children[1]

    def qualified_name(self, children: list[Token]) -> Named:
        return Named(".".join(str(t) for t in children), self._loc(children[0]))

    def qualified_list(self, children: list[Named]) -> tuple[Named, ...]:
        return tuple(children)

    def qualifier(self, children: list[Token]) -> Named:
        return self._named(children[0])

    def choice_qualifier(self, children: list[Any]) -> SChoice:
        return SChoice(tuple(children[1:]), self._loc(children[0]))

    def choice_key(self, children: list[Token]) -> tuple[Named, ...]:
        return tuple(self._named(t) for t in children)

    def subtype_decl(self, children: list[Token]) -> TypeStmt:
        _, name, _, base = children
        return TypeStmt("subtype", self._named(name), (base,))

    def union_decl(self, children: list[Token]) -> TypeStmt:
        return TypeStmt("union", self._named(children[1]), tuple(children[2:]))

    def record_decl(self, children: list[Any]) -> TypeStmt:
        fields = children[3] or ()
        return TypeStmt("record", self._named(children[1]), (), fields=tuple(fields))

    def adt_decl(self, children: list[Any]) -> TypeStmt:
        return TypeStmt("adt", self._named(children[1]), (), branches=tuple(children[2:]))

    def adt_branch(self, children: list[Any]) -> tuple[Named, tuple[tuple[Named, Named], ...]]:
        return self._named(children[0]), tuple(children[1] or ())

    def legacy_type_decl(self, children: list[Token]) -> TypeStmt:
        kw, name = children
        base = "number" if kw.type == "NUMBER_TYPE" else "symbol"
        return TypeStmt("base", self._named(name), (Named(base, self._loc(kw)),))

    # ---- directives -------------------------------------------------------------------

    def io_kind(self, children: list[Token]) -> Token:
        return children[0]

    def io_directive(self, children: list[Any]) -> IOStmt:
        kind, names, params = children
        return IOStmt(str(kind)[1:], tuple(names), dict(params or {}))

    def io_params(self, children: list[Any]) -> dict[str, str]:
        return dict(c for c in children if c is not None)

    def key_value(self, children: list[Token]) -> tuple[str, str]:
        key, value = children
        if value.type == "STRING":
            return str(key), decode_string(str(value), self._loc(value))
        return str(key), str(value)

    def plan(self, children: list[Any]) -> NoteStmt:
        return NoteStmt("ignored .plan (the engine chooses its own join order)",
                        self._loc(children[0]), plan=tuple(children[1:]))

    def plan_item(self, children: list[Any]) -> tuple[int, tuple[int, ...], Location]:
        version, *order = children
        return int(version), tuple(int(o) for o in order if o is not None), self._loc(version)

    def pragma(self, children: list[Any]) -> NoteStmt:
        kw, *args = children
        text = " ".join(str(a) for a in args if a is not None)
        key, value = (str(a)[1:-1] if a is not None else "" for a in (args + [None, None])[:2])
        return NoteStmt(f"ignored .pragma {text}", self._loc(kw), (key, value))

    # ---- components -------------------------------------------------------------------

    def component(self, children: list[Any]) -> CompStmt:
        kw, head, *rest = children
        bases = tuple(c for c in rest if isinstance(c, CompType))
        body = tuple(c for c in rest if c is not None and not isinstance(c, CompType))
        return CompStmt(head, bases, body, self._loc(kw))

    def comp_type(self, children: list[Any]) -> CompType:
        name, *args = children
        return CompType(self._named(name), tuple(a for a in args if a is not None))

    def comp_init(self, children: list[Any]) -> InitStmt:
        kw, name, comp = children
        return InitStmt(self._named(name), comp, self._loc(kw))

    def comp_override(self, children: list[Token]) -> OverrideStmt:
        kw, name = children
        return OverrideStmt(self._named(name), self._loc(kw))

    def unsupported_decl(self, children: list[Any]) -> DeclStmt:
        """``.decl D = debug_delta(R)`` (Soufflé's per-iteration deltas of R)."""
        kw, name, kind, source = children
        if str(kind) != "debug_delta":
            raise ProgramError(f"'.decl {name} = {kind}(...)': unknown relation kind "
                               f"'{kind}' (Soufflé knows debug_delta)", self._loc(kind))
        return DeclStmt((self._named(name),), (), (), self._loc(kw), debug_delta=source)

    def functor_decl(self, children: list[Any]) -> FunctorStmt:
        kw, name, *params, result, stateful = children
        return FunctorStmt(self._named(name), tuple(p for p in params if p is not None),
                           result, stateful is not None, self._loc(kw))

    def functor_param(self, children: list[Any]) -> Named:
        return children[0]

    def named_functor_param(self, children: list[Any]) -> Named:
        return children[1]  # the parameter's name is documentation only

    # ---- clauses ----------------------------------------------------------------------

    def fact(self, children: list[SAtom]) -> RuleStmt:
        return RuleStmt((children[0],), None, children[0].loc)

    def rule(self, children: list[Any]) -> RuleStmt:
        heads = tuple(c for c in children[:-2])
        return RuleStmt(heads, children[-1], heads[0].loc)

    def subsumptive_rule(self, children: list[Any]) -> RuleStmt:
        dominated, le, dominating, _, body = children
        if dominated.relation != dominating.relation:
            raise ProgramError("a subsumptive rule compares two tuples of one relation, not "
                               f"'{dominated.relation}' and '{dominating.relation}'",
                               self._loc(le))
        return RuleStmt((dominated,), body, dominated.loc, dominating)

    def disjunction(self, children: list[Any]) -> Any:
        return children[0] if len(children) == 1 else SOr(tuple(children))

    def conjunction(self, children: list[Any]) -> Any:
        return children[0] if len(children) == 1 else SAnd(tuple(children))

    def negation(self, children: list[Any]) -> SNot:
        return SNot(children[1], self._loc(children[0]))

    def group(self, children: list[Any]) -> Any:
        return children[1]

    def comparison(self, children: list[Any]) -> SCmp:
        left, op, right = children
        return SCmp(str(op), left, right, left.loc, self._loc(op))

    def cmp_op(self, children: list[Token]) -> Token:
        return children[0]

    def boolean(self, children: list[Token]) -> SBool:
        return SBool(children[0].type == "TRUE", self._loc(children[0]))

    def string_constraint(self, children: list[Any]) -> SCmp:
        tok, left, right = children
        loc = self._loc(tok)
        return SCmp(str(tok), left, right, loc, loc)

    def atom(self, children: list[Any]) -> SAtom:
        name, args = children
        return SAtom(name.name, tuple(args or ()), name.loc)

    def args(self, children: list[STerm]) -> tuple[STerm, ...]:
        return tuple(children)

    # ---- terms ------------------------------------------------------------------------

    def binop(self, children: list[Any]) -> SCall:
        left, op, right = children
        name = _BINOPS.get(op.type, str(op))
        return SCall(name, (left, right), left.loc, self._loc(op))

    def expr(self, children: list[Any]) -> STerm:
        """Group ``operand (op operand)*`` by operator precedence (shunting-yard)."""
        operands: list[STerm] = [children[0]]
        pending: list[Token] = []
        for i in range(1, len(children), 2):
            op, rhs = children[i], children[i + 1]
            while pending and _PRECEDENCE[pending[-1].type] >= _PRECEDENCE[op.type]:
                self._reduce(operands, pending.pop())
            pending.append(op)
            operands.append(rhs)
        while pending:
            self._reduce(operands, pending.pop())
        return operands[0]

    def _reduce(self, operands: list[STerm], op: Token) -> None:
        right = operands.pop()
        left = operands.pop()
        operands.append(self.binop([left, op, right]))

    def prefix(self, children: list[Any]) -> STerm:
        op, arg = children
        loc = self._loc(op)
        if op.type == "MINUS":
            if isinstance(arg, SNum) and not arg.negated:
                return SNum(-arg.value, arg.kind, "-" + arg.text, loc, arg.based, True)
            return SCall("neg", (arg,), loc, loc)
        return SCall(str(op), (arg,), loc, loc)

    def number(self, children: list[Token]) -> SNum:
        return parse_number(str(children[0]), self._loc(children[0]))

    def string(self, children: list[Token]) -> SStr:
        loc = self._loc(children[0])
        return SStr(decode_string(str(children[0]), loc), loc)

    def variable(self, children: list[Token]) -> STerm:
        tok = children[0]
        if tok == "_":
            return SWild(self._loc(tok))
        return SVar(str(tok), self._loc(tok))

    def paren(self, children: list[Any]) -> STerm:
        return children[1]

    def functor_name(self, children: list[Token]) -> Token:
        return children[0]

    def functor(self, children: list[Any]) -> SCall:
        name, args = children
        loc = self._loc(name)
        return SCall(str(name), tuple(args or ()), loc, loc)

    def user_functor(self, children: list[Any]) -> SCall:
        """``@name(args)``: op ``@name`` (typed by its ``.functor`` declaration)."""
        at, name, args = children
        return SCall(f"@{name}", tuple(args or ()), self._loc(at), self._loc(name))

    def cast(self, children: list[Any]) -> SCast:
        kw, arg, type_name = children
        return SCast(arg, str(type_name), self._loc(kw), self._loc(type_name))

    def record(self, children: list[Any]) -> SRecord:
        return SRecord(tuple(children[1] or ()), self._loc(children[0]))

    def adt_term(self, children: list[Any]) -> SAdt:
        args = children[2] if len(children) > 2 else None
        return SAdt(str(children[1]), tuple(args or ()), self._loc(children[0]))

    def nil(self, children: list[Any]) -> SNil:
        return SNil(self._loc(children[0]))

    def unsupported_term(self, children: list[Any]) -> Any:
        tok = children[0]
        if tok.type in ("AUTOINC", "DOLLAR"):  # `$`: Soufflé's deprecated autoinc()
            return SCall("autoinc", (), self._loc(tok), self._loc(tok))
        if tok.type == "ITERATION_CNT":  # the seminaive iteration (gpu_engine.iteration)
            return SCall("recursive_iteration_cnt", (), self._loc(tok), self._loc(tok))
        raise ProgramError(_UNSUPPORTED_TERMS[tok.type], self._loc(tok))

    def aggregator(self, children: list[Token]) -> Token:
        return children[0]

    def paren_aggregator(self, children: list[Token]) -> Token:
        return children[0]

    def paren_aggregate(self, children: list[Any]) -> SAgg:
        """``sum (expr) : body``, ``max(y) : body``: a parenthesised target."""
        tok, _lpar, target, body = children
        if tok.type in ("MIN_AGG", "MAX_AGG"):
            tok = tok.update(value="min" if tok.type == "MIN_AGG" else "max")
        return self.aggregate([tok, target, body])

    def aggregate(self, children: list[Any]) -> SAgg:
        tok = children[0]
        loc = self._loc(tok)
        op = str(tok).lower()
        target = None
        if len(children) == 3:
            target = children[1]
        if op == "count" and target is not None:
            raise ProgramError("'count' takes no target expression", loc)
        if op != "count" and target is None:
            raise ProgramError(f"'{op}' needs a target variable ({op} x : ...)", loc)
        return SAgg(op, target, children[-1], loc)


def _check_plan(note: NoteStmt, rule: RuleStmt | None) -> None:
    """Soufflé's check of a ``.plan`` (ignored here, but an invalid one is an error):
    each order is a permutation of the numbers of the preceding rule's body atoms."""
    atoms = None
    if rule is not None and rule.body is not None and not isinstance(rule.body, SOr):
        items = rule.body.items if isinstance(rule.body, SAnd) else (rule.body,)
        if not any(isinstance(i, SOr) for i in items):
            # a subsumptive rule's dominated and dominating atoms are body atoms too
            atoms = sum(isinstance(i, SAtom) for i in items) + 2 * (rule.dominating is not None)
    for _, order, loc in note.plan:
        n = len(order) if atoms is None else atoms
        if sorted(order) != list(range(1, n + 1)):
            raise ProgramError(f"invalid execution order in .plan: ({', '.join(map(str, order))}) "
                               f"is not an order of the rule's {n} body atom(s)", loc)
