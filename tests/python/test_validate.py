"""`ftlab validate`: the quick scorecard passes; a deliberately broken model fails it; the
reference formulas agree with hand-computed and published values."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from browser_helpers import check_page_in_browser

import ftlab.validate as validation
from ftlab.validate import Scorecard, gc, peer, queueing
from ftlab.validate._case import Case

# pytest-xdist (`pytest -n auto --dist loadgroup`): the quick scorecard is run once, by one worker.
pytestmark = pytest.mark.xdist_group("validate")


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Scorecard:
    return validation.validate(quick=True)


def test_quick_scorecard_passes(quick: Scorecard) -> None:
    failures = [(r.case.name, r.measured, r.case.reference) for r in quick.failures]
    assert quick.passed, failures
    families = {r.case.family for r in quick.results}
    assert {"gc", "timing", "steady"} <= families
    assert sum(r.status == "pass" for r in quick.results) >= 15
    for r in quick.results:
        assert r.case.source and r.case.reason, r.case.name


def test_quick_checks_md1_standard_deviation(quick: Scorecard) -> None:
    stdev = [r for r in quick.results if "standard deviation" in r.case.name]
    assert len(stdev) == 2 and all(r.status == "pass" for r in stdev)


def test_md1_standard_errors_shape() -> None:
    mean_se, q_se, stdev_se = queueing.md1_standard_errors(0.5, 20_000, [0.9], replications=4)
    assert 0 < mean_se < 0.05 and 0 < stdev_se < 0.1 and len(q_se) == 1


def test_full_catalogue_size() -> None:
    _, cases = validation.catalogue(quick=False)
    assert len(cases) >= 30
    assert len({c.name for c in cases}) == len(cases)


def test_report_files(quick: Scorecard, tmp_path: Path) -> None:
    index = quick.write_report(tmp_path)
    page = index.read_text()
    assert "ftlab validate" in page and "<table>" in page
    document = json.loads((tmp_path / "scorecard.json").read_text())
    assert len(document["cases"]) == len(quick.results)
    assert (tmp_path / "gc.png").is_file() and (tmp_path / "timing.png").is_file()
    frame = quick.frame
    assert frame.height == len(quick.results)
    assert set(frame["status"].to_list()) <= {"pass", "xfail", "xpass", "skipped"}


def test_program_latency_ignored_fails_bandwidth() -> None:
    card = validation.validate(
        quick=True, overrides={"nand.program_latency_ns": 1}, families=["timing"]
    )
    failed = {r.case.name for r in card.failures}
    assert any("write" in name for name in failed), failed
    assert not card.passed


def test_non_greedy_victims_fail_greedy_cases() -> None:
    card = validation.validate(quick=True, overrides={"gc.policy": "cost-benefit"}, families=["gc"])
    greedy = [r for r in card.results if r.case.name.startswith("greedy WA, b=32")]
    assert greedy and all(r.status == "fail" for r in greedy)


def test_bracket_check() -> None:
    case = Case(
        family="peer", name="b", run="r", measure="low", measure_high="high",
        reference=43_000.0, source="s", tolerance=1000.0, relative=False, reason="r",
        check="bracket", unit="ns",
    )  # fmt: skip
    assert case.passes(40_700.0, 46_100.0)
    assert case.passes(43_900.0, 43_000.0)  # the low run within the truncation's 1 us
    assert not case.passes(44_100.0, 46_100.0)  # the low run above MQSim + 1 us
    assert not case.passes(40_700.0, 42_900.0)  # the high run below MQSim
    assert not case.passes(40_700.0, None)


def test_peer_cases_state_their_tolerances() -> None:
    if peer.spec_path() is None:
        pytest.skip("../shared/validation is absent")
    _, cases = peer.catalogue(quick=False)
    means = [c for c in cases if c.check == "value"]
    brackets = [c for c in cases if c.check == "bracket"]
    assert len(means) == 5 and len(brackets) == 3
    assert not any(c.expected_failure for c in cases)
    for c in means:
        assert c.tolerance == (0.15 if "reads)" in c.name and "(0 reads)" not in c.name else 0.05)
    _, quick_cases = peer.catalogue(quick=True)
    assert {c.check for c in quick_cases} == {"value", "bracket"}


# --- Reference formulas -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "wa"),
    [(0.05, 10.2), (0.07, 7.32), (0.10, 5.18), (0.20, 2.69), (0.28, 1.99), (0.40, 1.48)],
)
def test_desnoyers_fifo_published_values(op: float, wa: float) -> None:
    # ../shared/specs/validation.md, from Desnoyers (SYSTOR 2012).
    assert gc.fifo_wa(gc.a_from_op(op)) == pytest.approx(wa, abs=0.006 * wa)


def test_fifo_fixed_point() -> None:
    a = 1.25
    u = gc.fifo_valid_fraction(a)
    assert u == pytest.approx(math.exp(-a * (1 - u)), abs=1e-12)
    assert 0 < u < 1


def test_greedy_by_hand() -> None:
    # b = 2: blocks hold 2 or 1 valid pages; level j = 1, y = a - 1, r = 2 - a, WA = 4 - 2a.
    for a in (1.05, 1.2, 1.5):
        assert gc.greedy_wa(a, 2) == pytest.approx(4 - 2 * a)
    # b = 1: nothing to copy.
    assert gc.greedy_wa(1.1, 1) == pytest.approx(1.0)
    # Plenty of space (a >= H_b): greedy finds empty blocks, WA = 1.
    assert gc.greedy_wa(gc.harmonic(32) + 0.1, 32) == pytest.approx(1.0)


def test_greedy_tends_to_fifo_and_beats_it() -> None:
    for op in (0.05, 0.1, 0.2, 0.4):
        a = gc.a_from_op(op)
        fifo = gc.fifo_wa(a)
        assert gc.greedy_wa(a, 32) < gc.greedy_wa(a, 256) < fifo
        assert gc.greedy_wa(a, 8192) == pytest.approx(fifo, rel=0.005)


def test_greedy_fixed_point_conserves() -> None:
    a, b = 1.1, 64
    j, y, r = gc.greedy_level(a, b)
    assert r * (b - j) + j * y == pytest.approx(1.0)
    assert r * (gc.harmonic(b) - gc.harmonic(j)) + y == pytest.approx(a / b)


def test_hot_cold_reduces_to_uniform() -> None:
    for a in (1.1, 1.3):
        assert gc.hot_cold_fifo_wa(a, 0.3, 0.3) == pytest.approx(gc.fifo_wa(a), rel=1e-9)
    # Skew raises a mixed log's WA (Desnoyers 2012: hot/cold mixed worse than uniform).
    a = gc.a_from_op(0.2)
    assert gc.hot_cold_fifo_wa(a, 0.2, 0.8) > gc.fifo_wa(a)


def test_effective_spare_formula() -> None:
    cfg = {
        "geometry": {
            "channels": 1, "chips_per_channel": 1, "dies_per_chip": 1, "planes_per_die": 1,
            "blocks_per_plane": 1000, "pages_per_block": 64,
        },
        "ftl": {"over_provisioning": 0.1},
        "gc": {"threshold": 0.02, "hard_threshold": 0.005, "mode": "background"},
    }  # fmt: skip
    # Soft threshold 20 blocks: 1000 - 19.5 - 1 blocks hold data; U = 57,600 pages.
    assert gc.effective_spare(cfg) == pytest.approx(979.5 * 64 / 57600)
    # Foreground GC with its own copy stream holds the hard threshold: 5 blocks.
    assert gc.effective_spare(cfg, level="hard") == pytest.approx(994.5 * 64 / 57600)


def test_md1_formulas() -> None:
    d = 80.0
    assert queueing.md1_mean_response(d, 0.5) == pytest.approx(d * 1.5)
    assert queueing.md1_response_variance(d, 0.5) == pytest.approx(
        0.5 * d * d / 1.5 + (0.5 * d) ** 2
    )
    # P(W = 0) = 1 - rho; P(W <= D) = (1 - rho) e^{lambda D} (Erlang, k = 0 and 1 terms).
    assert queueing.md1_wait_cdf(0.0, d, 0.3) == pytest.approx(0.7)
    assert queueing.md1_wait_cdf(d, d, 0.3) == pytest.approx(0.7 * math.exp(0.3))
    # The distribution's mean matches Pollaczek-Khinchine: integrate 1 - F.
    rho, step = 0.6, d / 200
    mean = sum(1 - queueing.md1_wait_cdf((i + 0.5) * step, d, rho) for i in range(4000)) * step
    assert mean == pytest.approx(rho * d / (2 * (1 - rho)), rel=0.01)
    assert queueing.md1_response_quantile(0.5, d, 0.3) == d


def test_closed_loop_product_form() -> None:
    assert queueing.closed_loop_product_form(8, 1, 10.0) == pytest.approx(0.1)
    assert queueing.closed_loop_product_form(1, 5, 10.0) == pytest.approx(0.1)
    assert queueing.closed_loop_product_form(8, 10_000, 10.0) == pytest.approx(0.8, rel=1e-3)


def test_cli_writes_the_scorecard_and_the_page_opens_in_a_browser(tmp_path: Path) -> None:
    out, js = tmp_path / "validation", tmp_path / "scorecard.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ftlab",
            "validate",
            "--quick",
            "--out",
            str(out),
            "--json",
            str(js),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "median" in result.stdout
    document = json.loads(js.read_text())
    assert document["cases"] and all(c["status"] != "fail" for c in document["cases"])
    index = out / "index.html"
    images = re.findall(r'<img src="([^"]+)"', index.read_text())
    assert images and all((out / src).is_file() for src in images)
    check_page_in_browser(index, len(images))
