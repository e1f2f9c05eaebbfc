"""Parallel runs in threads of the calling process: the same results as one at a time,
progress callbacks from worker threads, and Ctrl-C stopping every run under way."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import ftlab
from ftlab import _core, _parallel

SMALL = ["workload.requests=3000"]


def test_threads_give_the_bytes_of_one_at_a_time() -> None:
    names = ["page", "dftl", "sftl"]
    done: list[str] = []

    def run(jobs: int) -> ftlab.CompareResult:
        return ftlab.compare(
            names, workload="zipf", preset="small", precondition="fill", sets=SMALL, jobs=jobs,
            on_done=lambda n, r: done.append(n),
        )  # fmt: skip

    threaded = run(2)
    assert sorted(done) == sorted(names)
    alone = run(1)
    for name in names:
        assert threaded.results[name].json == alone.results[name].json


def test_progress_callbacks_from_worker_threads() -> None:
    calls: dict[str, list[str]] = {"a": [], "b": []}

    def run(label: str) -> ftlab.Result:
        def progress(done: int, fraction: float | None, phase: str) -> None:
            calls[label].append(threading.current_thread().name)

        return ftlab.simulate(
            "page", workload="default", preset="small", sets=["workload.requests=140000"],
            mapping_only=True, progress=progress,
        )  # fmt: skip

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="worker") as pool:
        results = list(pool.map(run, ["a", "b"]))
    assert results[0].json == results[1].json
    for names in calls.values():
        # Every 65,536 requests, and once at the end.
        assert len(names) >= 3 and all(n.startswith("worker") for n in names)


def test_a_set_cancel_flag_stops_a_run() -> None:
    cancel = _core.Cancel()
    assert not cancel.is_set
    cancel.set()
    with pytest.raises(KeyboardInterrupt):
        _core.run(
            "page", cancel=cancel, workload="default", preset="small",
            sets=["workload.requests=200000"],
        )  # fmt: skip


def test_an_exception_in_a_progress_callback_stops_the_run_and_is_raised() -> None:
    def progress(done: int, fraction: float | None, phase: str) -> None:
        raise ValueError(f"stop at {done}")

    with pytest.raises(ValueError, match="stop at 65536"):
        ftlab.simulate(
            "page", workload="default", preset="small", sets=["workload.requests=200000"],
            mapping_only=True, progress=progress,
        )  # fmt: skip


#: A run of minutes: only a cancel ends it within a test's time.
ENDLESS = ['precondition.mode="fill"', "workload.requests=2000000000", "replay.timing=false"]


def test_an_error_in_one_run_stops_the_others() -> None:
    stopped: list[str] = []

    def fail_or_run_long(name: str) -> str:
        if name == "fails":
            raise ftlab.FtlabError("this run failed")
        try:
            text, _ = _parallel.run_cancellable(
                name, workload="default", preset="small", sets=ENDLESS
            )
        except KeyboardInterrupt:
            stopped.append(name)
            raise
        return text

    with pytest.raises(ftlab.FtlabError, match="this run failed"):
        _parallel.run_all(["page", "fails"], fail_or_run_long, 2, lambda n, r: None)
    assert stopped == ["page"]


SCRIPT = f"""
import threading
import ftlab
print("started", flush=True)
try:
    ftlab.compare(["page", "dftl", "sftl"], workload="default", preset="small", sets={ENDLESS!r},
                  jobs=2)
except KeyboardInterrupt:
    print("interrupted; threads left:", threading.active_count(), flush=True)
"""


def test_ctrl_c_stops_every_threaded_run_of_a_script_without_main_guard() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A terminal's Ctrl-C: not ignored even when the suite runs in a script's background.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "started\n"
    time.sleep(1.0)  # the runs are under way (the device is fitted, then both threads run)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert stdout == "interrupted; threads left: 1\n", stderr


def test_ctrl_c_stops_ftlab_compare_with_status_130() -> None:
    args = ["compare", "--ftl", "page,dftl", "--workload", "default", "--preset", "small"]
    for entry in ENDLESS:
        args += ["--set", entry]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ftlab", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(2.0)  # started, and both runs under way
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
