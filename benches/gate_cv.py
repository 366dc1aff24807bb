#!/usr/bin/env python3
"""Nested cross-validation of the first fit's gate (issue 25): the gated first fit
(`--initial nearer-background --initial-enclosure 0.8`) with the stroke check (`--stroke-check
0.5`), gated also by the strokes' coverage (`--initial-coverage C1`) and handing the background
only the pixels its strokes reach first by a margin (`--initial-margin T`), over the dev
scribbles and the synthetic strokes together.

Per-case scores are composed, never guessed:
- coverage above C1 (the strokes' coverage after the check, from the dropped strokes of
  `--strokes TSV` and the photo sizes): the mask is the seeds' first fit with the check, i.e.
  the seeds' check subset run (`--subset`, initial=seeds) or, where the check drops nothing,
  today's default;
- T = 0: the gated fit with the check as in benches/stroke_cv.py (the gated check subset runs,
  else the always-on rule where E <= 0.8 and the default elsewhere);
- T > 0: the real runs of `--margin RUN.json` (grid initial-margin, on every case where the gate
  can fire or the check drops a stroke, coverage up to 6 %); the other cases are the default's.

Families (fixed before the run): "seeds" (today's default); "E gate" (the last session's
fitted rule: E0 0.8, check 0.5, no coverage gate, T 0); "E and coverage gate" (E0 0.8, check
0.5, C1 in {3, 4, 5} %, T in {0, 0.2, 0.4}). Folds, selection and nested rule as in
benches/initial_cv.py (mean error over all training cases, dev and synthetic alike).

Usage:
    python3 benches/gate_cv.py --enclosure enclosure.txt --default ... --rule ... \
        --subset SUB.json ... --margin MARGIN.json ... --strokes strokes-rho0.5.tsv \
        --data ../shared/data/segmentation [--reference NAME=FILE[:LABEL],...]
"""

import argparse
import json
import os
import sys

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from initial_cv import merge, table  # noqa: E402
from nested_cv import nested_by_family  # noqa: E402
from stroke_cv import subset_runs  # noqa: E402

E0 = 0.8
RHO = "0.5"
C1S = [0.03, 0.04, 0.05]
TS = ["0", "0.2", "0.4"]
RUN_COVERAGE = 0.06  # the margin runs hold every case up to this coverage


def read_measures(path):
    """Each case's enclosure E and coverage c (`dataset|scribbles|photo E c ...`)."""
    out = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        p = line.split()
        out[tuple(p[0].split("|"))] = (float(p[1]), float(p[2]))
    return out


def photo_pixels(data, photo):
    for ds in ("grabcut-bsds-dev", "grabcut-extra-dev"):
        d = os.path.join(data, ds, "images")
        for f in os.listdir(d):
            if os.path.splitext(f)[0] == photo:
                w, h = Image.open(os.path.join(d, f)).size
                return w * h
    sys.exit(f"no image for {photo} under {data}")


def checked_coverage(measures, tsv, data):
    """The coverage after the check drops its strokes (pixels of the dropped strokes off)."""
    dropped = {}
    for line in open(tsv):
        if line.startswith("#"):
            continue
        p = line.rstrip("\n").split("\t")
        if p[6] == "1":
            dropped[(p[0], p[1], p[2])] = dropped.get((p[0], p[1], p[2]), 0) + int(p[4])
    cov = {c: m[1] for c, m in measures.items()}
    for c, px in dropped.items():
        cov[c] -= px / photo_pixels(data, c[2])
    return cov


def margin_runs(files):
    """T -> {case: (error, iou)} from the margin runs."""
    out = {}
    for f in files:
        for c in json.load(open(f))["candidates"]:
            parts = dict(p.split("=", 1) for p in c["candidate"].split())
            assert parts["stroke-check"] == RHO and parts["initial-enclosure"] == str(E0)
            for s in c["scores"]:
                case = (s["dataset"].split("@")[0], s["scribbles"], s["photo"])
                out.setdefault(parts["initial-margin"], {})[case] = (s["error_rate"], s["iou"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--enclosure", required=True, help="measures.txt or enclosure.txt")
    ap.add_argument("--default", action="append", required=True)
    ap.add_argument("--rule", required=True)
    ap.add_argument("--subset", action="append", required=True)
    ap.add_argument("--margin", action="append", required=True)
    ap.add_argument("--strokes", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--reference", action="append", default=[])
    args = ap.parse_args()
    meas = read_measures(args.enclosure)
    enc = {c: m[0] for c, m in meas.items()}
    default, photo_fold = merge(args.default)
    always, _ = merge(args.rule.split(","))
    sub = subset_runs(args.subset)
    mar = margin_runs(args.margin)
    cov = checked_coverage(meas, args.strokes, args.data)
    gated = {c: (always[c] if enc[c] <= E0 else default[c]) for c in default}
    seeds_check = {c: sub[("seeds", RHO)].get(c, default[c]) for c in default}
    gated_check = {c: sub[("nearer-background", RHO)].get(c, gated[c]) for c in default}
    checked = set(sub[("seeds", RHO)])

    def candidate(c1, t):
        out = {}
        for c in default:
            if cov[c] > c1:
                out[c] = seeds_check[c]
            elif t == "0":
                out[c] = gated_check[c]
            elif c in mar[t]:
                out[c] = mar[t][c]
            else:
                # Not run: the gate cannot fire (E > E0) and the check drops nothing.
                if enc[c] <= E0 or c in checked or cov[c] > RUN_COVERAGE:
                    sys.exit(f"margin {t}: case {c} missing from the runs")
                out[c] = default[c]
        return out

    cands = {"seeds": default, "E gate (c1 1, t 0)": candidate(1.0, "0")}
    fams = {"seeds": ["seeds"], "E gate": ["E gate (c1 1, t 0)"], "E and coverage gate": []}
    for c1 in C1S:
        for t in TS:
            if t != "0" and t not in mar:
                continue
            label = f"c1 {c1:g}, t {t}"
            cands[label] = candidate(c1, t)
            fams["E and coverage gate"].append(label)
    # The composition's T = 0 arm must equal the margin runs' T = 0 where both exist.
    if "0" in mar:
        diff = [c for c in mar["0"] if abs(mar["0"][c][0] - gated_check[c][0]) > 1e-9]
        print(f"check: margin runs at T 0, {len(mar['0'])} cases, {len(diff)} differ"
              + "".join(f"\n  {c}: run {mar['0'][c][0]:.4f}, composed {gated_check[c][0]:.4f}"
                        for c in diff))
    cases = sorted(default)
    fold_of = {c: photo_fold[c[2]] for c in cases}
    folds = sorted(set(fold_of.values()))
    print(f"\n{len(cases)} cases, {len(cands)} candidates in {len(fams)} families, "
          f"{len(folds)} folds\n")
    nested, _ = nested_by_family(cands, fams, cases, fold_of, folds, "all photos")
    rows = [("nested (outer folds)", nested)] + [(l, cands[l]) for l in cands]
    for r in args.reference:
        name, _, files = r.partition("=")
        sc, _ = merge(files.split(","))
        rows.append((name, sc))
    table(rows, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
