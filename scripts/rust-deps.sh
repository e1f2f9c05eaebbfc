#!/usr/bin/env bash
# Compiles the third-party crates ftlab depends on, as part of installing the dependencies
# (the idea of cargo-chef): a skeleton of the workspace (its manifests and lock file, every
# target with an empty source; scripts/rust_skeleton.py) is built in the test profile into
# the workspace's target directory. The test command's build then finds every registry crate
# compiled and compiles only ftlab's own crates.
#
# Cargo reuses a crate only if it was built with the same features, profile, flags and, for
# build scripts that watch them, environment: the skeleton has the real manifests and
# profiles, and this must run in the environment of the build that follows (pyo3's build
# script reruns when PATH changes, so cargo is not started from Python, whose launcher can
# change PATH). The targets are those of the loop's build: libraries, tests and benches.
set -euo pipefail
cd "$(dirname "$0")/.."
skeleton=$(mktemp -d)
trap 'rm -rf "$skeleton"' EXIT
python3 scripts/rust_skeleton.py "$skeleton"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" cargo build --quiet --locked \
    --manifest-path "$skeleton/Cargo.toml" --workspace --lib --tests --benches
# The template scheme's wheel (examples/rust-scheme, a crate of its own, built in release by
# maturin as a user's would be): its crates, compiled through pip and maturin as the loop's
# `pip install` compiles them (no build isolation: an isolated build's PATH changes each
# time, and pyo3 would compile again), into the template's target directory.
CARGO_TARGET_DIR="$PWD/examples/rust-scheme/target" python3 -m pip wheel --quiet --no-deps \
    --no-build-isolation --wheel-dir "$skeleton/wheel" "$skeleton/examples/rust-scheme"
