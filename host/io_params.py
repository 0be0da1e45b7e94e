"""The parameters of ``.input`` / ``.output`` directives, checked once (Soufflé's names).

``IO``, ``filename``, ``delimiter`` (any number of characters; ``\\t``-style escapes),
``headers=true`` (input: the first line is skipped; output: a first line of attribute
names), ``rfc4180=true`` (quoted CSV fields, ``""`` for a quote; the delimiter defaults
to ``,``), ``compress=true`` (gzip; compressed input is also recognised without it) and
``attributeNames=`` (the header line, written as given)
and ``columns="2:0"`` (input: the file column each attribute is read from).
Any other parameter (a misspelt ``filname=``) is ignored, as Soufflé ignores it (its
``semantic/store3`` test relies on that), with a note at the directive's location naming
the closest known parameter; ``dbname``/``format``/``name`` belong to the sqlite and JSON
kinds (``host/sqlite_io.py``, ``host/json_io.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_engine.ir import ProgramError

from .lang.dl_result import Directive

_KNOWN = {"IO", "filename", "delimiter", "headers", "rfc4180", "compress", "attributeNames",
          "columns",
          # other IO kinds (refused elsewhere with their own message) and Soufflé internals
          "dbname", "format", "name", "types", "params", "auxArity", "intermediate",
          "fact-dir", "output-dir"}
_INTERNAL = {"name", "types", "params", "auxArity", "fact-dir", "output-dir"}
_BOOL = {"true": True, "false": False, "1": True, "0": False}


@dataclass(frozen=True)
class IOOptions:
    """How one directive reads or writes text facts."""

    delimiter: str = "\t"
    headers: bool = False
    rfc4180: bool = False
    compress: bool = False
    attribute_names: str | None = None  # output: the header line as written
    # input: the file column of each attribute (``columns="2:0"``: attribute 1 from the
    # third column, attribute 2 from the first); None: the first columns, in order
    columns: tuple[int, ...] | None = None
    header_delimiter: str = "\t"  # output: what joins the attribute names of the header


def unescape(s: str) -> str:
    """The escapes of a parameter value that Soufflé's ``unescape`` (StringUtil.h) reads:
    ``\\"``, ``\\t``, ``\\r`` and ``\\n``, replaced in that order; any other backslash
    stays as written (``delimiter="\\\\"`` is two backslashes)."""
    for esc, ch in (('\\"', '"'), ("\\t", "\t"), ("\\r", "\r"), ("\\n", "\n")):
        s = s.replace(esc, ch)
    return s


def check_params(d: Directive) -> list[str]:
    """Notes (``file:line:col: ...``) for the parameters no IO kind knows: ignored."""
    notes = []
    for key in d.params:
        if key not in _KNOWN:
            close = [k for k in sorted(_KNOWN) if _similar(key, k)]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            known = ", ".join(sorted(_KNOWN - _INTERNAL))
            notes.append(f"{d.loc}: ignored the unknown parameter {key!r} of .{d.kind} "
                         f"{d.relation}{hint}; known: {known}")
    return notes


def io_options(d: Directive) -> IOOptions:
    """The text-format options of a directive (unknown parameters ignored)."""
    flags = {}
    for key in ("headers", "rfc4180", "compress"):
        v = d.params.get(key, "false").strip().lower()
        if v not in _BOOL:
            raise ProgramError(f"parameter {key}={d.params[key]!r} of .{d.kind} {d.relation}: "
                               "expected true or false", d.loc)
        flags[key] = _BOOL[v]
    default = "," if flags["rfc4180"] else "\t"
    delim = unescape(d.params.get("delimiter", default))
    if delim == "":
        raise ProgramError(f"empty delimiter for .{d.kind} {d.relation}", d.loc)
    if flags["rfc4180"] and (len(delim) != 1 or delim in '"\r\n'):
        raise ProgramError(f"rfc4180=true needs a one-character delimiter other than a quote "
                           f"or a line break, got {delim!r} for .{d.kind} {d.relation}", d.loc)
    names = unescape(d.params["attributeNames"]) if "attributeNames" in d.params else None
    columns = None
    if "columns" in d.params:
        try:
            columns = tuple(int(c) for c in d.params["columns"].split(":"))
        except ValueError:
            columns = ()
        if not columns or min(columns) < 0 or len(set(columns)) != len(columns):
            raise ProgramError(f"parameter columns={d.params['columns']!r} of .{d.kind} "
                               f"{d.relation}: expected distinct column numbers separated by "
                               "':' (columns=\"2:0\")", d.loc)
    # the header joins the attribute names by the delimiter parameter, a tab without one
    # (Soufflé's IOAttributes: rfc4180's default comma is not a parameter)
    joiner = unescape(d.params["delimiter"]) if "delimiter" in d.params else "\t"
    return IOOptions(delim, flags["headers"], flags["rfc4180"], flags["compress"], names,
                     columns, joiner)


def _similar(a: str, b: str) -> bool:
    """Edit distance at most 2 (for the hint only)."""
    a, b = a.lower(), b.lower()
    if abs(len(a) - len(b)) > 2:
        return False
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1] <= 2


__all__ = ["IOOptions", "check_params", "io_options", "unescape"]
