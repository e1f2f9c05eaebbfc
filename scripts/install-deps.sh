#!/usr/bin/env bash
# System packages the build needs: a C compiler (compressed-trace crates build C code) and
# pkg-config. Installs them with apt when missing; harmless when they are present.
set -euo pipefail
missing=()
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v cargo >/dev/null 2>&1 || { echo "install-deps: cargo not found; install Rust from https://rustup.rs" >&2; exit 1; }
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "install-deps: installing ${missing[*]}" >&2
    $sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}"
fi
