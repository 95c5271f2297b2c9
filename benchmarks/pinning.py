"""Pinning a benchmark to a few CPU cores (the speed targets are per core)."""

from __future__ import annotations

import os


def pin_cores(cores: int) -> None:
    """Run this process on its first ``cores`` allowed CPU cores, with Mesa's llvmpipe
    rasteriser and the BLAS/OpenMP pools limited to as many threads; 0 = no pinning."""
    if cores <= 0:
        return
    os.environ["LP_NUM_THREADS"] = str(cores)  # llvmpipe rasteriser threads
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(cores)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
