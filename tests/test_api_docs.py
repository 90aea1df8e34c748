"""The API reference (docs/api, Sphinx autodoc of the docstrings) builds with warnings as errors:
a docstring that docutils cannot parse, or a public name that cannot be imported, fails here."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_api_reference_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    out = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          str(ROOT / "docs" / "api"), str(tmp_path / "html")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    page = (tmp_path / "html" / "inference.html").read_text()
    # the reference holds the package's public functions, from their docstrings
    for name in ("nuejax.inference.impacts", "nuejax.inference.feldman_cousins", "nuejax.inference.newton_fit"):
        assert f'id="{name}"' in page, name
