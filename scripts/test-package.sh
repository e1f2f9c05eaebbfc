#!/usr/bin/env bash
# Lays out the ftlab package the Python tests import, under target/test-python: the source
# tree's modules, linked, and the extension of the test-profile build (target/debug/lib_core.so,
# which `cargo build --workspace --lib --tests` makes). An in-tree release build
# (python/ftlab/_core.abi3.so) is left alone. Put target/test-python on PYTHONPATH to use it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f target/debug/lib_core.so ]; then
    echo "test-package: target/debug/lib_core.so not found: run cargo build -p ftlab-py first" >&2
    exit 1
fi
rm -rf target/test-python
mkdir -p target/test-python
cp -rs "$PWD/python/ftlab" target/test-python/
rm -f target/test-python/ftlab/_core.abi3.so
cp target/debug/lib_core.so target/test-python/ftlab/_core.abi3.so
