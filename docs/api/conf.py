"""Sphinx configuration of the API reference (built from the docstrings; tests/test_api_docs.py
builds it with warnings as errors):

    python -m sphinx -W --keep-going -b html docs/api docs/api/_build
"""

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

project = "nuejax"
author = "the nuejax developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"  # the signatures show the defaults; the docstrings say the types
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
