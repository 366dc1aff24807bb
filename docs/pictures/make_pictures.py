#!/usr/bin/env python3
"""Regenerates the pictures in docs/pictures from the repository's data and docs/results.

    pip install segcut-*.whl numpy pillow matplotlib opencv-python-headless
    python docs/pictures/make_pictures.py                 # data from ../shared/data
    python docs/pictures/make_pictures.py --data /work/shared/data --only plots

Writes (each kept under ~200 KB):
  segmentation-gallery.jpg  photos of the GrabCut-BSDS dev set with their scribbles, segcut's
                            mask and OpenCV grabCut's from the same scribbles, error rates in the
                            titles; the best, a middling and the worst of segcut's photos
  stereo-tsukuba.jpg        the left view, segcut's disparities, the ground truth, and where they
                            differ by more than one level (red; grey: not evaluated)
  solve-times.png           solve time against grid size for BK and cuda-grid
                            (docs/results/gpu-standard-tiled-2026-11-22.json)
  phases-36mp.png           the per-phase times of one segment() call on a 36 MP photo on an
                            H100 (docs/results/python-36mp-h100-2026-11-26.json; no 4K run with
                            per-phase times is recorded in docs/results)
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def save(fig, name: str) -> None:
    path = OUT / name
    if name.endswith(".jpg"):
        fig.savefig(path, dpi=90, pil_kwargs={"quality": 78, "optimize": True})
    else:
        fig.savefig(path, dpi=90)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")


def error_rate(mask: np.ndarray, gt: np.ndarray) -> float:
    scored = gt != 128
    return 100.0 * float(((mask != (gt > 128)) & scored).sum()) / float(scored.sum())


def overlay(img: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The photo dimmed outside ``mask``, with the mask's outline in yellow."""
    out = img.astype(np.float32) * np.where(mask[..., None], 1.0, 0.35)
    edge = mask ^ np.roll(mask, 1, 0) | mask ^ np.roll(mask, 1, 1)
    out[edge] = (255, 230, 0)
    return out.astype(np.uint8)


def gallery(data: Path) -> None:
    import cv2
    import matplotlib.pyplot as plt
    from PIL import Image

    import segcut

    d = data / "segmentation" / "grabcut-bsds-dev"
    rows = []
    for img_path in sorted((d / "images").glob("*.jpg")):
        key = img_path.stem
        img = np.array(Image.open(img_path).convert("RGB"))
        gt = np.array(Image.open(d / "gt" / f"{key}.png").convert("L"))
        seeds = np.array(Image.open(d / "scribbles-1" / f"{key}-anno.png"))  # palette indices
        t = time.perf_counter()
        ours = np.asarray(segcut.segment(img, seeds))
        ours_s = time.perf_counter() - t
        rows.append((error_rate(ours, gt), key, img, seeds, ours, ours_s, gt))
    rows.sort(key=lambda r: r[0])
    picked = [rows[0], rows[len(rows) // 2], rows[-1]]
    fig, axes = plt.subplots(len(picked), 3, figsize=(10.5, 2.45 * len(picked) * 1.12))
    for ax_row, (err, key, img, seeds, ours, ours_s, gt) in zip(axes, picked):
        # OpenCV's GrabCut from the same strokes: seeds hard, the rest "probably background".
        m = np.full(seeds.shape, cv2.GC_PR_BGD, np.uint8)
        m[seeds == 1] = cv2.GC_FGD
        m[seeds == 2] = cv2.GC_BGD
        bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        t = time.perf_counter()
        cv2.grabCut(cv2.cvtColor(img, cv2.COLOR_RGB2BGR), m, None, bgd, fgd, 5, cv2.GC_INIT_WITH_MASK)
        cv_s = time.perf_counter() - t
        theirs = (m == cv2.GC_FGD) | (m == cv2.GC_PR_FGD)
        strokes = img.copy()
        for lab, colour in ((1, (255, 40, 40)), (2, (40, 120, 255))):
            sel = seeds == lab
            sel = sel | np.roll(sel, 1, 0) | np.roll(sel, 1, 1)
            strokes[sel] = colour
        panels = [
            (strokes, f"{key}: photo and strokes"),
            (overlay(img, ours), f"segcut: {err:.1f} % wrong ({ours_s:.2f} s)"),
            (overlay(img, theirs), f"OpenCV grabCut: {error_rate(theirs, gt):.1f} % ({cv_s:.1f} s)"),
        ]
        for ax, (pic, title) in zip(ax_row, panels):
            ax.imshow(pic)
            ax.set_title(title, fontsize=8.5)
            ax.axis("off")
    fig.suptitle("GrabCut-BSDS dev photos, scribble set 1: best, middling and worst of segcut's (defaults)", fontsize=9.5)
    fig.tight_layout()
    save(fig, "segmentation-gallery.jpg")
    plt.close(fig)


def stereo(data: Path) -> None:
    import matplotlib.pyplot as plt
    from PIL import Image

    import segcut

    d = data / "stereo" / "tsukuba"
    left = np.array(Image.open(d / "imL.png").convert("RGB"))
    right = np.array(Image.open(d / "imR.png").convert("RGB"))
    gt = np.array(Image.open(d / "gt.png")).astype(np.float32) / 16.0
    nonocc = np.array(Image.open(d / "nonocc.png")) == 255
    t = time.perf_counter()
    disp = np.asarray(segcut.stereo(left, right, num_disparities=16))
    secs = time.perf_counter() - t
    bad = (np.abs(disp - gt) > 1) & nonocc
    pct = 100.0 * bad.sum() / nonocc.sum()
    err = np.full(gt.shape + (3,), 255, np.uint8)
    err[~nonocc] = (200, 200, 200)
    err[bad] = (220, 30, 30)
    fig, axes = plt.subplots(1, 4, figsize=(12, 2.7))
    panels = [
        (left, "left view", None),
        (disp, f"segcut stereo ({secs:.1f} s, CPU)", "gray"),
        (np.where(gt > 0, gt, np.nan), "ground truth", "gray"),
        (err, f"error > 1: {pct:.1f} % of non-occluded", None),
    ]
    for ax, (pic, title, cmap) in zip(axes, panels):
        ax.imshow(pic, cmap=cmap, vmin=0 if cmap else None, vmax=15 if cmap else None)
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    save(fig, "stereo-tsukuba.jpg")
    plt.close(fig)


def solve_times() -> None:
    import matplotlib.pyplot as plt

    rows = json.loads((ROOT / "docs/results/gpu-standard-tiled-2026-11-22.json").read_text())
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    styles = {"bk": ("tab:blue", "BK (CPU)"), "cuda-grid": ("tab:green", "cuda-grid (H100)")}
    for family, marker in (("2d", "o"), ("3d", "^")):
        for solver, (colour, label) in styles.items():
            pts = sorted(
                (r["nodes"], r["solve_ms"]) for r in rows if r["solver"] == solver and r["instance"].startswith(family)
            )
            if pts:
                x, y = zip(*pts)
                ax.scatter(x, y, marker=marker, color=colour, label=f"{label}, {family.upper()} grids", s=24)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("nodes")
    ax.set_ylabel("solve time (ms)")
    ax.set_title("Generated vision grids (4-/8-, 6-/26-connected): solve time", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, "docs/results/gpu-standard-tiled-2026-11-22.json (H100 and its Xeon host)", fontsize=7, color="0.4")
    fig.tight_layout()
    save(fig, "solve-times.png")
    plt.close(fig)


def phases() -> None:
    import matplotlib.pyplot as plt

    run = json.loads((ROOT / "docs/results/python-36mp-h100-2026-11-26.json").read_text())
    times = {k: v for k, v in run["times"].items() if k != "total"}
    fig, ax = plt.subplots(figsize=(6.4, 2.8))
    names = list(times)
    ax.barh(names, [times[k] for k in names], color="tab:purple")
    for i, k in enumerate(names):
        ax.text(times[k], i, f" {times[k]:.3f} s", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    h, w = run["shape"]
    ax.set_title(
        f"segment() on a {w}×{h} ({run['megapixels']:.0f} MP) photo, {run['solver']}: "
        f"{run['times']['total']:.2f} s in all",
        fontsize=9.5,
    )
    ax.set_xlim(0, max(times.values()) * 1.3)
    fig.tight_layout()
    save(fig, "phases-36mp.png")
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("SEGCUT_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--only", default="gallery,stereo,plots", help="comma-separated: gallery, stereo, plots")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    only = set(args.only.split(","))
    data = Path(args.data)
    if "plots" in only:
        solve_times()
        phases()
    if "stereo" in only:
        stereo(data)
    if "gallery" in only:
        gallery(data)


if __name__ == "__main__":
    main()
