"""ext4 on `ftlab serve`. This kernel has no nbd module, so the export is made a file by
nbdfuse (libnbd-bin) and that file a block device by losetup: mkfs.ext4, mount, copy a tree
of files in, unmount, e2fsck clean; then the server is shut down cleanly and restarted
over its store, the file system mounted again and every file's checksum compared. Where
loop devices or mount are not allowed (an unprivileged sandbox), the test takes the path
that needs neither: debugfs writes the files into the image and dumps them back."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from nbd_helpers import Served, need, wait_for

TREE = Path(__file__).resolve().parents[2] / "crates" / "ftlab-core" / "src"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def checksums(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@contextlib.contextmanager
def fuse_file(served: Served, where: Path) -> Iterator[Path]:
    """The export as a file, through nbdfuse."""
    where.mkdir(exist_ok=True)
    proc = subprocess.Popen([need("nbdfuse", "libnbd-bin"), str(where), served.uri])
    try:
        wait_for(lambda: (where / "nbd").exists(), 30)
        yield where / "nbd"
    finally:
        run("fusermount3", "-u", str(where))
        proc.wait(30)


@contextlib.contextmanager
def mounted(image: Path, at: Path) -> Iterator[Path]:
    loop = run("losetup", "-f", "--show", str(image))
    if loop.returncode != 0:
        raise PermissionError(loop.stderr)
    dev = loop.stdout.strip()
    try:
        at.mkdir(exist_ok=True)
        m = run("mount", dev, str(at))
        if m.returncode != 0:
            raise PermissionError(m.stderr)
        try:
            yield at
        finally:
            assert run("umount", str(at)).returncode == 0
    finally:
        run("losetup", "-d", dev)


def test_ext4_tree_round_trip(tmp_path: Path) -> None:
    for tool, package in [("mkfs.ext4", "e2fsprogs"), ("debugfs", "e2fsprogs")]:
        need(tool, package)
    need("nbdfuse", "libnbd-bin")
    need("fusermount3", "fuse3")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing: FUSE is not available here")
    store = tmp_path / "store"
    expected = checksums(TREE)
    served = Served(store, extra=["--verify"])
    try:
        with fuse_file(served, tmp_path / "fuse") as image:
            assert run("mkfs.ext4", "-q", "-F", str(image)).returncode == 0
            try:
                with mounted(image, tmp_path / "mnt") as mnt:
                    subprocess.run(["cp", "-r", str(TREE), str(mnt / "tree")], check=True)
                path = "mount"
            except PermissionError:
                # No loop devices or mount here: debugfs writes the files into the image.
                path = "debugfs"
                cmds = ["mkdir tree"]
                for rel in expected:
                    parts = Path(rel).parts
                    for i in range(1, len(parts)):
                        cmds.append("mkdir tree/" + "/".join(parts[:i]))
                    cmds.append(f"write {TREE / rel} tree/{rel}")
                with tempfile.NamedTemporaryFile("w", suffix=".cmds", delete=False) as f:
                    f.write("\n".join(cmds) + "\n")
                assert run("debugfs", "-w", "-f", f.name, str(image)).returncode == 0
            fsck = run("e2fsck", "-fn", str(image))
            assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    finally:
        assert served.stop() == 0, served.text()
    # Reopened over its store after a clean shutdown: the same files.
    served = Served(store, extra=["--verify"])
    try:
        with fuse_file(served, tmp_path / "fuse") as image:
            if path == "mount":
                with mounted(image, tmp_path / "mnt") as mnt:
                    assert checksums(mnt / "tree") == expected
            else:
                out = tmp_path / "out"
                out.mkdir()
                assert run("debugfs", "-R", f"rdump tree {out}", str(image)).returncode == 0
                assert checksums(out / "tree") == expected
            fsck = run("e2fsck", "-fn", str(image))
            assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    finally:
        assert served.stop() == 0, served.text()
    assert "reopened after a clean shutdown" in served.text()
