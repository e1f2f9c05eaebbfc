#!/usr/bin/env bash
# The whole test suite, as CI runs it.
#
# First what the tests need, which the loop's time budget does not count: Debian packages, the
# Python packages pyproject.toml lists, the crates Cargo.lock pins, downloaded and compiled.
# Then the loop: ftlab's own crates built once and linted as they build (the Python extension
# and every Rust test binary in one cargo invocation, in the test profile, so that the core
# compiles once), the format checks, the Rust tests and the Python tests, each on every core,
# the type check and the documentation build (a Python test).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's wall time, so that the loop's budget can be watched (CI's log shows them).
step() {
    local start=$SECONDS
    "$@"
    echo "== $((SECONDS - start)) s: $*" >&2
}

# --- What the tests need (not the loop's time) ---
step bash scripts/install-deps.sh
step python3 -m pip install --quiet --upgrade pip
step python3 -m pip install --quiet "tomli>=1.1; python_version < '3.11'"
step python3 -m pip install --quiet -r <(python3 scripts/requirements.py test)
step cargo fetch --locked
# A fresh build: incremental compilation's caches cost time here and save none. Warnings are
# errors, clippy's included (the build lints, below); dependencies' lints are capped by cargo.
export CARGO_INCREMENTAL=0 RUSTFLAGS="-D warnings"
# The third-party crates, compiled in the loop's profile and environment (cargo-chef's idea),
# so that the loop compiles only ftlab's own crates.
step bash scripts/rust-deps.sh
loop=$SECONDS

# --- The loop ---
# clippy lints ftlab's crates as they compile (what `cargo clippy` does, in a build rather
# than a check): one compile of the workspace, not a build and then a check of it. Every
# cargo command of the loop runs with it, or cargo would compile the crates again.
export RUSTC_WORKSPACE_WRAPPER=clippy-driver
# The type check needs no build (the extension is read through its stub): it runs beside the
# build, on the core that the compiler's single-threaded phases leave idle. Its report is
# shown, and its failure fails the loop, once it is waited for below.
mypy_log=$(mktemp)
python3 -m mypy python tests/python examples >"$mypy_log" 2>&1 &
mypy_pid=$!
# One invocation builds the extension (target/debug/lib_core.so) and every test binary: a
# separate `pip install .` would build the core again, with other features (dev-dependencies
# unify features only within an invocation) and with link-time optimisation, for minutes.
step cargo build --workspace --lib --tests --benches
# The package the Python tests import: the tree's modules and the extension just built.
step bash scripts/test-package.sh
# `python -m ftlab` in the tests' subprocesses finds it through PYTHONPATH too.
export PYTHONPATH="$PWD/target/test-python${PYTHONPATH:+:$PYTHONPATH}"
# The template of a scheme in its own crate, built and installed as its own wheel, as a
# user's would be (its `ftlab.schemes` entry point is what the tests exercise); its
# dependency on ftlab is the package above. Built as scripts/rust-deps.sh built its crates:
# the same command, target directory and environment, without clippy (not a member).
CARGO_TARGET_DIR="$PWD/examples/rust-scheme/target" step env -u RUSTC_WORKSPACE_WRAPPER \
    python3 -m pip install --quiet --no-deps --no-build-isolation ./examples/rust-scheme

step cargo fmt --all -- --check
step cargo fmt --manifest-path examples/rust-scheme/Cargo.toml -- --check
# nextest runs each test in its own process, on every core, so one long test does not hold
# the others back; `cargo test` where it is not installed. Doc tests apart (nextest skips them).
if cargo nextest --version >/dev/null 2>&1; then
    step cargo nextest run --workspace --no-fail-fast --status-level fail --final-status-level slow
else
    step cargo test --workspace --quiet --lib --bins --tests
fi
step cargo test --workspace --quiet --doc
step python3 -m ruff check python tests examples scripts
step python3 -m ruff format --check python tests examples scripts
# mypy, started beside the build: its wait is what it adds to the loop.
mypy_done() { local rc=0; wait "$mypy_pid" || rc=$?; cat "$mypy_log"; rm -f "$mypy_log"; return "$rc"; }
step mypy_done
step python3 -m pytest -q -n auto --dist loadgroup
echo "== $((SECONDS - loop)) s: the loop (dependencies excluded)" >&2
