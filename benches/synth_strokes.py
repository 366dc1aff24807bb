#!/usr/bin/env python3
"""Synthetic scribbles drawn from the dev sets' ground truth, for checking that the stroke prior
and its defaults do not depend on the particular published scribbles.

For every photo of the dev sets this writes, per *style* and *density*, a palette PNG in the
dev sets' seed format (index 0 unlabelled, 1 foreground, 2 background) and lays the result out
as datasets that `segcut eval --cv` and `benches/opencv_grabcut.py --sets` read:

    OUT/synth-<style>/images/<name>.<ext>      symbolic links to the dev photos
    OUT/synth-<style>/gt/<name>.png            symbolic links to the ground truth
    OUT/synth-<style>/<density>/<name>-anno.png

Styles (sizes are fractions of the image diagonal, so the strokes scale with the photo):

    sparse   a few short strokes well inside each region (like scribbles-1, the robot user):
             brush radius 0.006, stroke length 0.10, at least 0.04 from the boundary
    dense    many longer strokes, allowed close to the boundary (like scribbles-2, hand drawn):
             brush radius 0.006, stroke length 0.20, at least 0.012 from the boundary

Densities: `n<k>` draws k strokes per class; `n<k>-wrong` adds, to the same strokes, two short
mislabelled strokes (one foreground-labelled on background, one background-labelled on
foreground), each within 0.03 of the boundary: the slip of a hand that crossed the edge.

A stroke is a smooth random walk: it starts at a random pixel of the class's region shrunk by the
margin, turns by at most 0.35 rad per step of one brush radius, and stops at its length or where
it would leave the shrunk region. Everything is seeded from the photo's name, the style and the
density (numpy's PCG64), so the strokes are the same on every run and machine.

Usage (numpy, Pillow and opencv-python-headless from PyPI):
    python3 benches/synth_strokes.py --out /tmp/synth [--data ../shared/data/segmentation]
        [--every N]     (only every N-th photo: see below)

With `--every N`, photos are numbered in the order sparse style (BSDS then extra, each sorted by
name), then the dense style the same way, and every N-th number is drawn: with N = 2 the sparse
style gets 20 photos and the dense style the other 19, together all 39 once.
"""

import argparse
import hashlib
import os
import sys

import cv2
import numpy as np
from PIL import Image

SETS = ("grabcut-bsds-dev", "grabcut-extra-dev")
STYLES = {
    # name: (brush radius, stroke length, margin from the boundary), fractions of the diagonal
    "sparse": (0.006, 0.10, 0.04),
    "dense": (0.006, 0.20, 0.012),
}
DENSITIES = {"sparse": (1, 3), "dense": (4, 8)}
WRONG_MARGIN = 0.03
TURN = 0.35
PALETTE = [0, 0, 0, 255, 0, 0, 0, 0, 255] + [0] * (256 * 3 - 9)


def rng_for(*parts):
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:8], "little")))


def walk(region, radius, length, rng):
    """One stroke's points inside `region` (bool array), or [] if the region is empty."""
    ys, xs = np.nonzero(region)
    if len(xs) == 0:
        return []
    i = rng.integers(len(xs))
    x, y = float(xs[i]), float(ys[i])
    angle = rng.uniform(0, 2 * np.pi)
    pts = [(x, y)]
    step = max(radius, 1.0)
    h, w = region.shape
    for _ in range(int(length / step)):
        angle += rng.uniform(-TURN, TURN)
        nx, ny = x + step * np.cos(angle), y + step * np.sin(angle)
        ix, iy = int(round(nx)), int(round(ny))
        if not (0 <= ix < w and 0 <= iy < h and region[iy, ix]):
            break
        x, y = nx, ny
        pts.append((x, y))
    return pts


def draw(seeds, pts, label, radius):
    r = max(int(round(radius)), 1)
    if len(pts) == 1:
        cv2.circle(seeds, (int(round(pts[0][0])), int(round(pts[0][1]))), r, label, -1)
        return
    poly = np.round(np.array(pts)).astype(np.int32).reshape(-1, 1, 2)
    cv2.polylines(seeds, [poly], False, label, thickness=2 * r + 1)


def strokes(gt, style, density, wrong, rng):
    h, w = gt.shape
    diag = float(np.hypot(w, h))
    radius, length, margin = (f * diag for f in STYLES[style])
    fg = (gt == 255).astype(np.uint8)
    bg = (gt == 0).astype(np.uint8)
    # Distance of each pixel of a class to the nearest pixel not in it.
    d_fg = cv2.distanceTransform(fg, cv2.DIST_L2, 5)
    d_bg = cv2.distanceTransform(bg, cv2.DIST_L2, 5)
    seeds = np.zeros((h, w), np.uint8)
    for label, dist in ((1, d_fg), (2, d_bg)):
        inner = dist >= margin + radius
        if not inner.any():  # a thin object: its most interior pixels
            inner = dist >= 0.5 * dist.max()
        for _ in range(density):
            draw(seeds, walk(inner, radius, length, rng), label, radius)
    if wrong:
        # A short stroke of the wrong label just across the boundary, per class.
        for label, dist in ((1, d_bg), (2, d_fg)):
            band = (dist > radius) & (dist <= WRONG_MARGIN * diag)
            draw(seeds, walk(band, radius, 0.4 * length, rng), label, radius)
    # Only pixels of the image; the unscored band may be covered like in the published sets.
    return seeds


def link(src, dst):
    if os.path.lexists(dst):
        os.remove(dst)
    os.symlink(os.path.abspath(src), dst)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data",
                                                   "segmentation"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--every", type=int, default=1,
                    help="only every N-th photo, counted over both styles in turn")
    args = ap.parse_args()
    index = 0
    for style in STYLES:
        root = os.path.join(args.out, f"synth-{style}")
        folders = [f"n{k}" for k in DENSITIES[style]] + [f"n{DENSITIES[style][-1]}-wrong"]
        for sub in ["images", "gt"] + folders:
            os.makedirs(os.path.join(root, sub), exist_ok=True)
        for ds in SETS:
            d = os.path.join(args.data, ds)
            for f in sorted(os.listdir(os.path.join(d, "gt"))):
                name = f[:-4]
                index += 1
                if (index - 1) % args.every:
                    continue
                # Names are unique over the two sets (numeric BSDS ids, words in extra).
                img = next(os.path.join(d, "images", name + e) for e in (".jpg", ".png")
                           if os.path.exists(os.path.join(d, "images", name + e)))
                link(img, os.path.join(root, "images", os.path.basename(img)))
                link(os.path.join(d, "gt", f), os.path.join(root, "gt", f))
                gt = np.asarray(Image.open(os.path.join(d, "gt", f)).convert("L"))
                for folder in folders:
                    k = int(folder[1:].split("-")[0])
                    wrong = folder.endswith("-wrong")
                    # The clean and the mislabelled set share their correct strokes.
                    rng = rng_for(name, style, str(k))
                    seeds = strokes(gt, style, k, wrong, rng)
                    im = Image.fromarray(seeds, mode="P")
                    im.putpalette(PALETTE)
                    im.save(os.path.join(root, folder, f"{name}-anno.png"))
        print(f"{root}: {', '.join(folders)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
