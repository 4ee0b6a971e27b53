"""Shared pytest configuration."""

from __future__ import annotations

import os

# Tests run beside notebooks and other workers on 2 cores: keep torch from oversubscribing.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The same matrix kernels as the stored runs, so re-trained models match them bit for bit
# (posenc.runtime explains why); set before any test runs a matrix product.
from posenc.runtime import pin_cpu_kernels  # noqa: E402

pin_cpu_kernels()

