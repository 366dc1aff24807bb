"""The GIL is released while segcut builds and solves: other Python threads keep running."""

import threading
import time

import numpy as np

import segcut


def test_other_threads_run_during_a_solve():
    # A segmentation-like problem (two regions and noise): large, yet solved in well under a
    # second (random capacities would take BK a minute).
    rng = np.random.default_rng(0)
    shape = (1500, 1500)
    img = np.zeros(shape)
    img[300:1200, 400:1100] = 100
    img += rng.normal(0, 30, size=shape)
    g = segcut.Grid(shape, connectivity=8)
    g.add_grid_edges(6, structure=segcut.moore_structure(2, directed=True), symmetric=True)
    g.add_grid_tedges(np.rint(np.abs(img - 100) / 4), np.rint(np.abs(img) / 4))
    span = {}

    def work():
        span["start"] = time.perf_counter()
        g.maxflow(solver="bk")
        span["end"] = time.perf_counter()

    t = threading.Thread(target=work)
    ticks = []
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
    t.join()
    inside = [span["start"]] + [x for x in ticks if span["start"] < x < span["end"]] + [span["end"]]
    native = sum(g.result.times[k] for k in ("build", "solve", "verify"))
    # With the GIL held during the native solve this thread could not tick in that time: the
    # longest pause between its ticks would be at least as long as the solve.
    gap = max(b - a for a, b in zip(inside, inside[1:]))
    assert len(inside) > 100
    assert gap < 0.6 * native, (gap, native)


def test_parallel_solves_agree():
    rng = np.random.default_rng(1)
    shape = (200, 210)
    w = rng.integers(0, 50, size=shape)
    s = rng.integers(0, 150, size=shape)
    t = rng.integers(0, 150, size=shape)
    results = []

    def work():
        g = segcut.Grid(shape)
        g.add_grid_edges(w, symmetric=True)
        g.add_grid_tedges(s, t)
        results.append((g.maxflow(solver="bk"), g.get_grid_segments().sum()))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(results) == 4 and len(set(results)) == 1
