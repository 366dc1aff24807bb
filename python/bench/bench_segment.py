#!/usr/bin/env python3
"""segcut.segment end to end on a large synthetic colour photo (numpy in, numpy mask out).

    python bench_segment.py --mpx 36 --connectivity 8      # the issue's 36 MP 8-connected case

Prints the solver that ran, per-phase times, wall time and the process's peak memory.
"""

import argparse
import json
import resource
import time

import numpy as np

import segcut


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpx", type=float, default=36)
    ap.add_argument("--connectivity", type=int, default=8)
    ap.add_argument("--solver", default="auto")
    ap.add_argument("--iterations", type=int, default=5)
    a = ap.parse_args()
    h = int((a.mpx * 1e6 * 3 / 4) ** 0.5)
    w = int(a.mpx * 1e6 / h)
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:h, 0:w]
    inside = ((yy - h / 2) / (h / 3)) ** 2 + ((xx - w / 2) / (w / 3)) ** 2 < 1
    img = np.where(inside[..., None], [200, 60, 40], [40, 120, 200]).astype(np.float32)
    img += rng.normal(0, 30, size=img.shape).astype(np.float32)
    img = np.clip(img, 0, 255).astype(np.uint8)
    del yy, xx
    seeds = np.zeros((h, w), np.uint8)
    seeds[h // 2 - 50 : h // 2 + 50, w // 2 - 50 : w // 2 + 50] = segcut.SEED_FOREGROUND
    seeds[:20] = segcut.SEED_BACKGROUND
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    mask = segcut.segment(img, seeds, connectivity=a.connectivity, solver=a.solver, iterations=a.iterations)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    acc = float((np.asarray(mask) == inside).mean())
    print(json.dumps({
        "shape": [h, w], "megapixels": h * w / 1e6, "connectivity": a.connectivity,
        "solver": mask.result.solver, "reason": mask.result.reason, "fallback": mask.result.fallback,
        "wall_s": wall, "times": mask.result.times, "accuracy": acc,
        "peak_rss_gib": peak / 2**20, "rss_growth_bytes_per_px": (peak - base) * 1024 / (h * w),
    }, indent=1))


if __name__ == "__main__":
    main()
