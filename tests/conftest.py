"""Shared pytest configuration."""

from __future__ import annotations

import os

# Tests run beside notebooks and other workers on 2 cores: keep torch from oversubscribing.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys
from pathlib import Path

# The book's Sphinx extension (book/_ext) is not part of posenc: make it importable for its tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
