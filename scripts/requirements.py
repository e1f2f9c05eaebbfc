"""Prints the Python packages pyproject.toml lists (the project's dependencies and those of
the extras named as arguments), one per line, for `pip install`: the test command installs
them without building ftlab's wheel, since it builds the core once for the Rust tests and the
Python tests alike (scripts/test.sh)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9 and 3.10
    import tomli as tomllib


def requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    found: list[str] = list(project["dependencies"])
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            sys.exit(f"requirements.py: pyproject.toml has no extra {extra!r}")
        found += optional[extra]
    return found


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
