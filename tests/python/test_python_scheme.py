"""Schemes written in Python (`ftlab.Scheme`): registered, run, verified and compared like the
built-in ones; the tutorial's schemes in examples/python-scheme/pyftl.py.

The runs are small (the `small` preset, a few thousand requests, or the Financial1
excerpt on a device fitted to it) but precondition the device so that GC is active.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import ftlab
from ftlab import _scheme

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "examples" / "python-scheme" / "pyftl.py"
FINANCIAL1 = "ssdsim_hust_financial1/example.ascii"
#: A small device (the small preset, one channel, 64 blocks per plane: 64k pages) for runs
#: through the tutorial's schemes: their preconditioning goes through Python, page by page.
SMALL = ["workload.requests=20000", "geometry.blocks_per_plane=64", "geometry.channels=1"]
#: A quarter of the small preset (131k pages), for the command line's runs.
SMALL_CLI = ["--preset", "small", "--set", "geometry.channels=1"]


@pytest.fixture(scope="module", autouse=True)
def tutorial() -> Iterator[None]:
    """The tutorial's schemes, registered as a plugin (worker processes load it too)."""
    _scheme.load_plugin(str(TUTORIAL))
    yield
    for name in ("pypage", "clockftl"):
        ftlab.unregister_scheme(name)


def without_name(report: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "ftl"}


@pytest.mark.parametrize("mapping_only", [False, True])
def test_python_page_ftl_is_the_built_in_page_ftl(mapping_only: bool) -> None:
    """The tutorial's page FTL uses the core's allocator as the built-in one does (GC in
    idle time included): every number of the report is the same, byte for byte."""
    runs = [
        ftlab.simulate(
            name,
            workload="default",
            preset="small",
            precondition="steady",
            sets=SMALL,
            mapping_only=mapping_only,
            verify=True,
        ).report
        for name in ("pypage", "page")
    ]
    assert runs[0]["metrics"]["gc"]["invocations"] > 0
    assert runs[0]["metrics"]["gc"]["scheduling"] == "background"
    assert json.dumps(without_name(runs[0])) == json.dumps(without_name(runs[1]))


def test_clock_ftl_verified_on_a_real_trace_beside_dftl(traces: Path) -> None:
    """The CLOCK-cached map passes --verify on a real trace with GC and translation traffic,
    in a comparison with DFTL (run in worker processes that load the plugin)."""
    cmp = ftlab.compare(
        ["clockftl", "dftl"],
        trace=traces / FINANCIAL1,
        preset="small",
        precondition="steady",
        # SMALL's device: the Python scheme preconditions 64k pages rather than the small
        # preset's 512k (11 s of CPU against 4); GC and translation traffic still run.
        sets=["clockftl.cache_pages=2", *SMALL[1:]],
        verify=True,
        jobs=2,
    )
    clock = cmp.results["clockftl"].report["metrics"]
    assert clock["gc"]["invocations"] > 0
    assert clock["flash"]["reads"]["translation"] > 0
    assert clock["flash"]["programs"]["translation"] > 0
    counters = clock["scheme"]
    assert counters["map_misses"] > 0 and counters["map_hits"] > 0
    assert set(cmp.table["scheme"].to_list()) == {"clockftl", "dftl"}


def test_two_run_sweep_of_a_python_scheme(tmp_path: Path) -> None:
    table = ftlab.sweep(
        {
            "schemes": ["clockftl", "page"],
            "workloads": ["default"],
            "presets": ["small"],
            "precondition": "fill",
            "set": {"workload.requests": 2000},
        },
        jobs=2,
    )
    assert sorted(table["scheme"].to_list()) == ["clockftl", "page"]
    assert table["error"].null_count() == len(table)


def test_registry_facts_of_a_python_scheme() -> None:
    """Family and advise parameters come from the class, through the core's registry."""
    from ftlab import _advise

    clock = next(s for s in ftlab.scheme_info("demand") if s["name"] == "clockftl")
    assert clock["builtin"] is False
    assert clock["section"] == {"cache_pages": 64}
    assert _advise.own_parameters()["clockftl"] == {"clockftl.cache_pages": [16, 64]}
    assert [s["name"] for s in ftlab.scheme_info("demand") if s["builtin"]] == [
        "dftl", "selective", "sftl", "tpftl",
    ]  # fmt: skip

    class Odd(LosesWrites):
        name = "test-odd-family"
        family = "quantum"

    with pytest.raises(ftlab.FtlabError, match="family `quantum`"):
        ftlab.register_scheme(Odd)
    with pytest.raises(ftlab.FtlabError, match="unknown family"):
        ftlab.scheme_info("quantum")


def test_section_keys_are_checked_like_a_built_in_scheme() -> None:
    def run(key: str) -> str:
        with pytest.raises(ftlab.FtlabError) as e:
            ftlab.simulate("clockftl", preset="small", sets=[*SMALL, key], mapping_only=True)
        return str(e.value)

    assert "clockftl.cache_page" in run("clockftl.cache_page=3")
    assert "clockftl.cache_pages" in run('clockftl.cache_pages="many"')
    message = run("clockftl.cache_pages=0")
    assert "configuration key `clockftl.cache_pages`: must be at least 1" in message


class LosesWrites(ftlab.Scheme):
    """A page FTL that forgets every 50th write (keeps mapping the old copy)."""

    name = "test-loses-writes"

    def __init__(self, device: ftlab.Device, config: dict[str, Any]) -> None:
        super().__init__(device, config)
        self.map: list[int | None] = [None] * device.logical_pages
        self.alloc = device.page_allocator()
        self.writes = 0

    def read(self, lpa: int, flash: ftlab.Flash) -> int | None:
        return self.map[lpa]

    def write(self, lpa: int, seq: int, flash: ftlab.Flash) -> None:
        self.writes += 1
        ppn = self.alloc.host_page(flash)
        for moved, to in self.alloc.take_moves():  # GC may have moved the old copy
            self.map[moved] = to
        flash.program(ppn, lpa, seq)
        old = self.map[lpa]
        if self.writes % 50 == 0 and old is not None:
            flash.invalidate(ppn)  # the new copy is lost
        else:
            if old is not None:
                flash.invalidate(old)
            self.map[lpa] = ppn

    def trim(self, lpa: int, flash: ftlab.Flash) -> None:
        if (old := self.map[lpa]) is not None:
            flash.invalidate(old)
            self.map[lpa] = None


class ProgramsTwice(LosesWrites):
    """Programs the same physical page twice without an erase."""

    name = "test-programs-twice"

    def write(self, lpa: int, seq: int, flash: ftlab.Flash) -> None:
        ppn = self.alloc.host_page(flash)
        flash.program(ppn, lpa, seq)
        flash.program(ppn, lpa, seq)


def test_verification_catches_a_scheme_that_loses_writes() -> None:
    ftlab.register_scheme(LosesWrites)
    try:
        with pytest.raises(ftlab.FtlabError, match="verification failed"):
            ftlab.simulate(
                "test-loses-writes",
                workload="default",
                preset="small",
                sets=SMALL,
                mapping_only=True,
                verify=True,
            )
    finally:
        ftlab.unregister_scheme("test-loses-writes")


def test_a_nand_violation_stays_a_nand_error() -> None:
    ftlab.register_scheme(ProgramsTwice)
    try:
        with pytest.raises(ftlab.FtlabError, match="NAND rule violated"):
            ftlab.simulate("test-programs-twice", preset="small", sets=SMALL, mapping_only=True)
    finally:
        ftlab.unregister_scheme("test-programs-twice")


def test_a_scheme_registered_in_this_process_runs_here_in_a_comparison() -> None:
    """Not a plugin: compare runs it in a thread of this process beside the others."""
    ftlab.register_scheme(LosesWrites)
    try:
        assert _scheme.in_process_only("test-loses-writes")
        cmp = ftlab.compare(
            ["test-loses-writes", "page", "dftl"],
            workload="default",
            preset="small",
            sets=SMALL,
            mapping_only=True,
            jobs=2,
        )
        assert set(cmp.results) == {"test-loses-writes", "page", "dftl"}
    finally:
        ftlab.unregister_scheme("test-loses-writes")


def test_bad_registrations_are_refused() -> None:
    class Page(LosesWrites):
        name = "page"

    class Incomplete(ftlab.Scheme):
        name = "incomplete"

    with pytest.raises(ftlab.FtlabError, match="built-in scheme"):
        ftlab.register_scheme(Page)
    with pytest.raises(TypeError, match="does not implement `read`"):
        ftlab.register_scheme(Incomplete)
    with pytest.raises(TypeError, match="not a subclass"):
        ftlab.register_scheme(dict)  # type: ignore[type-var]


def ftlab_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ftlab", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_command_line_plugin_runs_and_verifies() -> None:
    out = ftlab_cli(
        "--plugin", str(TUTORIAL), "run", "--ftl", "clockftl", *SMALL_CLI,
        "--workload", "default", "--set", "workload.requests=2000", "--verify", "--json", "-",
        "--quiet",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ftl"] == "clockftl"
    listed = ftlab_cli("--plugin", str(TUTORIAL), "schemes")
    assert "clockftl" in listed.stdout and "pypage" in listed.stdout
    missing = ftlab_cli("--plugin", "no/such/file.py", "schemes")
    assert missing.returncode != 0 and "no/such/file.py" in missing.stderr


def test_installed_package_registers_through_its_entry_point(tmp_path: Path) -> None:
    """What `pip install my-ftl` gives: a distribution whose `ftlab.schemes` entry point
    names the scheme class; `--ftl` then knows it with no --plugin."""
    (tmp_path / "my_ftl.py").write_text(TUTORIAL.read_text().replace('"pypage"', '"my-ftl"'))
    dist = tmp_path / "my_ftl-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-ftl\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[ftlab.schemes]\nmy-ftl = my_ftl:PyPage\n")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    out = ftlab_cli(
        "run", "--ftl", "my-ftl", *SMALL_CLI, "--set", "workload.requests=2000",
        "--verify", "--json", "-", "--quiet", env={"PYTHONPATH": path},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ftl"] == "my-ftl"


@pytest.fixture(scope="module")
def rustpage() -> str:
    """The template Rust scheme (examples/rust-scheme), installed as its own wheel by the
    test script: its `ftlab.schemes` entry point registers it."""
    pytest.importorskip("ftlab_rust_scheme", reason="pip install ./examples/rust-scheme")
    _scheme.load_entry_points()
    assert "rustpage" in dict(ftlab.schemes())
    return "rustpage"


def test_template_rust_scheme_verified_in_a_comparison_and_a_sweep(
    rustpage: str, traces: Path
) -> None:
    """Installed from its own wheel, the Rust scheme runs in worker processes (which load
    the entry point), passes --verify on a real trace with GC active, and equals the
    built-in page FTL it mirrors."""
    cmp = ftlab.compare(
        [rustpage, "page"],
        trace=traces / FINANCIAL1,
        preset="small",
        precondition="steady",
        sets=['gc.mode="foreground"'],  # the excerpt is too short to need GC in idle time
        verify=True,
        jobs=2,
    )
    ours, theirs = (cmp.results[n].report for n in (rustpage, "page"))
    assert ours["metrics"]["gc"]["invocations"] > 0
    assert json.dumps(without_name(ours)) == json.dumps(without_name(theirs))
    table = ftlab.sweep(
        {
            "schemes": [rustpage],
            "workloads": ["default"],
            "presets": ["small"],
            "precondition": "fill",
            "seeds": 2,
            "set": {"workload.requests": 2000},
        },
        jobs=2,
    )
    assert table.height == 2 and table["error"].null_count() == 2


@pytest.mark.parametrize("ftl", ["rustpage", "pypage"])
def test_served_scheme_survives_kill_9(
    ftl: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The template Rust scheme as a block device: every write acknowledged before the last
    flush survives kill -9 and a restart, which rebuilds the scheme through its `recover`.
    (FTLAB_PLUGINS makes the server load the tutorial's Python schemes too.)"""
    from nbd_crash import Checker, crash_cycle
    from nbd_helpers import SMALL_DEVICE, Served, need

    need("fio", "fio")
    if ftl == "rustpage":
        pytest.importorskip("ftlab_rust_scheme", reason="pip install ./examples/rust-scheme")
    monkeypatch.setenv("FTLAB_PLUGINS", str(TUTORIAL))
    store = tmp_path / "store"
    rng = __import__("random").Random(5)
    checker = Checker(first=0, count=1024, seed=7)
    for cycle in range(2):
        problems, startup = crash_cycle(
            lambda: Served(store, ftl=ftl, sets=SMALL_DEVICE, extra=["--verify"]),
            checker,
            tmp_path,
            rng,
        )
        assert not problems, f"cycle {cycle}: " + "\n".join(problems[:20])
        assert "recovered after an unclean stop" in startup, startup
    assert checker.flushes > 2 and any(checker.flushed)
