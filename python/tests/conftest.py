"""Shared fixtures: the GPU gate and PyMaxflow (the reference the cross-checks compare with)."""

import os

import pytest

import segcut


def require_gpu():
    """Skips the calling test without a usable GPU, unless SEGCUT_REQUIRE_GPU=1 (the GPU
    machine), where a missing GPU is a failure."""
    why = segcut.gpu_unavailable_reason()
    if why is None:
        return
    if os.environ.get("SEGCUT_REQUIRE_GPU") == "1":
        pytest.fail(f"SEGCUT_REQUIRE_GPU=1 but no usable GPU: {why}")
    pytest.skip(f"no usable GPU: {why}")


@pytest.fixture
def gpu():
    require_gpu()


@pytest.fixture(scope="session")
def maxflow_ref():
    """PyMaxflow, required when SEGCUT_REQUIRE_PYMAXFLOW=1 (CI), else skipped if missing."""
    if os.environ.get("SEGCUT_REQUIRE_PYMAXFLOW") == "1":
        import maxflow

        return maxflow
    return pytest.importorskip("maxflow")
