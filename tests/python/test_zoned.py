"""The zoned and FDP reproductions' shapes, from their quick runs' `claims.json` (the
headlines with a paper value are checked in `test_reproduce.py`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest


def _claims(folder: Path) -> dict[str, bool]:
    data = json.loads((folder / "claims.json").read_text())
    return {c["claim"]: bool(c["reproduced"]) for c in data["claims"]}


@pytest.mark.reproduction("zns")
def test_zns_figure1_shape_and_alfs_on_zones(quick: Callable[[str], Path]) -> None:
    """Figure 1's shape: the block SSD's throughput falls once GC starts, the ZNS SSD's
    does not, 28% OP sustains more than 7%; ZNS does no device GC; ALFS writes the flash
    alike on ZNS and on AFTL."""
    claims = _claims(quick("zns"))
    assert len(claims) >= 7
    failed = [c for c, ok in claims.items() if not ok]
    assert not failed, failed


@pytest.mark.reproduction("fdp")
def test_fdp_placement_shape(quick: Callable[[str], Path]) -> None:
    """Matched placement far below no placement, an adversarial one near no placement, the
    lifetime classifier in between. (The matched WAF's closeness to 1 is the fidelity
    headline of `test_reproduce.py`: 1.18 on the quick device, 1.04 on the full one.)"""
    claims = _claims(quick("fdp"))
    shape = {c: ok for c, ok in claims.items() if "about 1" not in c}
    assert len(shape) == 3
    failed = [c for c, ok in shape.items() if not ok]
    assert not failed, failed
