"""NVRTC from the ``nvidia-cuda-nvrtc`` wheel is found without LD_LIBRARY_PATH: segcut's CUDA
layer (cudarc, which opens libnvrtc by name) reports its version after ``import segcut``."""

import os
import subprocess
import sys

import pytest


def test_nvrtc_from_the_pypi_wheel():
    """In a child process without LD_LIBRARY_PATH, so that only segcut's own search can find
    it. Needs the wheel on sys.path (``pip install nvidia-cuda-nvrtc``, or PYTHONPATH at a
    ``pip install --target`` folder); required in CI (SEGCUT_REQUIRE_NVRTC=1)."""
    found = any(os.path.isfile(os.path.join(p or ".", "nvidia", "cu13", "lib", "libnvrtc.so.13")) for p in sys.path)
    if not found:
        if os.environ.get("SEGCUT_REQUIRE_NVRTC") == "1":
            pytest.fail("SEGCUT_REQUIRE_NVRTC=1 but no nvidia/cu13/lib/libnvrtc.so.13 on sys.path")
        pytest.skip("the nvidia-cuda-nvrtc wheel is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "SEGCUT_NVRTC")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    code = "import segcut; print(segcut.NVRTC_PATH); print(segcut.nvrtc_version())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0].endswith("libnvrtc.so.13"), out
    major = int(out[1].strip("()").split(",")[0])
    assert major == 13, out
