#!/bin/sh
# Leave-one-scene-out selection of the stereo defaults: every candidate runs on every scene of
# the data folder (CPU, BK); scripts/.. picks, for each scene, the candidate best on the OTHER
# scenes and reports that candidate's score on the held-out scene (see docs/stereo.md).
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
