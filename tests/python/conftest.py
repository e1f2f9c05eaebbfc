from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ftlab import reproduce
from ftlab._bench import shared_dir


@pytest.fixture(scope="session")
def traces() -> Path:
    """../shared/traces, or a skip when the folder is absent (a user's machine)."""
    shared = shared_dir()
    if shared is None or not (shared / "traces").is_dir():
        pytest.skip("../shared/traces not found (set FTLAB_SHARED to run the real-trace tests)")
    return shared / "traces"


@pytest.fixture(scope="session")
def quick_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's `ftlab reproduce all --quick` folder: one subfolder per experiment."""
    return tmp_path_factory.mktemp("reproduce")


@pytest.fixture(scope="session")
def quick(quick_dir: Path) -> Callable[[str], Path]:
    """Runs a reproduction in quick mode once per session (shared by the tests of every
    file that checks it); returns its folder."""
    done: dict[str, Path] = {}

    def run(name: str) -> Path:
        if name not in done:
            folder = quick_dir / name
            reproduce.run(name, folder, quick=True)
            done[name] = folder
        return done[name]

    return run
