#!/usr/bin/env bash
# Builds what python/bench/gpu_machine.sh installs offline: the abi3 segcut wheel (one wheel for
# every CPython ≥ 3.9 on x86-64 Linux) and wheels of numpy, pytest and PyMaxflow for CPython
# 3.10, 3.11 and 3.12 (the GPU machine's version is not known in advance), in python/dist.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf dist
maturin build --release --strip --out dist
for v in 3.10 3.11 3.12; do
    pip download -q --only-binary=:all: --python-version "$v" \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
        -d dist/wheels numpy pytest PyMaxflow exceptiongroup tomli
done
du -sh dist dist/wheels
