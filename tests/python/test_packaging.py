"""The wheel's build settings: the test command imports the tree's modules with a test-profile
extension instead of building the wheel (scripts/test.sh), so what `pip install .` relies
on is checked here: maturin's manifest, module name and Python source, and the package data
the wheel must carry."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_maturin_builds_the_extension_the_package_imports() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    maturin = project["tool"]["maturin"]
    manifest = tomllib.loads((ROOT / maturin["manifest-path"]).read_text())
    # `ftlab._core`: the crate's library is `_core`, inside the package `ftlab`.
    package, module = maturin["module-name"].split(".")
    assert manifest["lib"]["name"] == module
    assert "cdylib" in manifest["lib"]["crate-type"]
    source = ROOT / maturin["python-source"] / package
    assert (source / "__init__.py").is_file()
    assert (source / f"{module}.pyi").is_file()
    assert (source / "py.typed").is_file()
    assert maturin.get("profile", "release") == "release"
    # The command the Quickstart runs.
    assert project["project"]["scripts"]["ftlab"] == "ftlab.cli:main"
