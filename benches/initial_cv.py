#!/usr/bin/env python3
"""Nested cross-validation of the gated first fit (issue 25), over the dev scribbles and the
synthetic strokes together.

The first-fit rules `--initial nearer-background` and `--initial nearer-unexplained` apply only
on images whose strokes' enclosure E is at most `--initial-enclosure E0`; elsewhere the first
models are the seeds' (today's default). So a gated candidate's mask on a case is exactly the
always-on rule's mask where E <= E0 and the default's where E > E0, and its per-case scores are
composed from two runs of `segcut eval --cv --json` (the rule with E0 = 1, and the default)
and each case's E (`enclosure.txt`: the default prior's enclosure, the one the rule computes).
`--check RUN.json` compares a real gated run with its composition, case by case.

Cases: the 78 dev cases (39 photos x 2 scribble sets) and the synthetic strokes of
benches/synth_strokes.py (39 photos x 3 densities per style). Folds: the photo's fold in the
runs (`eval --cv` folds by photo name, so a photo's dev and synthetic cases are in one fold).
Selection: the mean error over all the training cases, dev and synthetic alike (each case
weight 1: each photo brings 2 dev and 6 synthetic cases).

Families: "seeds" (today's default), and one per rule with its E0 values. For each outer fold,
every family gets an inner cross-validation on the other folds (each inner fold scored by the
family's candidate best on the remaining ones); the family with the lowest inner error wins and
its candidate best on all the training folds scores the outer fold. The default is the same
procedure run on all photos.

Usage:
    python3 benches/initial_cv.py --enclosure enclosure.txt \
        --default dev.json:LABEL --default synth-sparse.json:LABEL --default synth-dense.json \
        --rule nearer-background=dev-nb.json,synth-sparse-nb.json,synth-dense-nb.json \
        --rule nearer-unexplained=... [--e0 0.5,0.6,0.7,0.8,0.9,1] [--check RUN.json:LABEL ...]
(FILE:LABEL picks one candidate of a run with several; without a label the file must hold one.)
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nested_cv import mean_err, nested_by_family  # noqa: E402  (the same nested rule)


def load(spec):
    f, _, label = spec.partition(":")
    doc = json.load(open(f))
    cands = doc["candidates"]
    if label:
        cands = [c for c in cands if c["candidate"] == label]
    if len(cands) != 1:
        sys.exit(f"{spec}: {len(cands)} candidates match (give FILE:LABEL)")
    scores = {(s["dataset"], s["scribbles"], s["photo"]): (s["error_rate"], s["iou"])
              for s in cands[0]["scores"]}
    folds = {k.split("/", 1)[1]: v for k, v in doc["fold_of"]}
    return scores, folds


def merge(specs):
    scores, folds = {}, {}
    for s in specs:
        sc, fo = load(s)
        for p, f in fo.items():
            if folds.setdefault(p, f) != f:
                sys.exit(f"{s}: photo {p} in fold {f}, elsewhere {folds[p]}")
        scores.update(sc)
    return scores, folds


GROUPS = [("grabcut-bsds-dev", "scribbles-1", "BSDS set 1"), ("grabcut-bsds-dev", "scribbles-2", "BSDS set 2"),
          ("grabcut-extra-dev", "scribbles-1", "extra set 1"), ("grabcut-extra-dev", "scribbles-2", "extra set 2"),
          ("synth-sparse", "n1", "sparse n1"), ("synth-sparse", "n3", "sparse n3"),
          ("synth-sparse", "n3-wrong", "sparse n3-wrong"), ("synth-dense", "n4", "dense n4"),
          ("synth-dense", "n8", "dense n8"), ("synth-dense", "n8-wrong", "dense n8-wrong")]


def read_enclosure(path):
    """Each case's enclosure E from `enclosure.txt` (`dataset|scribbles|photo E ...`)."""
    enc = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        key, e, _ = line.split()
        enc[tuple(key.split("|"))] = float(e)
    return enc


def table(rows, cases):
    groups = [g for g in GROUPS if any(c[:2] == g[:2] for c in cases)]
    print("| numbers | " + " | ".join(g[2] for g in groups) + " | all cases |")
    print("|---|" + "---|" * (len(groups) + 1))
    for name, sc in rows:
        cells = []
        # A reference row may lack cases (a run of fewer sets): its cells cover what it has.
        for g in groups:
            cs = [c for c in cases if c[:2] == g[:2] and c in sc]
            cells.append(f"{mean_err(sc, cs):.2f} / {sum(sc[c][1] for c in cs) / len(cs):.1f}"
                         if cs else "–")
        cells.append(f"{mean_err(sc, [c for c in cases if c in sc]):.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--enclosure", required=True)
    ap.add_argument("--default", action="append", required=True)
    ap.add_argument("--rule", action="append", default=[])
    ap.add_argument("--e0", default="0.5,0.6,0.7,0.8,0.9,1")
    ap.add_argument("--check", action="append", default=[])
    args = ap.parse_args()
    enc = read_enclosure(args.enclosure)
    default, photo_fold = merge(args.default)
    e0s = [float(x) for x in args.e0.split(",")]
    cands, fams = {"seeds": default}, {"seeds": ["seeds"]}
    for r in args.rule:
        name, _, files = r.partition("=")
        always, fo = merge(files.split(","))
        if any(photo_fold.get(p, f) != f for p, f in fo.items()):
            sys.exit(f"{name}: other folds than the default's")
        fams[name] = []
        for e0 in e0s:
            label = f"initial={name} initial-enclosure={e0:g}"
            cands[label] = {c: (always[c] if enc[c] <= e0 else default[c]) for c in default
                            if c in always}
            fams[name].append(label)
    labels = list(cands)
    cases = sorted(set.intersection(*(set(s) for s in cands.values())))
    fold_of = {c: photo_fold[c[2]] for c in cases}
    folds = sorted(set(fold_of.values()))
    print(f"{len(cases)} cases, {len(labels)} candidates in {len(fams)} families, "
          f"{len(folds)} folds\n")
    nested, chosen = nested_by_family(cands, fams, cases, fold_of, folds)
    rows = [("nested (outer folds)", nested), ("seeds (today's default)", default),
            (f"fitted: {chosen}", cands[chosen])]
    rows += [(l, cands[l]) for l in labels if l not in ("seeds", chosen)]
    table(rows, cases)
    for spec in args.check:
        real, _ = merge([spec])
        label = spec.partition(":")[2] or json.load(open(spec))["candidates"][0]["candidate"]
        key = " ".join(sorted(label.split()))
        match = [l for l in labels if " ".join(sorted(l.split())) == key]
        if not match:
            sys.exit(f"--check {spec}: no composed candidate '{label}'")
        comp = cands[match[0]]
        diff = [c for c in real if c in comp and abs(real[c][0] - comp[c][0]) > 1e-9]
        print(f"\ncheck {spec}: {len(real)} cases, {len(diff)} differ from the composition"
              + "".join(f"\n  {c}: run {real[c][0]:.4f}, composed {comp[c][0]:.4f}" for c in diff))
    return 0


if __name__ == "__main__":
    sys.exit(main())
