"""segcut.Grid against PyMaxflow on random grids: the same flow, segcut's cut certified, the
same sink segment (the set of nodes that can still reach the sink is the same for every maximum
flow, and BK's final sink tree is exactly that set)."""

import numpy as np
import pytest

import segcut

STRUCTS_2D = {
    4: segcut.vonNeumann_structure(2, directed=True),
    8: segcut.moore_structure(2, directed=True),
}
STRUCTS_3D = {
    6: segcut.vonNeumann_structure(3, directed=True),
    26: segcut.moore_structure(3, directed=True),
}


def random_problem(rng, shape, hi=50):
    w = rng.integers(0, hi, size=shape)
    s = rng.integers(0, 3 * hi, size=shape)
    t = rng.integers(0, 3 * hi, size=shape)
    return w, s, t


def reference(maxflow, shape, w, s, t, structure, symmetric):
    g = maxflow.Graph[int]()
    ids = g.add_grid_nodes(shape)
    g.add_grid_edges(ids, weights=w, structure=structure, symmetric=symmetric)
    g.add_grid_tedges(ids, s, t)
    flow = g.maxflow()
    return flow, g.get_grid_segments(ids)


def check_certified(g, flow):
    cert = g.certificate
    assert cert is not None
    assert cert.flow == cert.cut_capacity
    # The certificate's flow excludes the constant that terminal capacity shared by a node adds
    # (BK's reparametrisation); with non-negative capacities that constant is never negative.


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("conn", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
def test_random_2d_grids_match_pymaxflow(maxflow_ref, seed, conn, symmetric):
    rng = np.random.default_rng(1000 * seed + conn)
    shape = (int(rng.integers(1, 40)), int(rng.integers(1, 40)))
    w, s, t = random_problem(rng, shape)
    structure = STRUCTS_2D[conn] if symmetric else None
    if not symmetric and conn == 8:
        structure = segcut.moore_structure(2)
    ref_flow, ref_seg = reference(maxflow_ref, shape, w, s, t, structure, symmetric)
    g = segcut.Grid(shape, connectivity=conn)
    g.add_grid_edges(w, structure=structure, symmetric=symmetric)
    g.add_grid_tedges(s, t)
    for solver in ["bk", "dinic", "auto"]:
        flow = g.maxflow(solver=solver)
        assert flow == ref_flow
        check_certified(g, flow)
        np.testing.assert_array_equal(g.get_grid_segments(), ref_seg)
        assert g.result.solver in ("bk", "dinic")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("conn", [6, 26])
def test_random_3d_grids_match_pymaxflow(maxflow_ref, seed, conn):
    rng = np.random.default_rng(77 + seed + conn)
    shape = tuple(int(v) for v in rng.integers(1, 12, size=3))
    w, s, t = random_problem(rng, shape)
    ref_flow, ref_seg = reference(maxflow_ref, shape, w, s, t, STRUCTS_3D[conn], True)
    g = segcut.Grid(shape, connectivity=conn)
    g.add_grid_edges(w, structure=STRUCTS_3D[conn], symmetric=True)
    g.add_grid_tedges(s, t)
    flow = g.maxflow()
    assert flow == ref_flow
    check_certified(g, flow)
    np.testing.assert_array_equal(g.get_grid_segments(), ref_seg)


def test_per_direction_weights_and_negative_tedges_match_pymaxflow(maxflow_ref):
    rng = np.random.default_rng(5)
    shape = (17, 23)
    g = segcut.Grid(shape, connectivity=8)
    ref = maxflow_ref.Graph[int]()
    ids = ref.add_grid_nodes(shape)
    # One call per direction, each with its own weights, as PyMaxflow users do; the structure
    # value multiplies the weights.
    for k, idx in enumerate([(1, 2), (2, 1), (2, 2), (2, 0), (0, 1)]):
        st = np.zeros((3, 3), int)
        st[idx] = k + 1
        w = rng.integers(0, 30, size=shape)
        g.add_grid_edges(w, structure=st)
        ref.add_grid_edges(ids, weights=w, structure=st, symmetric=False)
    s = rng.integers(-40, 40, size=shape)  # negative terminal capacities, as BK allows
    t = rng.integers(-40, 40, size=shape)
    g.add_grid_tedges(s, t)
    ref.add_grid_tedges(ids, s, t)
    extra = rng.integers(0, 9, size=(1, 23))
    g.add_grid_tedges(5, extra)  # broadcast, added on top
    ref.add_grid_tedges(ids, np.full(shape, 5), np.broadcast_to(extra, shape))
    flow = g.maxflow()
    assert flow == ref.maxflow()
    check_certified(g, flow)
    np.testing.assert_array_equal(g.get_grid_segments(), ref.get_grid_segments(ids))


def test_capacities_add_up_over_calls():
    a = segcut.Grid((5, 6))
    b = segcut.Grid((5, 6))
    a.add_grid_edges(2, symmetric=True)
    a.add_grid_edges(3, symmetric=True)
    b.add_grid_edges(5, symmetric=True)
    for g in (a, b):
        g.add_grid_tedges(np.pad(np.full((5, 1), 100), ((0, 0), (0, 5))), np.pad(np.full((5, 1), 100), ((0, 0), (5, 0))))
    assert a.maxflow() == b.maxflow() == 25


def test_dtypes():
    shape = (6, 7)
    rng = np.random.default_rng(3)
    w = rng.integers(0, 20, size=shape)
    s = rng.integers(0, 50, size=shape)
    t = rng.integers(0, 50, size=shape)
    flows = set()
    for dt in [np.uint8, np.int16, np.int32, np.int64, np.uint64, np.float32, np.float64]:
        g = segcut.Grid(shape)
        g.add_grid_edges(w.astype(dt), symmetric=True)
        g.add_grid_tedges(s.astype(dt), t.astype(dt))
        flows.add(g.maxflow())
    assert len(flows) == 1
    g = segcut.Grid(shape)
    g.add_grid_edges(np.ones(shape, bool))
    g.add_grid_edges(w.tolist())  # nested lists work too
    # Non-contiguous views are copied, not misread.
    g2 = segcut.Grid(shape)
    big = np.zeros((12, 14), np.int64)
    big[::2, ::2] = w
    g2.add_grid_edges(big[::2, ::2], symmetric=True)
    g2.add_grid_tedges(s, t)
    assert g2.maxflow() in flows


def test_bad_input_is_a_clear_error():
    g = segcut.Grid((4, 5))
    with pytest.raises(ValueError, match="negative"):
        g.add_grid_edges(-np.ones((4, 5)))
    with pytest.raises(ValueError, match="fractional"):
        g.add_grid_edges(np.full((4, 5), 0.5))
    with pytest.raises(ValueError, match="NaN"):
        g.add_grid_edges(np.full((4, 5), np.nan))
    with pytest.raises(TypeError, match="dtype"):
        g.add_grid_edges(np.array(["a"] * 20).reshape(4, 5))
    with pytest.raises(ValueError, match="broadcast"):
        g.add_grid_tedges(np.ones((3, 5)), 0)
    with pytest.raises(ValueError, match="not a neighbour"):
        g.add_grid_edges(1, structure=segcut.moore_structure(2))  # diagonals in a 4-grid
    with pytest.raises(ValueError, match="overflow"):
        g.add_grid_edges(np.full((4, 5), 2**31 - 1), symmetric=True)
        g.add_grid_edges(np.full((4, 5), 2**31 - 1), symmetric=True)
    with pytest.raises(ValueError, match="connectivity"):
        segcut.Grid((4, 5), connectivity=6)
    with pytest.raises(ValueError, match="connectivity"):
        segcut.Grid((4, 5), connectivity=5)
    with pytest.raises(ValueError, match="dimensions"):
        segcut.Grid((4,))
    with pytest.raises(ValueError, match="unknown solver"):
        g.maxflow(solver="nope")
    with pytest.raises(RuntimeError, match="maxflow"):
        segcut.Grid((2, 2)).get_grid_segments()
    with pytest.raises(MemoryError):
        segcut.Grid((1 << 40, 1 << 20))


def test_failed_add_leaves_the_grid_unchanged():
    g = segcut.Grid((3, 3))
    g.add_grid_tedges(np.array([[9, 0, 0]] * 3), np.array([[0, 0, 9]] * 3))
    g.add_grid_edges(1, symmetric=True)
    before = g.maxflow()
    w = np.ones((3, 3), int)
    w[2, 1] = -1
    with pytest.raises(ValueError, match=r"\[2, 1\]"):
        g.add_grid_edges(w, symmetric=True)
    assert g.maxflow() == before


def test_flows_are_a_maximum_flow():
    rng = np.random.default_rng(11)
    shape = (9, 8)
    g = segcut.Grid(shape, connectivity=8)
    w = rng.integers(0, 20, size=shape)
    g.add_grid_edges(w, structure=segcut.moore_structure(2))
    g.add_grid_tedges(rng.integers(0, 60, size=shape), rng.integers(0, 60, size=shape))
    flow = g.maxflow(flows=True)
    arcs, src, snk = g.get_flows()
    assert arcs.shape == (8,) + shape
    # Conservation: inflow + source = outflow + sink at every node.
    net = src.astype(np.int64) - snk
    for d, off in enumerate(g.offsets):
        f = arcs[d].astype(np.int64)
        net -= f
        # f[p] arrives at p + off
        shifted = np.zeros(shape, np.int64)
        dst = tuple(slice(max(o, 0), n + min(o, 0)) for o, n in zip(off, shape))
        srcs = tuple(slice(max(-o, 0), n - max(o, 0)) for o, n in zip(off, shape))
        shifted[dst] = f[srcs]
        net += shifted
    assert np.all(net == 0)
    assert np.all(arcs >= 0)
    assert src.sum() == g.certificate.flow
    assert flow >= g.certificate.flow


def test_write_max_round_trip(tmp_path):
    rng = np.random.default_rng(8)
    shape = (7, 9)
    g = segcut.Grid(shape, connectivity=8)
    g.add_grid_edges(rng.integers(0, 9, size=shape), structure=segcut.moore_structure(2))
    g.add_grid_tedges(rng.integers(0, 30, size=shape), rng.integers(0, 30, size=shape))
    flow = g.maxflow()
    p = tmp_path / "grid.max"
    g.write_max(p)
    back = segcut.Graph.read_max(p)
    assert back.num_nodes == 63
    assert back.maxflow() == flow


@pytest.mark.parametrize("solver", ["cuda-grid", "cuda-csr", "auto"])
def test_gpu_solvers_match_bk(gpu, solver):
    rng = np.random.default_rng(42)
    shape = (300, 257)
    w, s, t = random_problem(rng, shape, hi=100)
    g = segcut.Grid(shape, connectivity=8)
    g.add_grid_edges(w, structure=segcut.moore_structure(2), symmetric=True)
    g.add_grid_tedges(s, t)
    ref = g.maxflow(solver="bk")
    ref_seg = g.get_grid_segments()
    assert g.maxflow(solver=solver, gpu_min_nodes=0) == ref
    assert g.result.solver in ("cuda-grid", "cuda-csr")
    check_certified(g, ref)
    np.testing.assert_array_equal(g.get_grid_segments(), ref_seg)
