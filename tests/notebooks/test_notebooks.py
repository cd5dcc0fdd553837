"""The three notebooks: stored without outputs, and executed end to end (nbclient) on the embedded default.

Execution uses small settings (TTSCALE_NOTEBOOK_SMALL=1: a few problems, short samples); each notebook
starts one engine of its own in its kernel. A cell that raises fails the test with the cell's traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = ("01_quickstart.ipynb", "02_scaling_laws.ipynb", "03_compute_optimal.ipynb")


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_are_stored_without_outputs(name: str) -> None:
    notebook = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code, f"{name} has no code"
    assert all(cell["outputs"] == [] and cell["execution_count"] is None for cell in code), (
        f"{name} carries outputs: clear them before committing"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    # The kernel inherits this environment: small settings, runs written under tmp_path.
    monkeypatch.setenv("TTSCALE_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("TTSCALE_NOTEBOOK_OUT", str(tmp_path / "runs"))
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError, with the failing cell's traceback, if any cell errors
    text = _outputs(notebook)
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir() if (p / "results.jsonl").is_file())
    if name.startswith("01"):
        assert runs == ["best_of_n", "self_consistency", "self_consistency-2x"]
        report = (tmp_path / "runs" / "report.html").read_text(encoding="utf-8")
        assert "Not budget-matched" in report and "<svg" in report and "WARNING: Not budget-matched" in text
    elif name.startswith("02"):
        assert runs == ["pool"]
        assert "coverage(k) = exp(a·k^b)" in text and "N* =" in text
    else:
        assert len(runs) == 4 and "routed by difficulty" in text


def _outputs(notebook: object) -> str:
    parts = []
    for cell in notebook.cells:  # type: ignore[attr-defined]
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_use_the_public_api_only(name: str) -> None:
    notebook = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    code = "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code")
    for internal in ("ttscale.engine", "ttscale.runner", "ttscale.runstore.storage"):
        assert internal not in code, f"{name} reaches into {internal}"
    assert "ttscale.run(" in code and "ttscale.Engine(" in code


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_do_not_wait_for_commands_that_exist(name: str) -> None:
    # Notebook 03 said "Once `ttscale sweep` lands" long after it had.
    notebook = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    prose = " ".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    assert "lands (issue" not in prose and "once `ttscale sweep`" not in prose.lower()
