"""Writes a skeleton of the workspace into the folder given: the workspace's manifests and
lock file, every target with an empty source (and the template scheme's wheel files).
`scripts/rust-deps.sh` builds it to compile the third-party crates ftlab depends on (the
idea of cargo-chef)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

#: Where cargo looks for a target declared without a path, by its section.
FOLDERS = {"bench": "benches", "test": "tests", "bin": "src/bin", "example": "examples"}


def members() -> list[Path]:
    """The packages the build compiles: the workspace's members and the path dependencies
    outside it (the template scheme ftlab-core's tests link)."""
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]
    found = [ROOT / m for m in workspace["members"]]
    for member in list(found):
        manifest = tomllib.loads((member / "Cargo.toml").read_text())
        for section in ("dependencies", "dev-dependencies", "build-dependencies"):
            for spec in manifest.get(section, {}).values():
                if isinstance(spec, dict) and "path" in spec:
                    path = (member / spec["path"]).resolve()
                    if path not in found:
                        found.append(path)
    return found


def skeleton(scratch: Path) -> None:
    """The workspace's manifests in `scratch`, each target with an empty source."""
    for name in ("Cargo.toml", "Cargo.lock"):
        shutil.copy(ROOT / name, scratch / name)
    for member in members():
        manifest_text = (member / "Cargo.toml").read_text()
        manifest = tomllib.loads(manifest_text)
        target = scratch / member.relative_to(ROOT)
        (target / "src").mkdir(parents=True, exist_ok=True)
        (target / "Cargo.toml").write_text(manifest_text)
        # A crate outside the workspace has its own lock file; one built as a wheel (the
        # template scheme), its pyproject.toml and Python package.
        for extra in ("Cargo.lock", "pyproject.toml"):
            if (member / extra).exists():
                shutil.copy(member / extra, target / extra)
        if (member / "python").is_dir():
            shutil.copytree(member / "python", target / "python", dirs_exist_ok=True)
        (target / "src" / "lib.rs").write_text("")
        if (member / "build.rs").exists():
            (target / "build.rs").write_text("fn main() {}\n")
        for kind, folder in FOLDERS.items():
            for entry in manifest.get(kind, []):
                path = target / entry.get("path", f"{folder}/{entry['name']}.rs")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("fn main() {}\n")


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit("usage: rust_skeleton.py FOLDER")
    skeleton(Path(sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
