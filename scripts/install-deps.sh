#!/usr/bin/env bash
# System packages the build and the tests need: a C compiler (compressed-trace crates build C
# code), pkg-config and OpenSSL's headers (the block device's TLS links the system's libssl);
# the real clients the block-device tests (ftlab serve) drive: qemu-io
# (qemu-utils), fio, nbdfuse (libnbd-bin), mkfs.ext4/e2fsck/debugfs (e2fsprogs), fusermount3
# (fuse3), losetup/mount (mount), openssl (the TLS test's certificates); and Debian's Chromium, in which a test opens the
# reproductions' HTML report headless (that test is skipped, saying why, when Chromium cannot
# be installed). Installs them with apt when missing; harmless when they are present.
set -euo pipefail
missing=()
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
pkg-config --exists openssl 2>/dev/null || missing+=(libssl-dev)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v qemu-io >/dev/null 2>&1 || missing+=(qemu-utils)
command -v fio >/dev/null 2>&1 || missing+=(fio)
command -v nbdfuse >/dev/null 2>&1 || missing+=(libnbd-bin)
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
command -v fusermount3 >/dev/null 2>&1 || missing+=(fuse3)
command -v losetup >/dev/null 2>&1 || missing+=(mount)
command -v cargo >/dev/null 2>&1 || { echo "install-deps: cargo not found; install Rust from https://rustup.rs" >&2; exit 1; }
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}" >&2
    $sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}"
fi
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        echo "install-deps: installing chromium (the report's browser test)" >&2
        { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
            || echo "install-deps: chromium could not be installed: the browser test will be skipped" >&2
    else
        echo "install-deps: no apt-get: chromium not installed, the browser test will be skipped" >&2
    fi
fi
