#!/usr/bin/env python3
"""The robustness table of docs/segmentation.md: segcut candidates (`segcut eval --cv ... --json`
on a synthetic style of benches/synth_strokes.py) against OpenCV grabCut
(`benches/opencv_grabcut.py --json` on the same style), mean error % / IoU % per density.

Usage: python3 benches/synth_table.py --opencv OPENCV.json SEGCUT.json [SEGCUT2.json ...]
"""

import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--opencv")
    args = ap.parse_args()
    cols = {}
    for f in args.runs:
        for c in json.load(open(f))["candidates"]:
            by = {}
            for s in c["scores"]:
                by.setdefault(s["scribbles"], []).append((s["error_rate"], s["iou"]))
            cols.setdefault(c["candidate"], by)
    sets = sorted({s for by in cols.values() for s in by}, key=lambda s: (len(s), s))
    if args.opencv:
        rows = json.load(open(args.opencv))
        by = {}
        for sc in sets:
            best = None
            for rule in sorted({r["rule"] for r in rows}):
                sel = [(r["error_rate"], r["iou"]) for r in rows
                       if r["scribbles"] == sc and r["rule"] == rule]
                if not sel:
                    continue
                e = sum(x[0] for x in sel) / len(sel)
                if best is None or e < best[0]:
                    best = (e, rule, sel)
            if best:
                by[sc] = best[2]
                print(f"OpenCV best init for {sc}: {best[1]}")
        cols["OpenCV grabCut, best init"] = by
    names = list(cols)
    print("| density | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for sc in sets:
        cells = []
        for n in names:
            v = cols[n].get(sc)
            if not v:
                cells.append("–")
                continue
            cells.append(f"{sum(x[0] for x in v) / len(v):.2f} / {sum(x[1] for x in v) / len(v):.1f}")
        print(f"| {sc} ({len(cols[names[0]].get(sc, []))} photos) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
