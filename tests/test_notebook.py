"""CI executes the walkthrough notebook end to end, and every figure it draws is displayed."""

import re
from pathlib import Path

import pytest

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "walkthrough.ipynb"
#: A code cell that draws: pyplot calls, nuejax.plotting's plot_spectrum, a result's .plot().
DRAWS = re.compile(r"\bplt\.|\bplot_spectrum\(|\.plot\(")


def _images(cell) -> int:
    return sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


@pytest.mark.slow
def test_walkthrough_notebook_runs_and_shows_every_figure(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = "".join(o.get("text", "") for c in code for o in c.get("outputs", []))
    assert "90% CL interval" in outputs and "max relative difference fast vs general" in outputs
    assert "upper limit" in outputs
    drawing = [i for i, c in enumerate(code) if DRAWS.search(c.source)]
    assert len(drawing) == 4  # spectra, fitted spectrum, profile scans, batched grid
    # each draws one figure, displayed inline exactly once (importing nuejax.plotting must not
    # switch matplotlib to a non-interactive backend)
    assert {i: _images(code[i]) for i in drawing} == {i: 1 for i in drawing}
    assert sum(_images(c) for c in code) == 4
