"""The API works wherever Python runs: the Python examples of README.md and the Python API
guide (every ```python block, read from the files, so that they cannot drift) run as a
plain script with no main guard, through `python -` and in the REPL (`python -i` fed from
a pipe); the tutorial notebook (examples/tutorial.ipynb) runs in a real Jupyter kernel, its
results rendered as HTML tables and its plots as PNG figures.

Listings that name the reader's own files (a trace, a spec) are ```py blocks: shown, not
run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("README.md", "docs/guide/python.md")
NOTEBOOK = ROOT / "examples" / "tutorial.ipynb"


def examples() -> list[tuple[str, str]]:
    """(where, code) of every ```python block of `SOURCES`."""
    found = []
    for name in SOURCES:
        text = (ROOT / name).read_text()
        for i, block in enumerate(re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)):
            found.append((f"{name}#{i + 1}", block))
    return found


EXAMPLES = examples()


def test_there_are_examples_to_run() -> None:
    assert any(where.startswith("docs/guide/python.md") for where, _ in EXAMPLES)


def run(args: list[str], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], input=code, cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(("where", "code"), EXAMPLES, ids=[w for w, _ in EXAMPLES])
@pytest.mark.parametrize("how", ["script", "stdin", "repl"])
def test_example_runs(where: str, code: str, how: str, tmp_path: Path) -> None:
    if how == "script":
        (tmp_path / "example.py").write_text(code)  # no `if __name__ == "__main__":`
        done = run(["example.py"], "", tmp_path)
    elif how == "stdin":
        done = run(["-"], code, tmp_path)
    else:
        # The interactive interpreter goes on after an error (and exits 0): its traceback
        # on standard error is the failure.
        done = run(["-i"], code, tmp_path)
        assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert done.returncode == 0, f"{where} ({how}):\n{done.stderr}"


def test_tutorial_notebook_runs_in_a_jupyter_kernel(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)  # type: ignore[no-untyped-call]  # untyped
    # Stored without outputs: they are made here, in a kernel of this Python.
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # a cell that raises fails the test, naming the cell
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(o.output_type != "error" for c in code for o in c.outputs)

    def kinds(cell: nbformat.NotebookNode) -> set[str]:
        return {kind for o in cell.outputs for kind in o.get("data", {})}

    tagged = {
        tag: [c for c in code if tag in c.metadata.get("tags", [])] for tag in ("html", "figure")
    }
    assert len(tagged["html"]) >= 4 and len(tagged["figure"]) >= 2
    for cell in tagged["html"]:
        assert "text/html" in kinds(cell), cell.source
    for cell in tagged["figure"]:
        assert "image/png" in kinds(cell), cell.source
