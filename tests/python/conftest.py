from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

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
    """The session's `ftlab reproduce all --quick` folder: one subfolder per experiment.
    Under pytest-xdist it is shared by the workers (the parent of each worker's base
    temporary folder), so that each reproduction runs once per test session."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / "reproduce"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def quick(quick_dir: Path) -> Callable[[str], Path]:
    """Runs a reproduction in quick mode once per session (shared by the tests of every
    file, and every xdist worker, that checks it); returns its folder. The first worker
    to ask runs it under a file lock; the others wait for it and read its results."""

    def run(name: str) -> Path:
        folder = quick_dir / name
        done = quick_dir / f"{name}.done"
        with (quick_dir / f"{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                if folder.exists():
                    shutil.rmtree(folder)  # a worker that failed half-way
                reproduce.run(name, folder, quick=True)
                done.touch()
        return folder

    return run


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under xdist (`--dist loadgroup`), the tests that read one quick reproduction run on one
    worker: the first runs it and the rest read it, where otherwise a second worker would sit
    blocked on the first's lock for the minute it takes. A test's reproduction is its `name`
    parameter or its `reproduction` mark; a test already in a group keeps it. (Marked as each
    item is collected: xdist reads the groups in its own `pytest_collection_modifyitems`.)"""
    if "quick" not in getattr(item, "fixturenames", ()) or item.get_closest_marker("xdist_group"):
        return
    mark = item.get_closest_marker("reproduction")
    callspec = getattr(item, "callspec", None)
    name = mark.args[0] if mark else callspec.params.get("name") if callspec else None
    if name is not None:
        item.add_marker(pytest.mark.xdist_group(f"reproduction-{name}"))


_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, None]:
    """Records whether a test's call passed, for `_free_tmp_path`."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[_PASSED] = report.passed


@pytest.fixture(autouse=True)
def _free_tmp_path(request: pytest.FixtureRequest) -> Iterator[None]:
    """Deletes a passed test's `tmp_path` as it ends (a failed one's stays, to look at).
    The block device's stores are fallocated, 2 GiB for the small device: the serve tests
    left 39 GiB behind in one session, and pytest keeps the last three sessions."""
    folder = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if folder is not None and request.node.stash.get(_PASSED, False):
        shutil.rmtree(folder, ignore_errors=True)
