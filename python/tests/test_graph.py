"""segcut.Graph against PyMaxflow on random general graphs; flows, files, errors."""

import numpy as np
import pytest

import segcut


def random_graph(rng, n, m, hi=40):
    i = rng.integers(0, n, size=m)
    j = rng.integers(0, n, size=m)
    keep = i != j  # PyMaxflow's BK asserts on self loops
    i, j = i[keep], j[keep]
    cap = rng.integers(0, hi, size=i.size)
    rev = rng.integers(0, hi, size=i.size)
    ts = rng.integers(-hi, 3 * hi, size=n)
    tt = rng.integers(-hi, 3 * hi, size=n)
    return i, j, cap, rev, ts, tt


def build_ref(maxflow, n, i, j, cap, rev, ts, tt):
    g = maxflow.Graph[int]()
    nodes = g.add_nodes(n)
    g.add_edges(nodes[i], nodes[j], cap, rev)
    for v in range(n):
        g.add_tedge(int(nodes[v]), int(ts[v]), int(tt[v]))
    return g, nodes


def build(n, i, j, cap, rev, ts, tt):
    g = segcut.Graph()
    g.add_nodes(n)
    g.add_edges(i, j, cap, rev)
    g.add_tedges(np.arange(n), ts, tt)
    return g


@pytest.mark.parametrize("seed", range(10))
def test_random_graphs_match_pymaxflow(maxflow_ref, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    m = int(rng.integers(0, 6 * n))
    args = random_graph(rng, n, m)
    ref, nodes = build_ref(maxflow_ref, n, *args)
    ref_flow = ref.maxflow()
    ref_seg = np.array([ref.get_segment(int(v)) for v in nodes], bool)
    g = build(n, *args)
    for solver in ["bk", "dinic", "auto"]:
        assert g.maxflow(solver=solver) == ref_flow
        c = g.certificate
        assert c.flow == c.cut_capacity
        np.testing.assert_array_equal(g.get_segments(), ref_seg)


def test_flows_are_conserved_and_within_capacity():
    rng = np.random.default_rng(4)
    n, m = 200, 1200
    i, j, cap, rev, ts, tt = random_graph(rng, n, m)
    ts, tt = np.abs(ts), np.abs(tt)
    g = build(n, i, j, cap, rev, ts, tt)
    g.add_edges([5, 5], [5, 5], [3, 3])  # self loops are accepted and carry nothing
    flow = g.maxflow(flows=True)
    e, s, t = g.get_flows()
    assert e.shape == (i.size + 2,) and s.shape == (n,) and t.shape == (n,)
    assert np.all(e[-2:] == 0)
    e = e[:-2]
    assert np.all(e <= cap) and np.all(-e <= rev)
    assert np.all((s >= 0) & (s <= np.maximum(ts - tt, 0)))
    net = s - t
    np.add.at(net, i, -e)
    np.add.at(net, j, e)
    assert np.all(net == 0)
    assert s.sum() == t.sum() == g.certificate.flow
    assert flow == g.certificate.flow + int(np.minimum(ts, tt).sum())


def test_bulk_and_single_adds_agree():
    a, b = segcut.Graph(3), segcut.Graph(3)
    a.add_edges([0, 1], [1, 2], [4, 5], [0, 1])
    b.add_edge(0, 1, 4)
    b.add_edge(1, 2, 5, 1)
    for g in (a, b):
        g.add_tedges(0, 10, 0)  # scalars broadcast
        g.add_tedge(2, 0, 10)
    assert a.maxflow() == b.maxflow() == 4
    assert a.num_edges == 2 and a.num_nodes == 3


def test_read_write_max(tmp_path):
    rng = np.random.default_rng(9)
    n = 120
    i, j, cap, rev, ts, tt = random_graph(rng, n, 500)
    g = build(n, i, j, cap, rev, np.abs(ts), np.abs(tt))
    flow = g.maxflow()
    p = tmp_path / "g.max"
    g.write_max(p)
    back = segcut.Graph.read_max(p)
    assert back.maxflow() == flow
    assert back.num_nodes == n
    np.testing.assert_array_equal(back.get_segments(), g.get_segments())


def test_read_max_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.max"):
        segcut.Graph.read_max(tmp_path / "nope.max")
    bad = tmp_path / "bad.max"
    bad.write_text("p max 4 1\nn 1 s\nn 2 t\na 1 9 5\n")
    with pytest.raises(ValueError, match=r"bad\.max:4"):
        segcut.Graph.read_max(bad)


def test_bad_input_is_a_clear_error():
    g = segcut.Graph(3)
    with pytest.raises(ValueError, match="out of range"):
        g.add_edges([0], [3], [1])
    with pytest.raises(ValueError, match="negative"):
        g.add_edges([0], [1], [-1])
    with pytest.raises(ValueError, match="out of range"):
        g.add_tedges([7], [1], [1])
    with pytest.raises(ValueError, match="broadcast"):
        g.add_edges([0, 1], [1, 2, 0], [1])
    with pytest.raises(TypeError):
        g.add_edges(["a"], [1], [1])
    with pytest.raises(ValueError, match="overflow"):
        g.add_edges([0], [1], [2**31 - 1], [1])
    # A failed bulk add leaves the graph as it was.
    with pytest.raises(ValueError, match="edge 1"):
        g.add_edges([0, 1], [1, 2], [1, -1])
    assert g.num_edges == 0
    with pytest.raises(RuntimeError, match="flows=True"):
        g.maxflow()
        g.get_flows()


def test_gpu_csr_matches_bk(gpu):
    rng = np.random.default_rng(12)
    n = 100_000
    args = random_graph(rng, n, 5 * n, hi=100)
    g = build(n, *args)
    ref = g.maxflow(solver="bk")
    seg = g.get_segments()
    assert g.maxflow(solver="cuda-csr") == ref
    assert g.result.solver == "cuda-csr"
    np.testing.assert_array_equal(g.get_segments(), seg)
