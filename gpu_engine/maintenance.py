"""Incremental maintenance of a materialisation (paper 000): entry point."""

from __future__ import annotations

from typing import Any

from .stats import UpdateStats

ALGORITHMS = ("remat", "remat1c", "remat2c", "dred", "counting", "dredc", "bf", "bfc")


def apply_update(engine: Any, insert: dict[str, Any], delete: dict[str, Any],
                 algorithm: str | None = None) -> UpdateStats:
    raise NotImplementedError("incremental maintenance is being written")
