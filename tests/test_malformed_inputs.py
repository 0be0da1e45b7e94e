"""The malformed-input campaign (tests/malformed_inputs.py) at a small size: only clear
errors, never a traceback, never a partial write."""

from __future__ import annotations

import pytest
from malformed_inputs import campaign


@pytest.mark.parametrize("seed", [0, 1])
def test_malformed_inputs_small(seed: int) -> None:
    res = campaign(60, seed)
    assert res["failures"] == 0, res["examples"]
