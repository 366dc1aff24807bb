#!/bin/sh
# The heavy evaluations of issue 25's enclosure-scaled prior, in one place, for a many-core host
# with only the `segcut` binary and a POSIX sh (no Rust, no Python needed).
#
# Usage:
#   sh benches/prior25_run.sh SEGCUT DATA SYNTH OUT [PART ...]
#     SEGCUT  the segcut binary (release build of this commit)
#     DATA    the folder holding segmentation/grabcut-bsds-dev and segmentation/grabcut-extra-dev
#             (../shared/data from a checkout)
#     SYNTH   the synthetic strokes of benches/synth_strokes.py (synth-sparse/n1/<name>-anno.png,
#             ...); only the stroke PNGs are read, the photos and ground truth come from DATA
#     OUT     where everything is written (created; nothing is written elsewhere)
#     PART    any of: dev synth-sparse synth-dense coverage (default: the first three, in that
#             order; `coverage` is the later coverage-factor run: its four dev candidates and
#             the chosen one on the dense synthetic strokes)
#
# The candidates were fixed before any result was seen (docs/segmentation.md, "A prior that
# follows the strokes' enclosure"): no prior; γ 10 with the enclosure exponent k in
# {0 (today's default), 2, 4, 8, 16}; γ 15 with k in {4, 8}. Every run cuts with BK and writes
# per-case scores (`--json`) that benches/nested_cv.py and benches/synth_table.py read.
# `segcut eval --cv` uses every core; each part writes a log with its wall time.
set -eu

if [ $# -lt 4 ]; then
    echo "usage: $0 SEGCUT DATA SYNTH OUT [dev] [synth-sparse] [synth-dense] [coverage]" >&2
    exit 2
fi
SEGCUT=$1
DATA=$2
SYNTH=$3
OUT=$4
shift 4
PARTS=${*:-dev synth-sparse synth-dense}

abs() { (cd "$1" && pwd); }
DATA=$(abs "$DATA")
SYNTH=$(abs "$SYNTH")
mkdir -p "$OUT"
OUT=$(abs "$OUT")
SEG=$DATA/segmentation
for d in "$SEG/grabcut-bsds-dev" "$SEG/grabcut-extra-dev"; do
    [ -d "$d/images" ] || { echo "$d/images: not found (DATA must hold segmentation/...)" >&2; exit 2; }
done

{
    echo "segcut: $("$SEGCUT" --version)"
    echo "host: $(uname -a)"
    echo "cores: $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?')"
    echo "start: $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
} > "$OUT/host.txt"

# One `eval --cv` run: NAME, then the eval arguments. Logs its wall time.
run() {
    name=$1
    shift
    t0=$(date +%s)
    echo "== $name: $SEGCUT eval $*" > "$OUT/$name.log"
    nice "$SEGCUT" eval "$@" --folds 5 --solver bk --json "$OUT/$name.json" >> "$OUT/$name.log" 2>&1 ||
        echo "!! $name failed: exit $?" | tee -a "$OUT/$name.log" >&2
    t1=$(date +%s)
    echo "== $name: $((t1 - t0)) s wall" | tee -a "$OUT/$name.log"
}

# The three grids (8 candidates); ARGS: the datasets and scribble folders.
grids() {
    prefix=$1
    shift
    run "$prefix-p0" "$@" --grid prior=0
    run "$prefix-g10" "$@" --grid prior=10 --grid prior-enclosure=0,2,4,8,16
    run "$prefix-g15" "$@" --grid prior=15 --grid prior-enclosure=4,8
}

# The synthetic datasets in the --cv layout: the strokes from SYNTH, photos and ground truth
# from DATA (linked), under OUT/synth-data (removed at the end).
layout() {
    style=$1
    root=$OUT/synth-data/synth-$style
    rm -rf "$root"
    mkdir -p "$root/images" "$root/gt"
    for dn in "$SYNTH/synth-$style"/n*; do
        [ -d "$dn" ] && ln -s "$dn" "$root/$(basename "$dn")"
    done
    first=$(ls -d "$SYNTH/synth-$style"/n* | head -n 1)
    for a in "$first"/*-anno.png; do
        name=$(basename "$a" -anno.png)
        found=
        for set in grabcut-bsds-dev grabcut-extra-dev; do
            for ext in jpg png; do
                if [ -f "$SEG/$set/images/$name.$ext" ]; then
                    ln -s "$SEG/$set/images/$name.$ext" "$root/images/$name.$ext"
                    ln -s "$SEG/$set/gt/$name.png" "$root/gt/$name.png"
                    found=1
                fi
            done
        done
        [ -n "$found" ] || { echo "$name: no photo in $SEG" >&2; exit 2; }
    done
}

for part in $PARTS; do
    case $part in
    dev)
        grids dev --cv "$SEG/grabcut-bsds-dev" --cv "$SEG/grabcut-extra-dev"
        ;;
    synth-sparse)
        layout sparse
        grids synth-sparse --cv "$OUT/synth-data/synth-sparse" --scribbles n1,n3,n3-wrong
        ;;
    synth-dense)
        layout dense
        grids synth-dense --cv "$OUT/synth-data/synth-dense" --scribbles n4,n8,n8-wrong
        ;;
    coverage)
        # The coverage threshold c0 (docs/segmentation.md, "A prior that steps back for strokes
        # that cover much of the image"), fixed before the run; the sparse synthetic strokes
        # cover less than 2.5 %, where the factor is exactly 1, so only the dense style is run.
        run dev-cov --cv "$SEG/grabcut-bsds-dev" --cv "$SEG/grabcut-extra-dev" \
            --grid prior=15 --grid prior-enclosure=8 --grid prior-coverage=0.015,0.02,0.025,0.03
        layout dense
        run synth-dense-cov --cv "$OUT/synth-data/synth-dense" --scribbles n4,n8,n8-wrong \
            --grid prior=15 --grid prior-enclosure=8 --grid prior-coverage=0.025
        ;;
    *)
        echo "unknown part '$part' (dev, synth-sparse, synth-dense, coverage)" >&2
        exit 2
        ;;
    esac
done
rm -rf "$OUT/synth-data"
echo "end: $(date -u '+%Y-%m-%dT%H:%M:%SZ')" >> "$OUT/host.txt"
