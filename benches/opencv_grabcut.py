#!/usr/bin/env python3
"""OpenCV grabCut on the segmentation dev sets, initialised from the same scribbles as segcut.

The comparison baseline of docs/segmentation.md. For every photo and scribble set, OpenCV's
`grabCut` runs in mask mode: the scribbles are definite labels (GC_FGD / GC_BGD), every other
pixel gets "probably" foreground or background by one of three simple rules:

  pr-bg    every unlabelled pixel is probably background
  pr-fg    every unlabelled pixel is probably foreground
  nearest  probably the label of the nearest stroke (Euclidean distance transform)

then 5 iterations. OpenCV's GMM initialisation draws from its global random generator, so the
script seeds it (`cv2.setRNGSeed`) before every call: the numbers reproduce on one OpenCV build.
Scoring as in the literature (and `segcut eval`): error = % of pixels with ground truth 0 or 255
labelled wrong; IoU = foreground intersection over union over the same pixels.

Usage (opencv-python-headless and numpy from PyPI):
    python3 benches/opencv_grabcut.py [--data ../shared/data/segmentation] [--json out.json]
        [--sets grabcut-bsds-dev,grabcut-extra-dev] [--scribbles scribbles-1,scribbles-2]
(`--sets`/`--scribbles` also take the synthetic datasets of benches/synth_strokes.py.)
"""

import argparse
import json
import os
import sys
import time

import cv2
import numpy as np

SETS = ("grabcut-bsds-dev", "grabcut-extra-dev")
SCRIBBLES = ("scribbles-1", "scribbles-2")
RULES = ("pr-bg", "pr-fg", "nearest")
ITERATIONS = 5
RNG_SEED = 12345


def read_palette_index(path):
    """A palette PNG's indices (0 unlabelled, 1 fg, 2 bg); cv2 would expand the palette."""
    from PIL import Image  # noqa: PLC0415  (Pillow reads palette indices as they are)

    im = Image.open(path)
    if im.mode != "P":
        raise SystemExit(f"{path}: expected a palette PNG, got mode {im.mode}")
    return np.asarray(im, dtype=np.uint8)


def initial_mask(seeds, rule):
    mask = np.empty(seeds.shape, np.uint8)
    if rule == "pr-bg":
        mask[:] = cv2.GC_PR_BGD
    elif rule == "pr-fg":
        mask[:] = cv2.GC_PR_FGD
    else:
        # Distance to the nearest fg stroke and to the nearest bg stroke.
        d_fg = cv2.distanceTransform((seeds != 1).astype(np.uint8), cv2.DIST_L2, 5)
        d_bg = cv2.distanceTransform((seeds != 2).astype(np.uint8), cv2.DIST_L2, 5)
        mask[:] = np.where(d_fg < d_bg, cv2.GC_PR_FGD, cv2.GC_PR_BGD)
    mask[seeds == 1] = cv2.GC_FGD
    mask[seeds == 2] = cv2.GC_BGD
    return mask


def score(fg, gt):
    scored = gt != 128
    truth = gt == 255
    wrong = np.count_nonzero((fg != truth) & scored)
    inter = np.count_nonzero(fg & truth & scored)
    union = np.count_nonzero((fg | truth) & scored)
    n = np.count_nonzero(scored)
    return 100.0 * wrong / n, (100.0 * inter / union if union else 100.0)


def image_path(d, name):
    for ext in (".jpg", ".png"):
        p = os.path.join(d, "images", name + ext)
        if os.path.exists(p):
            return p
    raise SystemExit(f"no image for {name} in {d}/images")


def run(data, sets, scribbles):
    rows = []
    for dataset in sets:
        d = os.path.join(data, dataset)
        names = sorted(f[:-4] for f in os.listdir(os.path.join(d, "gt")) if f.endswith(".png"))
        for name in names:
            img = cv2.imread(image_path(d, name), cv2.IMREAD_COLOR)
            gt = cv2.imread(os.path.join(d, "gt", name + ".png"), cv2.IMREAD_GRAYSCALE)
            for sc in scribbles:
                seeds = read_palette_index(os.path.join(d, sc, name + "-anno.png"))
                for rule in RULES:
                    mask = initial_mask(seeds, rule)
                    bgd = np.zeros((1, 65), np.float64)
                    fgd = np.zeros((1, 65), np.float64)
                    cv2.setRNGSeed(RNG_SEED)
                    t = time.perf_counter()
                    cv2.grabCut(img, mask, None, bgd, fgd, ITERATIONS, cv2.GC_INIT_WITH_MASK)
                    ms = 1e3 * (time.perf_counter() - t)
                    fg = (mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD)
                    err, iou = score(fg, gt)
                    rows.append(dict(dataset=dataset, scribbles=sc, image=name, rule=rule,
                                     error_rate=err, iou=iou, ms=ms))
    return rows


def summary(rows, sets, scribbles):
    print(f"OpenCV {cv2.__version__}, grabCut {ITERATIONS} iterations, cv2.setRNGSeed({RNG_SEED})")
    print("| set | scribbles | " + " | ".join(f"{r} err % / IoU %" for r in RULES) + " |")
    print("|---|---|" + "---|" * len(RULES))
    groups = [(ds, sc) for ds in sets for sc in scribbles]
    if len(sets) > 1:
        groups += [("all", sc) for sc in scribbles]
    for ds, sc in groups:
        cells = []
        for rule in RULES:
            sel = [r for r in rows if r["scribbles"] == sc and r["rule"] == rule
                   and (ds == "all" or r["dataset"] == ds)]
            err = sum(r["error_rate"] for r in sel) / len(sel)
            iou = sum(r["iou"] for r in sel) / len(sel)
            cells.append(f"{err:.2f} / {iou:.1f}")
        print(f"| {ds} | {sc} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data",
                                                   "segmentation"))
    ap.add_argument("--json", help="write the per-image rows here")
    ap.add_argument("--sets", default=",".join(SETS), help="dataset folders under --data")
    ap.add_argument("--scribbles", default=",".join(SCRIBBLES), help="seed folders of each set")
    args = ap.parse_args()
    sets, scribbles = args.sets.split(","), args.scribbles.split(",")
    cv2.setNumThreads(1)
    rows = run(args.data, sets, scribbles)
    summary(rows, sets, scribbles)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
