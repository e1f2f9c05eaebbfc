"""The type stubs of the Rust extension (python/ftlab/_core.pyi) against the extension itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ftlab import _core


def test_stub_matches_the_extension(tmp_path: Path) -> None:
    """mypy's stubtest: every name the extension exports is in the stub, with parameters
    of the same names, order and kinds, and nothing in the stub is missing at run time."""
    pytest.importorskip("mypy")
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "ftlab._core"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


def test_stub_declares_every_export() -> None:
    """Without mypy: the names of the extension's module, all in the stub's `__all__`."""
    stub = (Path(_core.__file__).parent / "_core.pyi").read_text()
    for name in _core.__all__:
        assert f'"{name}"' in stub, name
