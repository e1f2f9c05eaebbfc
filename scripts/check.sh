#!/usr/bin/env bash
# The inner loop, after a change: format, lints, the type check, and the tests of what changed
# since BASE (default HEAD, i.e. the uncommitted changes; `scripts/check.sh main` for a whole
# branch). Tests of what changed:
#   - a Rust source file crates/C/src/.../NAME.rs: crate C's tests whose path names NAME
#     (its unit tests in that module, an integration module of that name);
#   - an integration test module crates/ftlab-core/tests/integration/NAME.rs: all of it;
#   - a Python module python/ftlab/.../NAME.py: the Python test files that mention NAME;
#   - a Python test file: all of it.
# scripts/test.sh, the whole suite, is what CI runs; run it before you push.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD}
step() {
    local start=$SECONDS
    "$@"
    echo "== $((SECONDS - start)) s: $*" >&2
}
# The extension and the test binaries, with the test command's own cargo invocation and
# environment (clippy as the workspace's compiler wrapper, warnings as errors), so that the
# build lints what it compiles and the two share the compiled dependencies; then the
# package the Python tests import.
export RUSTFLAGS="-D warnings" RUSTC_WORKSPACE_WRAPPER=clippy-driver
build() {
    cargo build --workspace --lib --tests --benches --quiet && bash scripts/test-package.sh
}
changed=$({ git diff --name-only "$base" --; git ls-files --others --exclude-standard; } | sort -u)
start=$SECONDS

step cargo fmt --all -- --check
step python3 -m ruff check python tests examples scripts
step python3 -m ruff format --check python tests examples scripts
step python3 -m mypy python tests/python examples

crates=$(sed -n 's|^crates/\([^/]*\)/.*\.rs$|\1|p' <<<"$changed" | sort -u)
if [ -n "$crates" ]; then
    step build
    filters=()
    while read -r path; do
        name=$(basename "$path" .rs)
        [ "$name" = mod ] && name=$(basename "$(dirname "$path")")
        case "$path" in
            crates/ftlab-core/tests/integration/main.rs | */lib.rs) ;;
            crates/ftlab-core/tests/integration/*) filters+=(-E "test(/^$name::/)") ;;
            crates/*/src/*) filters+=(-E "package($(cut -d/ -f2 <<<"$path")) & test(/$name/)") ;;
            crates/*/tests/*) filters+=(-E "package($(cut -d/ -f2 <<<"$path")) & binary($name)") ;;
        esac
    done < <(grep '^crates/.*\.rs$' <<<"$changed" || true)
    if [ ${#filters[@]} -gt 0 ]; then
        step cargo nextest run --workspace --no-fail-fast --status-level fail "${filters[@]}"
    fi
fi

tests=()
while read -r path; do
    case "$path" in
        tests/python/test_*.py) [ -f "$path" ] && tests+=("$path") ;;
        python/ftlab/*.py)
            name=$(basename "$path" .py)
            [ "$name" = __init__ ] && name=$(basename "$(dirname "$path")")
            while read -r t; do tests+=("$t"); done < <(grep -lw -- "$name" tests/python/test_*.py || true)
            ;;
    esac
done < <(grep '\.py$' <<<"$changed" || true)
if [ ${#tests[@]} -gt 0 ]; then
    [ -f target/test-python/ftlab/_core.abi3.so ] || step build
    mapfile -t tests < <(printf '%s\n' "${tests[@]}" | sort -u)
    PYTHONPATH="$PWD/target/test-python" step python3 -m pytest -q -n auto --dist loadgroup "${tests[@]}"
fi
# Commit subjects of at most 72 characters, the detail in the body (docs/dev/contributing.md).
long=$(git log --format='%s' "$base..HEAD" | awk 'length > 72')
if [ -n "$long" ]; then
    echo "check: commit subjects over 72 characters:" >&2
    echo "$long" >&2
    exit 1
fi
echo "== $((SECONDS - start)) s: the check of what changed since $base" >&2
