#!/usr/bin/env python3
"""Times the reference C++ Boykov-Kolmogorov solver (maxflow v3.0x, through the PyMaxflow binding) on
grids dumped by `SEGCUT_BENCH_DUMP=DIR cargo bench --bench bk SPEC...`, so that both solvers run on
the very same graphs. Needs `pip install numpy PyMaxflow`. Prints the median of 5 `maxflow()` calls
(graph construction excluded) and the flow, to compare with the `csr ms` / `grid ms` columns.

Each grid arc is added together with its reverse as one pair (`add_edges(i, j, cap, rev_cap)`), and
pairs whose capacities are both zero are left out, exactly as segcut builds its own arcs.

    python3 benches/bk_cpp.py DIR/*.grid
"""
import sys
import time

import maxflow
import numpy as np

# segcut's direction order (see Connectivity::offsets): pairs (2k, 2k+1) are opposite.
OFFSETS_8 = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (1, 1, 0), (-1, -1, 0), (1, -1, 0), (-1, 1, 0)]
OFFSETS_6 = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
OFFSETS = {4: OFFSETS_8[:4], 8: OFFSETS_8, 6: OFFSETS_6}


def span(o, n):
    """Index ranges (from, to) of the nodes that have a neighbour at offset o along an axis of n."""
    if o == 1:
        return slice(0, n - 1), slice(1, n)
    if o == -1:
        return slice(1, n), slice(0, n - 1)
    return slice(0, n), slice(0, n)


def pairs(w, h, d, offsets, caps):
    """(i, j, cap, rev_cap) of every arc pair, from the even directions."""
    idx = np.arange(w * h * d, dtype=np.int32).reshape(d, h, w)
    out = []
    for k in range(0, len(offsets), 2):
        dx, dy, dz = offsets[k]
        (xs, xt), (ys, yt), (zs, zt) = span(dx, w), span(dy, h), span(dz, d)
        i = idx[zs, ys, xs].ravel()
        j = idx[zt, yt, xt].ravel()
        c = caps[k][i]
        r = caps[k + 1][j]
        keep = (c != 0) | (r != 0)
        out.append((i[keep], j[keep], c[keep], r[keep]))
    return [np.concatenate(a) for a in zip(*out)]


def main(paths):
    for path in paths:
        raw = np.fromfile(path, dtype="<i4")
        w, h, d, deg = (int(x) for x in raw[:4])
        name = path.rsplit("/", 1)[-1]
        if deg not in OFFSETS:
            print(f"{name:36} skipped: connectivity {deg} not supported here")
            continue
        n = w * h * d
        arr = raw[4:]
        src, snk = arr[:n], arr[n:2 * n]
        caps = [arr[(2 + k) * n:(3 + k) * n] for k in range(deg)]
        i, j, c, r = pairs(w, h, d, OFFSETS[deg], caps)
        times = []
        for _ in range(5):
            g = maxflow.Graph[int](n, len(i))
            g.add_nodes(n)
            g.add_edges(i, j, c, r)
            g.add_grid_tedges(np.arange(n), src, snk)
            t0 = time.perf_counter()
            flow = g.maxflow()
            times.append(time.perf_counter() - t0)
        times.sort()
        print(f"{name:36} C++ BK (PyMaxflow) {times[len(times) // 2] * 1e3:9.1f} ms  flow {flow}")


if __name__ == "__main__":
    main(sys.argv[1:])
