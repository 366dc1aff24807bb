#!/usr/bin/env bash
# Stereo on the GPU (issue 24): the targets' measurements in one go, for the GPU machine.
#   - pair in memory -> disparities (cost volume, upload, all moves): tsukuba, venus (the dev
#     scenes) and a synthetic 450x375 scene with 60 labels (benches/stereo_synthetic.py), with
#     cuda-grid (the device engine, median of RUNS) and BK (one run) in the same process order;
#   - `segcut batch` of BATCH tsukuba pairs (benches/batch.sh stereo) with WORKERS workers per GPU
#     (a list: each value is run), on GPU 0 and on all GPUs;
# EVAL_FLAGS go to every stereo-eval (e.g. "--left-right off").
# Every line goes to stdout; JSON files go to OUT (default ./stereo-gpu-out).
#
#   SEGCUT=target/release/segcut DATA=../shared/data SYNTH=/tmp/synth450 benches/stereo_gpu.sh
set -uo pipefail
BIN=${SEGCUT:-target/release/segcut}
DATA=${DATA:-../shared/data}
OUTD=${OUT:-stereo-gpu-out}
RUNS=${RUNS:-5}
BATCH=${BATCH:-300}
WORKERS=${WORKERS:-4}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUTD"
nvidia-smi --query-gpu=index,name --format=csv,noheader || true
for solver in cuda-grid bk; do
  runs=$RUNS
  [ "$solver" = bk ] && runs=1
  # shellcheck disable=SC2086
  "$BIN" stereo-eval "$DATA/stereo" --solver "$solver" --runs "$runs" ${EVAL_FLAGS:-} \
    --json "$OUTD/dev-$solver${TAG:-}.json"
  if [ -n "${SYNTH:-}" ]; then
    # shellcheck disable=SC2086
    "$BIN" stereo-eval "$SYNTH" --gt-scale 4 --solver "$solver" --runs "$runs" ${EVAL_FLAGS:-} \
      --json "$OUTD/synth-$solver${TAG:-}.json"
  fi
done
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
for w in $WORKERS; do
  [ "$BATCH" -gt 0 ] || break
  SEGCUT="$BIN" DATA="$DATA" STEREO="$BATCH" bash "$HERE/batch.sh" stereo --gpus 0 \
    --workers-per-gpu "$w" --solver cuda-grid
  if [ "$ngpu" -gt 1 ]; then
    SEGCUT="$BIN" DATA="$DATA" STEREO="$BATCH" bash "$HERE/batch.sh" stereo --gpus all \
      --workers-per-gpu "$w" --solver cuda-grid
  fi
done
