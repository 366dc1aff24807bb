#!/usr/bin/env python3
"""PyMaxflow's own grid examples, end to end, through PyMaxflow and through segcut.maxflow.

The same program text runs with ``maxflow`` bound to each module (build the graph, solve, read
the segments), in a fresh process per (module, case) and interleaved ``--repeat`` times; the
table shows the fastest run of each and checks that the flows and segments agree.

Cases (PyMaxflow's tutorial and examples, scaled up):
  restoration   binary restoration (tutorial): a noisy 0/255 image, 4-connected, weight 50
  restoration8  the same 8-connected (the directed Moore structure, symmetric)
  float         the same in ``Graph[float]`` with fractional terminal capacities
  layout3d      layout_example3D's 6-connected structure on a (40, 200, 200) volume

    python bench_compat.py                       # 1000 x 1000 images
    python bench_compat.py --size 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys

CASE = r"""
import json, sys, time
import numpy as np
which, case, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
if which == "segcut":
    import segcut.maxflow as maxflow
else:
    import maxflow
rng = np.random.default_rng(0)
clean = np.zeros((size, size)); clean[size // 4: 3 * size // 4, size // 5: 4 * size // 5] = 255
img = np.clip(clean + rng.normal(0, 90, clean.shape), 0, 255).astype(np.int64)
t = time.perf_counter()
if case == "restoration":
    g = maxflow.Graph[int]()
    ids = g.add_grid_nodes(img.shape)
    g.add_grid_edges(ids, 50)
    g.add_grid_tedges(ids, img, 255 - img)
elif case == "restoration8":
    g = maxflow.Graph[int]()
    ids = g.add_grid_nodes(img.shape)
    # (PyMaxflow 1.3.2's moore_structure(directed=True) fails on Python 3: spelled out)
    g.add_grid_edges(ids, 35, structure=np.array([[0, 0, 0], [0, 0, 1], [1, 1, 1]]), symmetric=True)
    g.add_grid_tedges(ids, img, 255 - img)
elif case == "float":
    g = maxflow.Graph[float]()
    ids = g.add_grid_nodes(img.shape)
    g.add_grid_edges(ids, 50.0)
    g.add_grid_tedges(ids, img / 2.55, (255 - img) / 2.55)
elif case == "layout3d":
    vol = img[:200, :200][None].repeat(40, 0)
    g = maxflow.Graph[int]()
    ids = g.add_grid_nodes(vol.shape)
    g.add_grid_edges(ids, 30, structure=maxflow.vonNeumann_structure(3))
    g.add_grid_tedges(ids, vol, 255 - vol)
flow = g.maxflow()
seg = g.get_grid_segments(ids)
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "flow": float(flow), "sink": int(seg.sum())}))
"""


def run(which: str, case: str, size: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CASE, which, case, str(size)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="restoration,restoration8,float,layout3d")
    ap.add_argument("--json", help="write the raw rows here")
    args = ap.parse_args()
    rows = []
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print("| case | PyMaxflow s | segcut.maxflow s | speed-up | same flow and segments |")
    print("|---|---|---|---|---|")
    for case in args.cases.split(","):
        best = {}
        for _ in range(args.repeat):
            for which in ("pymaxflow", "segcut"):
                r = run(which, case, args.size)
                rows.append({"case": case, "module": which, **r})
                if which not in best or r["seconds"] < best[which]["seconds"]:
                    best[which] = r
        p, s = best["pymaxflow"], best["segcut"]
        same = abs(p["flow"] - s["flow"]) <= 1e-6 * max(1.0, abs(p["flow"])) and p["sink"] == s["sink"]
        print(f"| {case} | {p['seconds']:.2f} | {s['seconds']:.2f} | {p['seconds'] / s['seconds']:.2f}× | {'yes' if same else 'NO'} |")
        if not same:
            raise SystemExit(f"{case}: results differ: {p} vs {s}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
