"""Type inference for one conjunctive clause and its lowering to :mod:`gpu_engine.ir`.

Variables take the base type of the attributes they are direct arguments of (in body
atoms), then of binding equalities, then of the head; numeric literals without a suffix
are polymorphic and take the type their context requires (``number`` by default).
Operands of arithmetic have the operator's result type; conversions are explicit.
Constant subterms and ground comparisons are folded with 32-bit semantics.
"""

from __future__ import annotations

from gpu_engine.host.lang.dl_fold import (
    compare_consts,
    fold_call,
    to_float32,
    word_bits,
    wrap_number,
)
from gpu_engine.host.lang.dl_records import flatten_records
from gpu_engine.host.lang.dl_safety import check_safety, term_vars
from gpu_engine.host.lang.dl_syntax import (
    SAdt,
    SAtom,
    SCall,
    SCast,
    SCmp,
    SField,
    SLiteral,
    SNegAtom,
    SNil,
    SNum,
    SRecord,
    SStr,
    STerm,
    SVar,
    SWild,
)
from gpu_engine.host.lang.dl_types import TypeEnv, column_type, is_record_type

from gpu_engine import ir
from gpu_engine.ir import Call, ColumnType, Const, ProgramError, Var
from gpu_engine.values import int_range

NUMERIC = ("number", "unsigned", "float")
INTEGRAL = ("number", "unsigned")

# operator -> result types it can have (operands have the same type)
_POLY_OPS: dict[str, tuple[str, ...]] = {
    **{op: NUMERIC for op in ("+", "-", "*", "/", "^", "range")},
    **{op: (*NUMERIC, "symbol") for op in ("min", "max")},
    **{op: INTEGRAL for op in ("%", "band", "bor", "bxor", "bshl", "bshr", "bshru", "bnot")},
    **{op: INTEGRAL for op in ("land", "lor", "lxor", "lnot")},
    "neg": ("number", "float"),
}
_ARITY = {"neg": 1, "bnot": 1, "lnot": 1, "min": -1, "max": -1, "range": (2, 3)}
# string constraints: both operands are symbols (pattern or needle, then the text)
_STRING_CONSTRAINTS = ("match", "!match", "contains", "!contains")

# functor -> (argument types, result type); -1 arity: any number (at least one) of args
_FIXED: dict[str, tuple[tuple[str, ...], str]] = {
    "strlen": (("symbol",), "number"),
    "ord": (("symbol",), "number"),
    "substr": (("symbol", "number", "number"), "symbol"),
    "itou": (("number",), "unsigned"),
    "itof": (("number",), "float"),
    "utoi": (("unsigned",), "number"),
    "utof": (("unsigned",), "float"),
    "ftoi": (("float",), "number"),
    "ftou": (("float",), "unsigned"),
}

# overloaded conversion -> (result type, {argument type: IR functor})
_CONVERSIONS: dict[str, tuple[str, dict[str, str]]] = {
    "to_number": ("number", {"symbol": "to_number", "float": "ftoi", "unsigned": "utoi"}),
    "to_unsigned": ("unsigned", {"symbol": "to_unsigned", "number": "itou", "float": "ftou"}),
    "to_float": ("float", {"symbol": "to_float", "number": "itof", "unsigned": "utof"}),
    "to_string": ("symbol", {"number": "to_string", "unsigned": "to_string", "float": "ftos"}),
}

_FOLDABLE = (set(_POLY_OPS) - {"range"}) | {"itou", "itof", "utoi", "utof", "ftoi", "ftou"}
_CASTS = {("number", "unsigned"): "itou", ("unsigned", "number"): "utoi"}
_NUMERIC = {"number", "unsigned", "float"}


def _argument_ctx(relation: str, i: int) -> str:
    return f"argument {i + 1} of '{relation}'"


class ClauseTyper:
    """Types and lowers one clause ``head :- body`` (``body`` conjunctive, maybe empty)."""

    def __init__(
        self,
        head: SAtom,
        body: list[SLiteral],
        relations: dict[str, ir.Relation],
        types: TypeEnv,
        attr_types: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.head = head
        self.body = flatten_records(body, types)
        self.relations = relations
        self.types = types
        self.attr_types = attr_types or {}
        self.vtypes: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self._fresh = 0
        self._range_ok = False  # lowering the right side of `x = range(...)`

    # ---- entry point ------------------------------------------------------------------

    def lower(self) -> tuple[ir.Atom, list[ir.Literal_]] | None:
        """The lowered head and body; ``None`` when a ground comparison is false."""
        for atom in self._atoms():
            self._check_atom(atom)
        check_safety(self.head, self.body)
        self._infer_variable_types()
        self._name_variables()
        head = self._lower_atom(self.head)
        body: list[ir.Literal_] = []
        for lit in self.body:
            if isinstance(lit, SAtom):
                body.append(self._lower_atom(lit, range_ok=True))
            elif isinstance(lit, SNegAtom):
                body.append(ir.Negation(self._lower_atom(lit.atom), lit.loc))
            else:
                cmp = self._lower_compare(lit)
                if cmp is False:
                    return None
                if cmp is not True:
                    body.append(cmp)
        return head, body

    # ---- declarations and arity -------------------------------------------------------

    def _atoms(self) -> list[SAtom]:
        out = [self.head]
        for lit in self.body:
            if isinstance(lit, SAtom):
                out.append(lit)
            elif isinstance(lit, SNegAtom):
                out.append(lit.atom)
        return out

    def _check_atom(self, atom: SAtom) -> None:
        rel = self.relations.get(atom.relation)
        if rel is None:
            raise ProgramError(f"undeclared relation '{atom.relation}'", atom.loc)
        if len(atom.args) != rel.arity:
            raise ProgramError(
                f"arity mismatch: relation '{atom.relation}' has arity {rel.arity} "
                f"but is used with {len(atom.args)} argument(s)",
                atom.loc,
            )

    def _rel_types(self, name: str) -> tuple[str, ...]:
        """Front-end attribute types (record and ADT types included)."""
        return self.attr_types.get(name) or self.relations[name].types

    # ---- variable types ---------------------------------------------------------------

    def _infer_variable_types(self) -> None:
        origin: dict[str, str] = {}
        for lit in self.body:
            atom = lit.atom if isinstance(lit, SNegAtom) else lit
            if not isinstance(atom, SAtom):
                continue
            attr_types = self._rel_types(atom.relation)
            for i, arg in enumerate(atom.args):
                if not isinstance(arg, SVar):
                    continue
                t, ctx = attr_types[i], _argument_ctx(atom.relation, i)
                known = self.vtypes.get(arg.name)
                if known is None:
                    self.vtypes[arg.name], origin[arg.name] = t, ctx
                elif known != t:
                    raise ProgramError(
                        f"type mismatch: variable '{arg.name}' is {known} ({origin[arg.name]}) "
                        f"but {ctx} is {t}",
                        arg.loc,
                    )
        self._propagate_equalities()
        head_types = self._rel_types(self.head.relation)
        for i, arg in enumerate(self.head.args):
            if isinstance(arg, SVar) and arg.name not in self.vtypes:
                self.vtypes[arg.name] = head_types[i]
        self._propagate_equalities()
        for lit in self.body:  # whatever is left is bound to polymorphic literals only
            if isinstance(lit, SCmp):
                for v in (*term_vars(lit.left), *term_vars(lit.right)):
                    if v.name not in self.vtypes:
                        self.vtypes[v.name] = "number"
                        self._propagate_equalities()

    def _propagate_equalities(self) -> None:
        equalities = [c for c in self.body if isinstance(c, SCmp) and c.op == "="]
        changed = True
        while changed:
            changed = False
            for c in equalities:
                for side, other in ((c.left, c.right), (c.right, c.left)):
                    if isinstance(side, SVar) and side.name not in self.vtypes:
                        t = self.infer(other)
                        if t is not None:
                            self.vtypes[side.name] = t
                            changed = True

    def _name_variables(self) -> None:
        """IR names: a user variable starting with '_' would read as anonymous, so it is
        renamed (``_x`` -> ``v_x``, extended with more ``v`` until it is unique)."""
        taken = set(self.vtypes)
        for name in self.vtypes:
            new = name
            if name.startswith("_"):
                new = "v" + name
                while new in taken:
                    new = "v" + new
                taken.add(new)
            self.names[name] = new

    def _fresh_var(self) -> Var:
        v = Var(f"_{self._fresh}")
        self._fresh += 1
        return v

    # ---- inference --------------------------------------------------------------------

    def infer(self, t: STerm) -> str | None:
        """The type of a term, or ``None`` when only polymorphic literals decide it."""
        if isinstance(t, SVar):
            return self.vtypes.get(t.name)
        if isinstance(t, SNum):
            return {"int": None, "uint": "unsigned", "float": "float"}[t.kind]
        if isinstance(t, SStr):
            return "symbol"
        if isinstance(t, SCast):
            return self.types.base_of(t.type_name, t.type_loc)
        if isinstance(t, SAdt):
            return self.types.branch(t.branch, t.loc)[0]
        if isinstance(t, SField):
            return self._field_type(t)
        if isinstance(t, SCall):
            if t.op in _POLY_OPS:
                for a in t.args:
                    at = self.infer(a)
                    if at is not None:
                        return at
                return None
            if t.op == "cat":
                return "symbol"
            if t.op == "autoinc":
                return "number"
            if t.op == "recursive_iteration_cnt":
                return "unsigned"
            if t.op in _FIXED:
                return _FIXED[t.op][1]
            if t.op in _CONVERSIONS:
                return _CONVERSIONS[t.op][0]
            if t.op.startswith("@") and t.op[1:] in self.types.functors:
                return self.types.functors[t.op[1:]].result
        return None

    def _field_type(self, t: SField) -> str | None:
        if t.raw:
            return "number"
        if t.branch:
            return self.types.branch(t.branch, t.loc)[2][t.index - 1]
        rt = self.infer(t.rec)
        if rt is None:
            return None
        if not rt.startswith("record "):
            raise ProgramError(f"type mismatch: a record pattern is matched against {rt}", t.loc)
        fields = self.types.record_fields(rt)
        return fields[t.index] if t.index < len(fields) else None

    def _lower_record(self, t: SRecord | SAdt | SNil | SField, expected: str,
                      ctx: str) -> ir.Term:
        """Record constructors (``pack``), ``nil`` and pattern fields (``field``)."""
        if isinstance(t, SNil):
            if not expected.startswith("record "):
                raise ProgramError(f"type mismatch: nil but {ctx} is {expected}", t.loc)
            return Const(0, "number")
        if isinstance(t, SField):
            ft = self._field_type(t)
            rt = self.infer(t.rec)
            if ft is None or rt is None:
                raise ProgramError("record pattern of unknown type", t.loc)
            if ft != expected:
                raise ProgramError(f"type mismatch: record field is {ft} but {ctx} is {expected}",
                                   t.loc)
            rec = self.lower_term(t.rec, rt, "a record")
            return Call("field", (rec, Const(t.index, "number")), column_type(ft))
        if isinstance(t, SAdt):
            adt, k, fields = self.types.branch(t.branch, t.loc)
            if adt != expected:
                raise ProgramError(
                    f"type mismatch: ${t.branch} is {adt} but {ctx} is {expected}", t.loc)
            prefix: tuple[ir.Term, ...] = (Const(k, "number"),)
            what = f"branch ${t.branch}"
        else:
            if not expected.startswith("record "):
                raise ProgramError(f"type mismatch: a record but {ctx} is {expected}", t.loc)
            fields = self.types.record_fields(expected)
            prefix, what = (), expected
        if len(t.args) != len(fields):
            raise ProgramError(
                f"{what} has {len(fields)} field(s), {len(t.args)} given", t.loc)
        args = tuple(self.lower_term(a, ft, f"field {i + 1} of {what}")
                     for i, (a, ft) in enumerate(zip(t.args, fields, strict=True)))
        return Call("pack", (*prefix, *args), "number")

    # ---- lowering ---------------------------------------------------------------------

    def _lower_atom(self, atom: SAtom, range_ok: bool = False) -> ir.Atom:
        attr_types = self._rel_types(atom.relation)
        args = []
        for i, a in enumerate(atom.args):
            if isinstance(a, SWild):
                args.append(self._fresh_var())
                continue
            self._range_ok = range_ok and _is_range(a)
            args.append(self.lower_term(a, attr_types[i], _argument_ctx(atom.relation, i)))
        return ir.Atom(atom.relation, tuple(args), atom.loc)

    def _lower_compare(self, c: SCmp) -> ir.Compare | bool:
        if c.op in _STRING_CONSTRAINTS:
            left = self.lower_term(c.left, "symbol", f"the first argument of '{c.op}'")
            right = self.lower_term(c.right, "symbol", f"the second argument of '{c.op}'")
            return ir.Compare(c.op, left, right, "symbol", c.loc)
        lt, rt = self.infer(c.left), self.infer(c.right)
        if lt is not None and rt is not None and lt != rt:
            raise ProgramError(
                f"type mismatch in comparison: left side is {lt}, right side is {rt}", c.op_loc
            )
        t = lt or rt or "number"
        if is_record_type(t) and c.op not in ("=", "!="):
            raise ProgramError(f"ordering comparison '{c.op}' on {t} is not supported", c.op_loc)
        self._range_ok = c.op == "=" and isinstance(c.right, SVar) and _is_range(c.left)
        left = self.lower_term(c.left, t, f"the left side of '{c.op}'")
        self._range_ok = c.op == "=" and isinstance(c.left, SVar) and _is_range(c.right)
        right = self.lower_term(c.right, t, f"the right side of '{c.op}'")
        if isinstance(left, Const) and isinstance(right, Const):
            return compare_consts(c.op, left, right)
        return ir.Compare(c.op, left, right, column_type(t), c.loc)

    def lower_term(self, t: STerm, expected: str, ctx: str) -> ir.Term:
        """Lower ``t`` where ``ctx`` (for messages) requires a value of type ``expected``."""
        if isinstance(t, SVar):
            actual = self.vtypes[t.name]
            if actual != expected:
                raise ProgramError(
                    f"type mismatch: variable '{t.name}' is {actual} but {ctx} is {expected}", t.loc
                )
            return Var(self.names[t.name])
        if isinstance(t, SNum):
            if is_record_type(expected):
                raise ProgramError(
                    f"type mismatch: numeric constant {t.text} but {ctx} is {expected}", t.loc)
            return _number_const(t, expected, ctx)
        if isinstance(t, SStr):
            if expected != "symbol":
                raise ProgramError(
                    f'type mismatch: symbol constant "{t.value}" but {ctx} is {expected}', t.loc
                )
            return Const(t.value, "symbol")
        if isinstance(t, SCast):
            return self._lower_cast(t, expected, ctx)
        if isinstance(t, SCall):
            return self._lower_call(t, expected, ctx)
        if isinstance(t, (SRecord, SAdt, SNil, SField)):
            return self._lower_record(t, expected, ctx)
        raise ProgramError("'_' is not allowed here", t.loc)

    def _lower_cast(self, t: SCast, expected: str, ctx: str) -> ir.Term:
        target = self.types.base_of(t.type_name, t.type_loc)
        if target != expected:
            raise ProgramError(
                f"type mismatch: as(..., {t.type_name}) is {target} but {ctx} is {expected}", t.loc
            )
        source = self.infer(t.arg)
        if source is None or source == target:
            return self.lower_term(t.arg, target, f"the argument of as(..., {t.type_name})")
        op = _CASTS.get((source, target))
        if op is None and {source, target} <= _NUMERIC and "float" in (source, target):
            op = "bits"  # Soufflé drops the cast: the same bits read as the other type
        if op is None:
            raise ProgramError(
                f"as() from {source} to {target} is not supported (it would reinterpret the "
                f"bits); use a conversion functor such as to_float or to_number",
                t.loc,
            )
        inner = self.lower_term(t.arg, source, f"the argument of as(..., {t.type_name})")
        return _call(op, (inner,), target)

    def _lower_call(self, t: SCall, expected: str, ctx: str) -> ir.Term:
        op = t.op
        range_ok, self._range_ok = self._range_ok, False
        if op == "range" and not range_ok:
            raise ProgramError(
                "'range' is only supported as a binding 'x = range(...)' or as an argument "
                "of a positive body atom",
                t.op_loc,
            )
        if op == "autoinc":
            _check_arity(t, 0)
            self._expect_result(t, "number", expected, ctx)
            return Call("autoinc", (), "number")
        if op == "recursive_iteration_cnt":  # the seminaive iteration (gpu_engine.iteration)
            self._expect_result(t, "unsigned", expected, ctx)
            return Call("iteration", (), "unsigned")
        if op == "+" and expected == "symbol" and not any(  # Soufflé 2.4: '+' concatenates
                isinstance(a, SNum) or self.infer(a) not in (None, "symbol") for a in t.args):
            args = tuple(self.lower_term(a, "symbol", "an operand of '+'") for a in t.args)
            return Call("cat", args, "symbol")
        if op in _POLY_OPS:
            allowed = _POLY_OPS[op]
            if expected not in allowed:
                raise ProgramError(
                    f"type mismatch: '{op}' computes {' or '.join(allowed)} values "
                    f"but {ctx} is {expected}",
                    t.op_loc,
                )
            if op in ("min", "max") and expected == "symbol" and len(t.args) == 1:
                return self.lower_term(t.args[0], expected, f"an operand of '{op}'")
            _check_arity(t, _ARITY.get(op, 2))
            args = tuple(self.lower_term(a, expected, f"an operand of '{op}'") for a in t.args)
            if op == "lxor":  # x lxor y == bxor(lnot(lnot x), lnot(lnot y))
                a, b = (_call("lnot", (_call("lnot", (x,), expected),), expected) for x in args)
                return _call("bxor", (a, b), expected)
            return _call(op, args, expected)
        if op == "cat":
            _check_arity(t, -1)
            self._expect_result(t, "symbol", expected, ctx)
            args = tuple(self.lower_term(a, "symbol", "an argument of 'cat'") for a in t.args)
            return Call("cat", args, "symbol")
        if op == "ord" and len(t.args) == 1 and is_record_type(self.infer(t.args[0])):
            self._expect_result(t, "number", expected, ctx)  # ord of a record: its id
            arg = self.lower_term(t.args[0], self.infer(t.args[0]) or "", "the argument of 'ord'")
            return Call("ord", (arg,), "number")
        if op in _FIXED:
            arg_types, result = _FIXED[op]
            _check_arity(t, len(arg_types))
            self._expect_result(t, result, expected, ctx)
            args = tuple(
                self.lower_term(a, at, f"argument {i + 1} of '{op}'")
                for i, (a, at) in enumerate(zip(t.args, arg_types, strict=True))
            )
            return _call(op, args, result)
        if op in _CONVERSIONS:
            result, by_source = _CONVERSIONS[op]
            _check_arity(t, 1)
            self._expect_result(t, result, expected, ctx)
            source = self.infer(t.args[0]) or "number"
            arg = self.lower_term(t.args[0], source, f"the argument of '{op}'")
            if source == result:
                return arg
            return _call(by_source[source], (arg,), result)
        if op.startswith("@"):
            return self._lower_user_functor(t, expected, ctx)
        raise ProgramError(f"unknown functor '{op}'", t.op_loc)

    def _lower_user_functor(self, t: SCall, expected: str, ctx: str) -> ir.Term:
        """``@name(args)``: typed by its ``.functor`` declaration (never folded: the
        library computes it)."""
        decl = self.types.functors.get(t.op[1:])
        if decl is None:
            raise ProgramError(f"functor '{t.op[1:]}' is not declared (.functor "
                               f"{t.op[1:]}(...): type)", t.op_loc)
        _check_arity(t, len(decl.params))
        self._expect_result(t, decl.result, expected, ctx)
        args = tuple(self.lower_term(a, at, f"argument {i + 1} of '{t.op}'")
                     for i, (a, at) in enumerate(zip(t.args, decl.params, strict=True)))
        self.types.called_functors[decl.name] = decl
        return Call(t.op, args, decl.result)

    def _expect_result(self, t: SCall, result: str, expected: str, ctx: str) -> None:
        if result != expected:
            raise ProgramError(
                f"type mismatch: '{t.op}' computes {result} values but {ctx} is {expected}",
                t.op_loc,
            )


def _is_range(t: STerm) -> bool:
    return isinstance(t, SCall) and t.op == "range"


def _check_arity(t: SCall, n: int | tuple[int, ...]) -> None:
    if isinstance(n, tuple):
        if len(t.args) not in n:
            raise ProgramError(
                f"'{t.op}' takes {' or '.join(map(str, n))} arguments, {len(t.args)} given",
                t.op_loc,
            )
    elif n == -1:
        if not t.args:
            raise ProgramError(f"'{t.op}' needs at least one argument", t.op_loc)
    elif len(t.args) != n:
        raise ProgramError(f"'{t.op}' takes {n} argument(s), {len(t.args)} given", t.op_loc)


def _call(op: str, args: tuple[ir.Term, ...], ty: str) -> ir.Term:
    if op in _FOLDABLE and all(isinstance(a, Const) for a in args):
        folded = fold_call(op, args, ty)  # type: ignore[arg-type]
        if folded is not None:
            return folded
    return Call(op, args, ty)  # type: ignore[arg-type]


def _number_const(t: SNum, expected: str, ctx: str) -> Const:
    """A numeric literal as a constant of the type its context requires."""
    v = t.value
    if expected == "symbol":
        raise ProgramError(f"type mismatch: numeric constant {t.text} but {ctx} is symbol", t.loc)
    if t.kind == "float":
        if expected != "float":
            raise ProgramError(
                f"type mismatch: float constant {t.text} but {ctx} is {expected}", t.loc
            )
        return Const(to_float32(float(v)), "float")
    if t.kind == "uint" and expected != "unsigned":
        raise ProgramError(
            f"type mismatch: unsigned constant {t.text} but {ctx} is {expected}", t.loc
        )
    assert isinstance(v, int)
    ty: ColumnType = expected  # type: ignore[assignment]
    if expected == "float":
        return Const(to_float32(float(v)), "float")
    bits = word_bits()
    lo, hi = int_range("number", bits)
    umax = int_range("unsigned", bits)[1]
    if expected == "unsigned":
        if v < 0:
            raise ProgramError(f"negative constant {t.text} where {ctx} is unsigned", t.loc)
        if v > umax:
            raise ProgramError(f"unsigned constant {t.text} is out of the {bits}-bit range",
                               t.loc)
        return Const(v, ty)
    if t.based and lo <= v <= umax:
        return Const(wrap_number(v), ty)
    if not lo <= v <= hi:
        raise ProgramError(f"number constant {t.text} is out of the {bits}-bit range", t.loc)
    return Const(v, ty)
