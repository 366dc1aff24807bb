#!/bin/sh
# Leave-one-scene-out selection of the stereo defaults: every candidate runs on every scene of
# the data folder (CPU, BK) and prints one row per candidate and scene; docs/stereo.md shows the
# choice (best mean nonocc) and, per scene, the score of the candidate best on the other scene.
# Usage: benches/stereo_cv.sh [SEGCUT] [DATA] > cv.tsv
SEGCUT=${1:-target/release/segcut}
DATA=${2:-../shared/data/stereo}
printf 'data\tlambda\tcensus_weight\tsmoothness\tscene\tnonocc\tall\tdisc\n'
for data in bt-census; do
  for lambda in 10 20 30 40; do
    for cw in 0.5 1 2; do
      for sm in potts linear:2; do
        "$SEGCUT" stereo-eval "$DATA" --solver bk --data "$data" --lambda "$lambda" \
          --census-weight "$cw" --smoothness "$sm" |
          awk -v d="$data" -v l="$lambda" -v c="$cw" -v s="$sm" \
            '{print d "\t" l "\t" c "\t" s "\t" $1 "\t" $3 "\t" $6 "\t" $9}'
      done
    done
  done
done
