#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what the tests need, then checks format and
# lints, type-checks the Python (mypy, strict), runs the Rust tests and the Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet ".[test]"
# The template of a scheme in its own crate, built and installed as its own wheel, as a
# user's would be (its `ftlab.schemes` entry point is what the tests exercise).
python3 -m pip install --quiet ./examples/rust-scheme

cargo fmt --all -- --check
cargo fmt --manifest-path examples/rust-scheme/Cargo.toml -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --quiet
python3 -m ruff check python tests examples
python3 -m ruff format --check python tests examples
python3 -m mypy python tests/python examples
python3 -m pytest -q
