#!/usr/bin/env bash
# On the GPU machine (Python, no Rust, no network): installs the segcut wheel built elsewhere and
# the numpy / pytest / PyMaxflow wheels for this interpreter (python/dist/pyXY, made by
# python/bench/make_dist.sh) offline, then runs the package's tests with the GPU and PyMaxflow
# required, the grid benchmark (segcut CPU and GPU vs PyMaxflow) and the 36 MP segmentation.
# Results go to $OUT (or ./gpu-out).
set -euo pipefail
cd "$(dirname "$0")/../.."
DIST="$PWD/python/dist"
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
VER=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
"$PY" --version
WHEELS="$DIST/py$VER"
[ -d "$WHEELS" ] || { echo "no wheels for Python $VER in $DIST (have: $(ls "$DIST"))"; exit 1; }
ENV_DIR="${TMPDIR:-/tmp}/segcut-pyenv"
rm -rf "$ENV_DIR"
if "$PY" -m venv "$ENV_DIR" 2>/dev/null && [ -x "$ENV_DIR/bin/pip" ]; then
    PYRUN="$ENV_DIR/bin/python"
    "$PYRUN" -m pip install -q --no-index --find-links "$WHEELS" "$DIST"/segcut-*.whl numpy pytest PyMaxflow networkx matplotlib pillow
else
    # No venv (or no ensurepip): a plain target folder on PYTHONPATH.
    rm -rf "$ENV_DIR"
    "$PY" -m pip install -q --no-index --target "$ENV_DIR" --find-links "$WHEELS" "$DIST"/segcut-*.whl numpy pytest PyMaxflow networkx matplotlib pillow
    export PYTHONPATH="$ENV_DIR"
    PYRUN="$PY"
fi
export SEGCUT_REQUIRE_GPU=1 SEGCUT_REQUIRE_PYMAXFLOW=1
SEGCUT_PYMAXFLOW_SDIST="$(ls "$DIST"/pymaxflow/*.tar.gz)"
export SEGCUT_PYMAXFLOW_SDIST
# From the repository root, so that python/segcut (the source, without the native module) is not
# what gets imported: the installed wheel runs.
"$PYRUN" -c "import segcut; print('segcut from', segcut.__file__); print('GPU:', segcut.gpu_unavailable_reason() or 'usable')"
status=0
"$PYRUN" -m pytest -q -p no:cacheprovider python/tests 2>&1 | tee "$OUT/pytest.txt" || status=1
"$PYRUN" python/bench/bench_grid.py --repeat "${REPEAT:-2}" --engines segcut-bk,segcut-gpu,segcut-auto,pymaxflow \
    --json "$OUT/bench_grid.json" | tee "$OUT/bench_grid.md" || status=1
"$PYRUN" python/bench/bench_compat.py --repeat "${REPEAT:-2}" | tee "$OUT/bench_compat.md" || status=1
"$PYRUN" python/bench/bench_segment.py --mpx 36 --connectivity 8 | tee "$OUT/segment_36mp.json" || status=1
exit $status
