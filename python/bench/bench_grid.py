#!/usr/bin/env python3
"""segcut vs PyMaxflow: building and solving grid graphs from numpy arrays.

Each case is a segmentation-like problem (a smooth image with noise: terminal capacities from
the distance to a foreground and a background level, contrast-sensitive n-link weights), built
from the same numpy arrays by both libraries and solved to the foreground mask. Every
(library, size) pair runs in a fresh process, so the peak resident memory it reports
(``ru_maxrss`` after the run minus before it, per pixel) is that case's alone.

    python bench_grid.py                          # 1, 4, 16 Mpx images; 2, 8 M voxel volumes
    python bench_grid.py --images 1,4 --volumes 2 --engines segcut-bk,pymaxflow
    python bench_grid.py --engines segcut-bk,segcut-gpu,pymaxflow   # on a GPU machine

Engines: ``segcut-bk`` (CPU, certified), ``segcut-bk-noverify``, ``segcut-auto`` (GPU when
usable), ``segcut-gpu`` (``cuda-grid``; skipped without a GPU), ``pymaxflow``. Prints a
Markdown table of the fastest of ``--repeat`` interleaved runs; ``--json`` writes the raw rows. The flows of all engines must agree (checked).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time


def problem(shape, seed=0):
    """Inputs for one case: per-pixel n-link weights per axis, source and sink capacities."""
    import numpy as np

    rng = np.random.default_rng(seed)
    # A smooth random field (sum of a few low-frequency waves), thresholded-ish, plus noise.
    grids = np.meshgrid(*[np.linspace(0, 1, n, dtype=np.float32) for n in shape], indexing="ij")
    img = np.zeros(shape, np.float32)
    for k in range(4):
        f = rng.uniform(1, 4, size=len(shape)).astype(np.float32)
        ph = rng.uniform(0, 6.3, size=len(shape)).astype(np.float32)
        wave = np.ones(shape, np.float32)
        for g, fi, pi in zip(grids, f, ph):
            wave *= np.sin(g * fi * 6.283 + pi)
        img += wave
    img = (img > 0).astype(np.float32) * 100 + 80
    img += rng.normal(0, 25, size=shape).astype(np.float32)
    source = np.rint(np.abs(img - 80) / 4).astype(np.int32)
    sink = np.rint(np.abs(img - 180) / 4).astype(np.int32)
    weights = []
    for axis in range(len(shape)):
        d = np.diff(img, axis=axis, append=np.take(img, [-1], axis=axis))
        weights.append(np.rint(12 * np.exp(-(d * d) / (2 * 25.0**2))).astype(np.int32))
    return weights, source, sink


def structure(nd, axis):
    import numpy as np

    s = np.zeros((3,) * nd)
    idx = [1] * nd
    idx[axis] = 2
    s[tuple(idx)] = 1
    return s


def run_segcut(shape, weights, source, sink, solver, verify):
    import segcut

    t0 = time.perf_counter()
    g = segcut.Grid(shape, connectivity=4 if len(shape) == 2 else 6)
    for axis, w in enumerate(weights):
        g.add_grid_edges(w, structure=structure(len(shape), axis), symmetric=True)
    g.add_grid_tedges(source, sink)
    t1 = time.perf_counter()
    flow = g.maxflow(solver=solver, verify=verify, gpu_min_nodes=0)
    seg = g.get_grid_segments()
    t2 = time.perf_counter()
    return flow, int(seg.sum()), t1 - t0, t2 - t1, g.result.solver


def run_pymaxflow(shape, weights, source, sink):
    import maxflow

    t0 = time.perf_counter()
    g = maxflow.Graph[int]()
    ids = g.add_grid_nodes(shape)
    for axis, w in enumerate(weights):
        g.add_grid_edges(ids, weights=w, structure=structure(len(shape), axis), symmetric=True)
    g.add_grid_tedges(ids, source, sink)
    t1 = time.perf_counter()
    flow = g.maxflow()
    seg = g.get_grid_segments(ids)
    t2 = time.perf_counter()
    return flow, int(seg.sum()), t1 - t0, t2 - t1, "bk (PyMaxflow)"


def child(engine, shape):
    weights, source, sink = problem(shape)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    if engine == "pymaxflow":
        out = run_pymaxflow(shape, weights, source, sink)
    else:
        solver = {
            "segcut-bk": "bk",
            "segcut-bk-noverify": "bk",
            "segcut-auto": "auto",
            "segcut-gpu": "cuda-grid",
        }[engine]
        if engine == "segcut-gpu":
            import segcut

            why = segcut.gpu_unavailable_reason()
            if why is not None:
                print(json.dumps({"skip": why}))
                return
        out = run_segcut(shape, weights, source, sink, solver, engine != "segcut-bk-noverify")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    flow, fg, build, solve, ran = out
    n = 1
    for s in shape:
        n *= s
    print(
        json.dumps(
            {
                "engine": engine,
                "ran": ran,
                "shape": list(shape),
                "pixels": n,
                "flow": int(flow),
                "foreground": fg,
                "build_s": build,
                "solve_s": solve,
                "total_s": build + solve,
                "peak_bytes_per_px": max(0, peak - base) * 1024 / n,
            }
        )
    )


def shape_of(kind, mega):
    n = int(mega * 1_000_000)
    if kind == "image":
        side = int(round(n**0.5))
        return (side, side)
    side = int(round(n ** (1 / 3)))
    return (side, side, side)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", default="1,4,16", help="2D sizes in Mpx (comma-separated; '' for none)")
    ap.add_argument("--volumes", default="2,8", help="3D sizes in M voxels")
    ap.add_argument("--engines", default="segcut-bk,segcut-bk-noverify,segcut-auto,pymaxflow")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per engine and case, interleaved; the fastest is reported")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--child", nargs=2, metavar=("ENGINE", "SHAPE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], tuple(int(s) for s in a.child[1].split("x")))
        return
    cases = [("image", float(s)) for s in a.images.split(",") if s] + [
        ("volume", float(s)) for s in a.volumes.split(",") if s
    ]
    engines = a.engines.split(",")
    rows = []
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}", file=sys.stderr)
    for kind, mega in cases:
        shape = shape_of(kind, mega)
        flows = set()
        best = {}
        for _ in range(a.repeat):
            for e in engines:
                r = subprocess.run(
                    [sys.executable, __file__, "--child", e, "x".join(map(str, shape))],
                    capture_output=True,
                    text=True,
                )
                if r.returncode != 0:
                    print(f"{e} {shape}: failed\n{r.stderr}", file=sys.stderr)
                    continue
                row = json.loads(r.stdout.strip().splitlines()[-1])
                if "skip" in row:
                    print(f"{e} {shape}: skipped ({row['skip']})", file=sys.stderr)
                    continue
                row["kind"] = kind
                flows.add((row["flow"], row["foreground"]))
                print(f"{e:20s} {kind} {'x'.join(map(str, shape)):>14s}: {row['total_s']:.3f} s, "
                      f"{row['peak_bytes_per_px']:.0f} B/px ({row['ran']})", file=sys.stderr)
                if e not in best or row["total_s"] < best[e]["total_s"]:
                    best[e] = row
        rows.extend(best[e] for e in engines if e in best)
        if len(flows) > 1:
            sys.exit(f"engines disagree on {shape}: {flows}")
    ref = {(tuple(r["shape"])): r["total_s"] for r in rows if r["engine"] == "pymaxflow"}
    print("| case | engine (solver that ran) | build s | solve s | total s | vs PyMaxflow | peak B/px |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        shape = "x".join(map(str, r["shape"]))
        case = f"{r['kind']} {shape} ({r['pixels'] / 1e6:.1f} M)"
        base = ref.get(tuple(r["shape"]))
        speed = f"{base / r['total_s']:.2f}x" if base else "-"
        print(f"| {case} | {r['engine']} ({r['ran']}) | {r['build_s']:.3f} | {r['solve_s']:.3f} | "
              f"{r['total_s']:.3f} | {speed} | {r['peak_bytes_per_px']:.0f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
