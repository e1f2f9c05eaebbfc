from __future__ import annotations

from pathlib import Path

import pytest

from ftlab._bench import shared_dir


@pytest.fixture(scope="session")
def traces() -> Path:
    """../shared/traces, or a skip when the folder is absent (a user's machine)."""
    shared = shared_dir()
    if shared is None or not (shared / "traces").is_dir():
        pytest.skip("../shared/traces not found (set FTLAB_SHARED to run the real-trace tests)")
    return shared / "traces"
