#!/usr/bin/env bash
# Builds what python/bench/gpu_machine.sh installs offline on a machine without Rust or network:
#   python/dist/segcut-*.whl   the abi3 wheel (every CPython >= 3.9 on x86-64 Linux), built with
#                              zig against manylinux2014 (glibc 2.17) when ziglang is installed,
#                              else against this machine's glibc;
#   python/dist/pyXY/          numpy, pytest, PyMaxflow, networkx, matplotlib, pillow and their
#                              dependencies for CPython X.Y (3.10, 3.11, 3.12: the target's version
#                              is not known in advance);
#   python/dist/pymaxflow/     PyMaxflow's sdist, whose examples the tests run (needs setuptools,
#                              wheel and cython here: pip reads its metadata without building).
# Carry python/dist/segcut-*.whl (or all of python/dist/*.whl) and the pyXY folder that matches the
# target's `python3 --version` (about 18 MB each).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf dist
if python3 -c "import ziglang" 2>/dev/null; then
    maturin build --release --strip --zig --compatibility manylinux2014 --out dist
else
    maturin build --release --strip --out dist
fi
for v in 3.10 3.11 3.12; do
    pip download -q --only-binary=:all: --python-version "$v" \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
        -d "dist/py${v/./}" numpy pytest PyMaxflow exceptiongroup tomli networkx matplotlib pillow
done
pip download -q --no-deps --no-binary :all: --no-build-isolation PyMaxflow==1.3.2 -d dist/pymaxflow
du -sh dist/*
