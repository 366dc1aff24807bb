#!/usr/bin/env python3
"""A synthetic stereo scene of any size and disparity range, for timing the stereo engines where
no real scene of that shape is at hand (the issue's 450×375 with 60 labels: teddy and cones are
not in ../shared).

    python3 benches/stereo_synthetic.py OUT_DIR [--width 450] [--height 375] [--labels 60]

writes OUT_DIR/{imL,imR,gt}.png (no masks: `segcut stereo-eval` then scores the ground truth less
a border). The left view is smoothed random texture; its disparity field is a slanted background
plane with a few fronto-parallel boxes in front, reaching labels - 1; the right view is the left
forward-warped (nearer surfaces win), with fresh texture where nothing lands. gt.png holds 4·d,
so run it with `--gt-scale 4` (labels ≤ 64).

With --masks it also writes Middlebury-style masks (a 10-pixel border left out of all three, as
`segcut stereo-eval` does for a scene without masks): all.png, nonocc.png (less the pixels hidden
in the right view: their match lies outside it, or a nearer surface lands there) and disc.png
(non-occluded pixels within 3 pixels of a disparity jump of more than 1).
"""
import argparse
import os

import numpy as np
from PIL import Image


def texture(rng, h, w):
    t = rng.random((h, w, 3))
    # A 3×3 box blur: matching costs with some spatial coherence, as photos have.
    p = np.pad(t, ((1, 1), (1, 1), (0, 0)), mode="edge")
    t = sum(p[dy : dy + h, dx : dx + w] for dy in range(3) for dx in range(3)) / 9.0
    return (t * 255).clip(0, 255)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=450)
    ap.add_argument("--height", type=int, default=375)
    ap.add_argument("--labels", type=int, default=60)
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--masks", action="store_true")
    a = ap.parse_args()
    if not 2 <= a.labels <= 64:
        raise SystemExit("--labels must be 2..64 (gt.png holds 4·d in 8 bits)")
    rng = np.random.default_rng(a.seed)
    h, w, top = a.height, a.width, a.labels - 1
    left = texture(rng, h, w)
    ys, xs = np.mgrid[0:h, 0:w]
    disp = np.rint(top * 0.1 + top * 0.25 * xs / w + top * 0.1 * ys / h).astype(int)
    for k in range(6):
        bw, bh = rng.integers(w // 10, w // 4), rng.integers(h // 10, h // 4)
        x0, y0 = rng.integers(0, w - bw), rng.integers(0, h - bh)
        d = top if k == 0 else int(rng.integers(top // 2, top))
        disp[y0 : y0 + bh, x0 : x0 + bw] = np.maximum(disp[y0 : y0 + bh, x0 : x0 + bw], d)
    right = texture(rng, h, w)
    zbuf = np.full((h, w), -1)
    for y in range(h):
        for x in range(w):
            xr = x - disp[y, x]
            if 0 <= xr < w and disp[y, x] > zbuf[y, xr]:
                zbuf[y, xr] = disp[y, x]
                right[y, xr] = left[y, x]
    os.makedirs(a.out, exist_ok=True)
    Image.fromarray(left.astype(np.uint8)).save(os.path.join(a.out, "imL.png"))
    Image.fromarray(right.astype(np.uint8)).save(os.path.join(a.out, "imR.png"))
    Image.fromarray((4 * disp).astype(np.uint8)).save(os.path.join(a.out, "gt.png"))
    if a.masks:
        border = 10
        inside = np.zeros((h, w), bool)
        inside[border : h - border, border : w - border] = True
        xr = xs - disp
        seen = (xr >= 0) & (zbuf[ys, np.clip(xr, 0, w - 1)] == disp)
        nonocc = inside & seen
        jump = np.zeros((h, w), bool)
        jump[:, 1:] |= np.abs(np.diff(disp, axis=1)) > 1
        jump[:, :-1] |= np.abs(np.diff(disp, axis=1)) > 1
        jump[1:, :] |= np.abs(np.diff(disp, axis=0)) > 1
        jump[:-1, :] |= np.abs(np.diff(disp, axis=0)) > 1
        near = np.zeros((h, w), bool)
        r = 3
        p = np.pad(jump, r)
        for dy in range(2 * r + 1):
            for dx in range(2 * r + 1):
                near |= p[dy : dy + h, dx : dx + w]
        for name, m in [("all", inside), ("nonocc", nonocc), ("disc", nonocc & near)]:
            Image.fromarray((255 * m).astype(np.uint8)).save(os.path.join(a.out, name + ".png"))


if __name__ == "__main__":
    main()
