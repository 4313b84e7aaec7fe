"""Sphinx configuration of torch-backend's documentation site (`nox -s docs` builds it into build/docs)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The API reference documents core's Python sources as they are in this tree
# (importing them needs torch, not core's compiled parts).
sys.path.insert(0, str(ROOT / "packages" / "torch-backend-core" / "src"))

project = "torch-backend"
author = "the torch-backend authors"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# Pages are the Markdown files below; the README is included piecewise.
exclude_patterns = ["bench/profile.md", "bench/gpu-*/**"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
html_theme = "alabaster"
html_title = "torch-backend"
