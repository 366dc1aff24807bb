#!/usr/bin/env python3
"""Nested cross-validation over the per-case scores of `segcut eval --cv ... --json` runs.

`segcut eval --cv` scores every candidate on every case (a photo with one scribble set) and
reports a flat k-fold cross-validation: each fold is scored by the candidate that is best on the
other folds. That covers the choice of a candidate *within* the grid. Choosing between families
of candidates (here: no prior, the fixed prior, the adaptive prior) is a second choice made on
the same photos; nested cross-validation covers both:

  for each outer fold f (the folds of the runs, photos with both scribble sets together):
      for each family: an inner cross-validation over the other folds (each inner fold scored
          by the family's candidate best on the remaining inner folds) gives its inner error;
      the family with the lowest inner error wins, and its candidate best on all the other
          folds scores fold f.

The outer-fold numbers are what the whole procedure (pick a family, then a setting) does on
photos it never saw. The default is what the same procedure picks on all photos.

A candidate's family is the value of `--family KEY` in its label (`prior-explained=0.5` →
"0.5"); candidates without the key get `--missing`; a candidate whose `prior` is 0 is its own
family "no prior". Reading the scores costs nothing: every segmentation was done (and cached
in the JSON files) by `segcut eval --cv`, so candidates from several runs can be merged here as
long as they cover the same cases.

Usage:
    python3 benches/nested_cv.py RUN.json [RUN2.json ...] [--family prior-explained]
        [--missing 1] [--drop LABEL ...]
"""

import argparse
import json
import sys


def load(files):
    cands, folds = {}, None
    for f in files:
        doc = json.load(open(f))
        fo = {k: v for k, v in doc["fold_of"]}
        if folds is not None and fo != folds:
            sys.exit(f"{f}: other folds than the first file")
        folds = fo
        for c in doc["candidates"]:
            label = c["candidate"]
            scores = {(s["dataset"], s["scribbles"], s["photo"]): (s["error_rate"], s["iou"])
                      for s in c["scores"]}
            # The first file's copy of a label wins (a rerun of the same setting).
            cands.setdefault(label, scores)
    return cands, folds


def family(label, key, missing):
    parts = dict(p.split("=", 1) for p in label.split() if "=" in p)
    if parts.get("prior") == "0":
        return "no prior"
    return f"{key}={parts.get(key, missing)}"


def mean_err(scores, cases):
    return sum(scores[c][0] for c in cases) / max(len(cases), 1)


def best(cands, labels, cases):
    return min(labels, key=lambda l: (mean_err(cands[l], cases), labels.index(l)))


def cv_error(cands, labels, cases, fold_of, folds):
    """Flat CV over `folds` restricted to `cases`: per case its held-out score."""
    out = {}
    for f in folds:
        test = [c for c in cases if fold_of[c] == f]
        train = [c for c in cases if fold_of[c] != f]
        chosen = best(cands, labels, train)
        for c in test:
            out[c] = cands[chosen][c]
    return out


def nested_by_family(cands, fams, cases, fold_of, folds, name="default", show_family=False):
    """Per outer fold, every family gets an inner CV on the other folds; the family of lowest
    inner error wins and its candidate best on all training folds scores the outer fold. Prints
    the choices; returns the held-out scores and the procedure's choice on all cases."""
    nested = {}
    print("nested: per outer fold, the inner CV errors of the families and the choice")
    for f in folds:
        train = [c for c in cases if fold_of[c] != f]
        inner_folds = [g for g in folds if g != f]
        inner = {n: mean_err(cv_error(cands, ls, train, fold_of, inner_folds), train)
                 for n, ls in fams.items()}
        fam = min(fams, key=lambda n: (inner[n], list(fams).index(n)))
        chosen = best(cands, fams[fam], train)
        for c in cases:
            if fold_of[c] == f:
                nested[c] = cands[chosen][c]
        errs = ", ".join(f"{n} {e:.3f}" for n, e in inner.items())
        print(f"  outer fold {f}: inner {errs} -> " + (f"{fam}: " if show_family else "")
              + chosen)
    whole = {n: mean_err(cv_error(cands, ls, cases, fold_of, folds), cases)
             for n, ls in fams.items()}
    fam = min(fams, key=lambda n: (whole[n], list(fams).index(n)))
    chosen = best(cands, fams[fam], cases)
    print(f"\n{name}: family {fam} (5-fold CV error per family: "
          + ", ".join(f"{n} {e:.3f}" for n, e in whole.items()) + f"), candidate {chosen}\n")
    return nested, chosen


def table(rows, cases):
    groups = sorted({(c[0], c[1]) for c in cases})
    sets = sorted({c[1] for c in cases})
    head = [f"{d} {s}" for d, s in groups] + [f"all {s}" for s in sets]
    print("| numbers | " + " | ".join(head) + " |")
    print("|---" * (len(head) + 1) + "|")
    for name, scores in rows:
        cells = []
        for sel in [lambda c, d=d, s=s: c[0] == d and c[1] == s for d, s in groups] + \
                   [lambda c, s=s: c[1] == s for s in sets]:
            cs = [c for c in cases if sel(c)]
            e = sum(scores[c][0] for c in cs) / len(cs)
            u = sum(scores[c][1] for c in cs) / len(cs)
            cells.append(f"{e:.2f} / {u:.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--family", default="prior-explained")
    ap.add_argument("--missing", default="1")
    ap.add_argument("--drop", action="append", default=[],
                    help="leave out the candidate with this label (repeatable)")
    args = ap.parse_args()
    cands, photo_fold = load(args.runs)
    for label in args.drop:
        if cands.pop(label, None) is None:
            sys.exit(f"--drop {label}: no such candidate")
    labels = list(cands)
    cases = sorted(set.intersection(*(set(s) for s in cands.values())))
    fold_of = {c: photo_fold[f"{c[0]}/{c[2]}"] for c in cases}
    folds = sorted(set(fold_of.values()))
    fams = {}
    for l in labels:
        fams.setdefault(family(l, args.family, args.missing), []).append(l)
    print(f"{len(cases)} cases, {len(labels)} candidates in {len(fams)} families, "
          f"{len(folds)} folds")
    for name, ls in fams.items():
        print(f"  {name}: {', '.join(ls)}")
    print()
    # The default: the procedure run on all photos.
    nested, default = nested_by_family(cands, fams, cases, fold_of, folds, show_family=True)
    flat = cv_error(cands, labels, cases, fold_of, folds)
    rows = [("nested (outer folds)", nested), ("flat CV over all candidates", flat),
            (f"fitted default: {default}", cands[default])]
    for name, ls in fams.items():
        b = best(cands, ls, cases)
        if b != default:
            rows.append((f"best of {name}: {b}", cands[b]))
    table(rows, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
