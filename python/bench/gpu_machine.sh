#!/usr/bin/env bash
# On the GPU machine (Python, no Rust, no network): installs the segcut wheel built elsewhere and
# the numpy / pytest / PyMaxflow wheels downloaded beside it (python/dist, made by
# python/bench/make_dist.sh), then runs the package's tests with the GPU required and the
# benchmarks. Results go to $OUT (or ./gpu-out).
set -euo pipefail
cd "$(dirname "$0")/../.."
DIST="$PWD/python/dist"
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
"$PY" --version
ENV_DIR="${TMPDIR:-/tmp}/segcut-pyenv"
rm -rf "$ENV_DIR"
if "$PY" -m venv "$ENV_DIR" 2>/dev/null; then
    BIN="$ENV_DIR/bin"
    PYRUN="$BIN/python"
    "$PYRUN" -m pip install -q --no-index --find-links "$DIST/wheels" "$DIST"/segcut-*.whl numpy pytest PyMaxflow
else
    # No venv module: a plain target folder on PYTHONPATH.
    "$PY" -m pip install -q --no-index --target "$ENV_DIR" --find-links "$DIST/wheels" "$DIST"/segcut-*.whl numpy pytest PyMaxflow
    export PYTHONPATH="$ENV_DIR"
    PYRUN="$PY"
fi
export SEGCUT_REQUIRE_GPU=1 SEGCUT_REQUIRE_PYMAXFLOW=1
# From the repository root, so that python/segcut (the source, without the native module) is
# not on the path: the installed wheel is what runs.
"$PYRUN" -c "import segcut, sys; print('segcut from', segcut.__file__); print('GPU:', segcut.gpu_unavailable_reason() or 'usable')"
"$PYRUN" -m pytest -q -p no:cacheprovider python/tests 2>&1 | tee "$OUT/pytest.txt"
"$PYRUN" python/bench/bench_grid.py --engines segcut-bk,segcut-gpu,segcut-auto,pymaxflow \
    --json "$OUT/bench_grid.json" | tee "$OUT/bench_grid.md"
"$PYRUN" python/bench/bench_segment.py --mpx 36 --connectivity 8 | tee "$OUT/segment_36mp.json"
