#!/usr/bin/env python3
"""Nested cross-validation of the stroke check (`--stroke-check RHO`, issue 25), alone and with
the gated first fit (`--initial nearer-background --initial-enclosure 0.8`), over the dev
scribbles and the synthetic strokes together.

The check changes a case only where it drops a stroke; elsewhere the mask is the one without
the check, bit for bit (the seeds are the same). So each candidate's per-case scores are
composed: the runs of the cases where some RHO of the grid drops a stroke (`--subset RUN.json`,
`segcut eval --cv` over datasets holding only those cases, named `DATASET@SCRIBBLES`, with the
grid initial x stroke-check), and for every other case the base's score: today's default
(`--default`), or the gated first fit, itself composed as in benches/initial_cv.py from the
always-on rule (`--rule`) and each case's enclosure (`--enclosure`, E0 0.8).

Folds: the photo's fold in the full runs (by photo name: a photo's dev and synthetic cases are
in one fold). Selection: the mean error over all training cases (as initial_cv.py). Families
(fixed before the run): "seeds" (today), "seeds + check" (RHO 0.3, 0.5, 0.7; only where the
subset runs hold it), "gated" (the gated first fit alone), "gated + check" (RHO 0.3, 0.5, 0.7). Per outer fold, every family gets
an inner cross-validation on the other folds; the family with the lowest inner error wins and its
candidate best on all the training folds scores the outer fold.

Usage:
    python3 benches/stroke_cv.py --enclosure enclosure.txt --default dev.json:LABEL ... \
        --rule dev-nb.json,synth-sparse-nb.json,synth-dense-nb.json --subset SUB.json ... \
        [--reference NAME=FILE[:LABEL],...]
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from initial_cv import merge, read_enclosure, table  # noqa: E402
from nested_cv import nested_by_family  # noqa: E402

RHOS = ["0.3", "0.5", "0.7"]
E0 = 0.8


def subset_runs(files):
    """(initial, rho) -> {case: (error, iou)} from the subset runs."""
    out = {}
    for f in files:
        for c in json.load(open(f))["candidates"]:
            parts = dict(p.split("=", 1) for p in c["candidate"].split())
            key = (parts["initial"], parts["stroke-check"])
            for s in c["scores"]:
                case = (s["dataset"].split("@")[0], s["scribbles"], s["photo"])
                out.setdefault(key, {})[case] = (s["error_rate"], s["iou"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--enclosure", required=True)
    ap.add_argument("--default", action="append", required=True)
    ap.add_argument("--rule", required=True)
    ap.add_argument("--subset", action="append", required=True)
    ap.add_argument("--reference", action="append", default=[],
                    help="NAME=FILE[:LABEL],... a row shown for comparison (not a candidate)")
    args = ap.parse_args()
    enc = read_enclosure(args.enclosure)
    default, photo_fold = merge(args.default)
    always, _ = merge(args.rule.split(","))
    gated = {c: (always[c] if enc[c] <= E0 else default[c]) for c in default}
    sub = subset_runs(args.subset)
    # The subset runs' check off must reproduce the composition's base (where it was run).
    for (initial, rho), sc in sub.items():
        if rho != "1":
            continue
        base = default if initial == "seeds" else gated
        diff = [c for c in sc if abs(sc[c][0] - base[c][0]) > 1e-9]
        print(f"check: subset runs, initial={initial} check off: {len(sc)} cases, "
              f"{len(diff)} differ from the base" + "".join(
                  f"\n  {c}: run {sc[c][0]:.4f}, base {base[c][0]:.4f}" for c in diff))
    cands = {"seeds": default, "gated": gated}
    fams = {"seeds": ["seeds"], "seeds + check": [], "gated": ["gated"], "gated + check": []}
    for initial, base, fam in (("seeds", default, "seeds + check"),
                               ("nearer-background", gated, "gated + check")):
        for rho in RHOS:
            if (initial, rho) not in sub:
                continue
            runs = sub[(initial, rho)]
            label = ("gated " if initial != "seeds" else "") + f"stroke-check={rho}"
            cands[label] = {c: runs.get(c, base[c]) for c in base}
            fams[fam].append(label)
    fams = {n: ls for n, ls in fams.items() if ls}
    cases = sorted(default)
    fold_of = {c: photo_fold[c[2]] for c in cases}
    folds = sorted(set(fold_of.values()))
    print(f"\n{len(cases)} cases, {len(cands)} candidates in {len(fams)} families, "
          f"{len(folds)} folds; {len(set().union(*(set(s) for s in sub.values())))} cases "
          "in the subset runs\n")
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
