"""Generic walks over the surface syntax tree (any dataclass node of host.lang.dl_syntax).

Written against dataclass fields, so that nodes added later (aggregates, records, ...) are
visited without changes here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, is_dataclass, replace
from typing import Any

from gpu_engine.host.lang.dl_syntax import Named

from gpu_engine.ir import Location

_LEAVES = (Location, Named, type)


def children(node: Any) -> Iterator[Any]:
    """The direct children of a node (tuple items or dataclass fields)."""
    if isinstance(node, (tuple, list)):
        yield from node
    elif is_dataclass(node) and not isinstance(node, _LEAVES):
        for fld in fields(node):
            yield getattr(node, fld.name)


def walk(node: Any) -> Iterator[Any]:
    """Every node under ``node`` (itself included)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(children(n))


def transform(node: Any, f: Callable[[Any], Any]) -> Any:
    """Rebuild ``node`` bottom-up, applying ``f`` to every dataclass node; unchanged
    subtrees are kept as they are."""
    if isinstance(node, tuple):
        items = tuple(transform(x, f) for x in node)
        return node if all(a is b for a, b in zip(items, node, strict=True)) else items
    if isinstance(node, list):
        return [transform(x, f) for x in node]
    if not is_dataclass(node) or isinstance(node, _LEAVES):
        return node
    changes = {}
    for fld in fields(node):
        value = getattr(node, fld.name)
        new = transform(value, f)
        if new is not value:
            changes[fld.name] = new
    return f(replace(node, **changes) if changes else node)
