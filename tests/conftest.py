"""Shared pytest configuration."""

from __future__ import annotations

import os

# Tests run beside notebooks and other workers on 2 cores: keep torch from oversubscribing.
os.environ.setdefault("OMP_NUM_THREADS", "1")
