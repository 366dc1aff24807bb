#!/usr/bin/env bash
# Batch throughput benchmark for `segcut batch` (issue 14). Prints one line per run:
#   what, jobs, seconds, jobs/s, peak RSS, and the summary's per-phase totals.
#
#   benches/batch.sh seg     [BATCH FLAGS...]  # 39 dev photos x 2 scribble sets, repeated REPEAT times
#   benches/batch.sh maxflow [BATCH FLAGS...]  # a folder of tsukuba-size grid .max files (+ the crops)
#   benches/batch.sh stereo  [BATCH FLAGS...]  # tsukuba (16 disparities) repeated STEREO times
#   benches/batch.sh rss     [BATCH FLAGS...]  # peak RSS for 100 and 10000 jobs (max-flow) and
#                                              # 100 and RSS_SEG_BIG segmentation jobs
#
# Environment: SEGCUT (binary, default target/release/segcut), DATA (default ../shared/data),
# REPEAT (segmentation repeats, default 4 = 312 jobs), MAXJOBS (max-flow jobs, default 200),
# RSS_SEG_BIG (default 1000), KEEP=1 keeps the work folder. Flags after the mode go to
# `segcut batch` (e.g. --gpus none --threads 2, --gpus 0, --gpus all, --pack 8).
set -euo pipefail
mode=${1:-seg}
shift || true
BIN=${SEGCUT:-target/release/segcut}
DATA=$(cd "${DATA:-../shared/data}" && pwd) # absolute: manifests resolve paths from their folder
REPEAT=${REPEAT:-4}
MAXJOBS=${MAXJOBS:-200}
RSS_SEG_BIG=${RSS_SEG_BIG:-1000}
STEREO=${STEREO:-20}
WORK=$(mktemp -d)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT

# seg_manifest FILE COUNT: COUNT segmentation jobs cycling over the 39 photos x 2 scribble sets.
seg_manifest() {
  local file=$1 count=$2 n=0 rows=()
  for set in "$DATA"/segmentation/grabcut-bsds-dev "$DATA"/segmentation/grabcut-extra-dev; do
    for s in 1 2; do
      for img in "$set"/images/*; do
        stem=$(basename "${img%.*}")
        seeds=$(ls "$set/scribbles-$s/$stem"[-_.]* 2>/dev/null | head -1 || true)
        [ -n "$seeds" ] && rows+=("$img,$seeds")
      done
    done
  done
  echo "id,image,seeds" > "$file"
  while [ $n -lt "$count" ]; do
    for r in "${rows[@]}"; do
      [ $n -lt "$count" ] || break
      echo "j$n,$r" >> "$file"
      n=$((n + 1))
    done
  done
  echo "${#rows[@]}"
}

# max_manifest FILE COUNT MAXFILE: COUNT jobs that all read MAXFILE.
max_manifest() {
  local file=$1 count=$2 max=$3
  { echo "id,max"; for i in $(seq 1 "$count"); do echo "m$i,$max"; done; } > "$file"
}

# run WHAT JOBS INPUT...: one timed batch run and its line.
run() {
  local what=$1 jobs=$2
  shift 2
  local out="$WORK/out-$RANDOM"
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$BIN" batch -q "$@" -o "$out" || true
  # The last line: time puts "Command exited with non-zero status 1" first when a job failed.
  read -r secs rss < <(tail -1 "$WORK/time")
  local sums
  sums=$(awk -F, 'NR > 1 { ok += ($3 == "ok"); fail += ($3 == "failed"); r += $9; s += $10; w += $11 }
    END { printf "ok %d failed %d | phase totals: read %.0f ms, solve %.0f ms, write %.0f ms", ok, fail, r, s, w }' \
    "$out/summary.csv")
  local solver
  solver=$(awk -F, 'NR > 1 { print $5 "@" $6 }' "$out/summary.csv" | sort | uniq -c | sort -rn | head -3 | awk '{printf "%s%s x%d", (NR>1?", ":""), $2, $1}')
  awk -v w="$what" -v j="$jobs" -v s="$secs" -v m="$rss" -v x="$sums" -v v="$solver" 'BEGIN {
    printf "%-34s %6d jobs %8.2f s %8.1f jobs/s  peak RSS %7.1f MB  %s  [%s]\n", w, j, s, j / (s > 0 ? s : 1e-9), m / 1024, x, v }'
  rm -rf "$out"
}

echo "# segcut batch benchmark: $(date -u +%FT%TZ) on $(hostname), $(nproc) cores; flags: $*"
case "$mode" in
  seg)
    jobs=$((78 * REPEAT))
    photos=$(seg_manifest "$WORK/seg.csv" "$jobs")
    run "segment ($photos photo+scribble pairs)" "$jobs" "$WORK/seg.csv" "$@"
    ;;
  maxflow)
    mkdir -p "$WORK/max"
    for s in 1 2 3 4; do
      "$BIN" gen grid "2d:384x288:n4:c10:s$s" -o "$WORK/max/grid$s.max" > /dev/null
    done
    i=0
    while [ $i -lt "$MAXJOBS" ]; do
      for s in 1 2 3 4; do
        [ $i -lt "$MAXJOBS" ] && ln "$WORK/max/grid$s.max" "$WORK/max/copy$i.max"
        i=$((i + 1))
      done
    done
    rm "$WORK"/max/grid?.max
    run "maxflow (384x288 N4 grids)" "$MAXJOBS" "$WORK/max" "$@"
    run "maxflow (384x288 N4 grids) --pack 8" "$MAXJOBS" "$WORK/max" --pack 8 "$@"
    max_manifest "$WORK/crops.csv" "$MAXJOBS" "$DATA/waterloo/tsukuba_crop_64x64.max"
    run "maxflow (tsukuba 64x64 crop)" "$MAXJOBS" "$WORK/crops.csv" "$@"
    run "maxflow (tsukuba 64x64 crop) --pack 16" "$MAXJOBS" "$WORK/crops.csv" --pack 16 "$@"
    ;;
  stereo)
    t="$DATA/stereo/tsukuba"
    { echo "id,left,right,disparities"
      for i in $(seq 1 "$STEREO"); do echo "t$i,$t/imL.png,$t/imR.png,16"; done; } > "$WORK/stereo.csv"
    run "stereo (tsukuba 384x288, 16 disp.)" "$STEREO" "$WORK/stereo.csv" "$@"
    ;;
  rss)
    for n in 100 10000; do
      max_manifest "$WORK/m$n.csv" "$n" "$DATA/waterloo/tsukuba_crop_16x16.max"
      run "rss: maxflow 16x16 crop" "$n" "$WORK/m$n.csv" "$@"
    done
    for n in 100 "$RSS_SEG_BIG"; do
      seg_manifest "$WORK/s$n.csv" "$n" > /dev/null
      run "rss: segment dev photos" "$n" "$WORK/s$n.csv" "$@"
    done
    ;;
  *) echo "usage: $0 seg|maxflow|stereo|rss [segcut batch flags]" >&2; exit 2 ;;
esac
