"""segcut.maxflow against PyMaxflow 1.3: the same flows (exactly for integers, within 1e-6
relative for floats) and the same segments (both return the canonical cut, the nodes that can
still reach the sink), on random graphs, grids of every structure, warm re-solves, copies,
networkx views and the multi-label moves; and PyMaxflow's own examples, run unchanged."""

import doctest
import io
import os
import runpy
import sys
import tarfile
import types
from contextlib import redirect_stdout

import numpy as np
import pytest

import segcut
import segcut.maxflow as sm


def close(a, b, kind):
    if kind is int:
        return a == b and type(a) is int
    if np.isinf(a) or np.isinf(b):
        return np.isinf(a) and np.isinf(b)
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def build_random(M, kind, rng_seed, n, m, with_inf):
    rng = np.random.default_rng(rng_seed)
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    if kind is int:
        c, r = rng.integers(0, 30, m), rng.integers(0, 30, m)
        s, t = rng.integers(-10, 40, n), rng.integers(-10, 40, n)
    else:
        c, r = rng.random(m) * 10, rng.random(m) * 3
        s, t = rng.random(n) * 25 - 4, rng.random(n) * 25 - 4
        if with_inf:
            c[rng.random(m) < 0.1] = np.inf
    g = M.Graph[kind](n, m)
    ids = g.add_nodes(n)
    half = m // 2
    for k in range(half):
        g.add_edge(int(i[k]), int(j[k]), c[k], r[k])
    g.add_edges(i[half:], j[half:], c[half:], r[half:])
    for v in range(n):
        g.add_tedge(v, s[v], t[v])
    return g, ids


@pytest.mark.parametrize("kind,with_inf", [(int, False), (float, False), (float, True)])
def test_random_graphs(maxflow_ref, kind, with_inf):
    for seed in range(60):
        rng = np.random.default_rng(1000 + seed)
        n, m = int(rng.integers(2, 60)), int(rng.integers(0, 200))
        ours, ids = build_random(sm, kind, seed, n, m, with_inf)
        ref, _ = build_random(maxflow_ref, kind, seed, n, m, with_inf)
        f, fr = ours.maxflow(), ref.maxflow()
        assert close(f, fr, kind), (seed, f, fr)
        lo, hi = ours.flow_bounds
        assert lo <= hi and hi == f
        assert (ours.get_grid_segments(ids) == ref.get_grid_segments(ids)).all(), seed
        assert [ours.get_segment(v) for v in ids] == [ref.get_segment(v) for v in ids]
        assert ours.get_node_count() == ref.get_node_count()
        assert ours.get_edge_count() == ref.get_edge_count()


def test_float_scaling_is_bounded():
    """Non-integer capacities: the returned cut's capacity and a feasible flow bracket the
    maximum flow; 1e-7-sized differences between two cuts are still told apart."""
    g = sm.Graph[float]()
    n = g.add_nodes(2)
    g.add_tedge(n[0], 1.0 + 3e-7, 0)
    g.add_tedge(n[1], 1.0, 0)
    g.add_edge(n[0], n[1], 1e9, 1e9)
    g.add_tedge(n[1], 0, 2.0 + 1e-7)
    f = g.maxflow()
    lo, hi = g.flow_bounds
    assert lo <= 2.0 + 1e-7 + 1e-12 and hi == f
    assert abs(f - (2.0 + 1e-7)) < 1e-12
    assert g.scale > 1


def test_infinite_everywhere_is_infinite():
    g = sm.Graph[float]()
    n = g.add_nodes(2)
    g.add_tedge(n[0], np.inf, 0)
    g.add_edge(n[0], n[1], np.inf, 0)
    g.add_tedge(n[1], 0, np.inf)
    assert g.maxflow() == np.inf


def test_large_integers_are_exact_when_the_cut_is_small():
    g = sm.Graph[int]()
    n = g.add_nodes(3)
    g.add_tedge(n[0], 2**50, 0)
    g.add_edge(n[0], n[1], 2**45, 0)
    g.add_edge(n[1], n[2], 7, 0)
    g.add_tedge(n[2], 0, 2**40)
    assert g.maxflow() == 7
    assert g.flow_bounds == (7, 7)
    assert g.get_grid_segments(n).tolist() == [False, False, True]


def grid_case(M, kind, seed, shape, structure, symmetric, mask=False, periodic=False, calls=1):
    rng = np.random.default_rng(seed)
    g = M.Graph[kind]()
    ids = g.add_grid_nodes(shape)
    if mask:
        ids = ids.copy()
        ids.flat[rng.choice(ids.size, ids.size // 7, replace=False)] = -1
    for _ in range(calls):
        w = rng.integers(0, 20, shape) if kind is int else rng.random(shape) * 20
        g.add_grid_edges(ids, weights=w, structure=structure, symmetric=symmetric, periodic=periodic)
    s = rng.integers(0, 90, shape) if kind is int else rng.random(shape) * 90
    t = rng.integers(0, 90, shape) if kind is int else rng.random(shape) * 90
    g.add_grid_tedges(ids, s, t)
    return g, ids


S5 = np.ones((5, 5))
S5[2, 2] = 0
STRUCTURES = [
    ("default", (24, 31), None),
    ("4", (24, 31), sm.vonNeumann_structure(2, directed=True)),
    ("8", (24, 31), sm.moore_structure(2, directed=True)),
    ("8u", (24, 31), sm.moore_structure(2)),
    ("5x5", (17, 19), S5),
    ("aniso", (20, 20), np.array([[0, 1, 0], [4, 0, 2], [0, 3, 0]])),
    ("diag", (20, 20), np.array([[0, 0, 0], [0, 0, 0], [0, 0, 1]])),
    ("3d6", (5, 9, 11), sm.vonNeumann_structure(3)),
    ("3d26", (5, 9, 11), sm.moore_structure(3, directed=True)),
    ("3d-2d", (5, 9, 11), sm.vonNeumann_structure(2)),
]


@pytest.mark.parametrize("kind", [int, float])
@pytest.mark.parametrize("name,shape,structure", STRUCTURES, ids=[s[0] for s in STRUCTURES])
@pytest.mark.parametrize("variant", ["plain", "symmetric", "mask", "periodic", "twice"])
def test_grids(maxflow_ref, kind, name, shape, structure, variant):
    args = dict(symmetric=variant == "symmetric", mask=variant == "mask", periodic=variant == "periodic", calls=2 if variant == "twice" else 1)
    for seed in range(3):
        ours, ids = grid_case(sm, kind, seed, shape, structure, **args)
        ref, _ = grid_case(maxflow_ref, kind, seed, shape, structure, **args)
        f, fr = ours.maxflow(), ref.maxflow()
        assert close(f, fr, kind), (seed, f, fr)
        real = ids[ids != -1]  # PyMaxflow raises for -1; segcut says False
        assert (ours.get_grid_segments(real) == ref.get_grid_segments(real)).all()
        assert not ours.get_grid_segments(ids)[ids == -1].any()
        assert ours.get_edge_count() == ref.get_edge_count()


def test_central_node_layout(maxflow_ref):
    """PyMaxflow's "central node connected to every other node" layout: node ids rearranged
    into a (2, 24) array so that one structure entry links them."""
    out = []
    for M in (sm, maxflow_ref):
        g = M.Graph[int]()
        ids = g.add_grid_nodes((5, 5)).ravel()
        arranged = np.empty((2, 24), dtype=np.int64)
        arranged[0] = ids[12]
        arranged[1] = np.hstack([ids[:12], ids[13:]])
        g.add_grid_edges(arranged, np.arange(48).reshape(2, 24), structure=np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0]]))
        g.add_grid_tedges(ids, np.arange(25) % 7, 30 - np.arange(25))
        out.append((g.maxflow(), g.get_grid_segments(ids).tolist(), g.get_edge_count()))
    assert out[0] == out[1]


@pytest.mark.parametrize("kind", [int, float])
def test_reuse_trees(maxflow_ref, kind):
    """Re-solves after terminal changes (PyMaxflow's reuse_trees protocol, marking the changed
    nodes): the same flows and segments as PyMaxflow's, and segcut's solves continue warm."""
    rng = np.random.default_rng(7)
    shape = (40, 50)
    w = rng.integers(1, 30, shape)
    base_s, base_t = rng.integers(0, 100, shape), rng.integers(0, 100, shape)
    graphs = []
    for M in (sm, maxflow_ref):
        g = M.Graph[kind]()
        ids = g.add_grid_nodes(shape)
        g.add_grid_edges(ids, w.astype(kind))
        g.add_grid_tedges(ids, base_s.astype(kind), base_t.astype(kind))
        graphs.append((g, ids))
    first = [g.maxflow() for g, _ in graphs]
    assert close(first[0], first[1], kind)
    warm = []
    for step in range(5):
        sel = rng.random(shape) < 0.05
        ds = np.where(sel, rng.integers(0, 60, shape), 0).astype(kind)
        dt = np.where(sel, rng.integers(0, 60, shape), 0).astype(kind)
        flows, segs = [], []
        for g, ids in graphs:
            g.add_grid_tedges(ids, ds, dt)
            g.mark_grid_nodes(ids[sel])
            flows.append(g.maxflow(reuse_trees=True))
            segs.append(g.get_grid_segments(ids))
        assert close(flows[0], flows[1], kind), (step, flows)
        assert (segs[0] == segs[1]).all()
        warm.append(graphs[0][0].result.extra.get("warm"))
    if kind is int:
        assert all(warm), warm


def test_copy_and_reset(maxflow_ref):
    g = sm.Graph[int]()
    ids = g.add_grid_nodes((6, 6))
    g.add_grid_edges(ids, 3)
    g.add_grid_tedges(ids[:, :1], 100, 0)
    g.add_grid_tedges(ids[:, -1:], 0, 100)
    h = g.copy()
    h.add_grid_tedges(ids[:, -1:], 0, 100)
    h.add_edge(int(ids[0, 0]), int(ids[0, 5]), 50, 0)
    assert g.maxflow() == 18
    assert h.maxflow() == 68
    assert g.copy().maxflow() == 18
    g.reset()
    assert g.get_node_count() == 0 and g.get_edge_count() == 0
    n = g.add_nodes(1)
    g.add_tedge(n[0], 4, 6)
    assert g.maxflow() == 4


@pytest.mark.parametrize("kind", [int, float])
def test_nx_graph(maxflow_ref, kind):
    pytest.importorskip("networkx")
    graphs = []
    for M in (sm, maxflow_ref):
        g = M.Graph[kind]()
        ids = g.add_grid_nodes((4, 4))
        f = 1.37 if kind is float else 1  # fractional capacities for Graph[float]
        g.add_grid_edges(ids, f * (np.arange(16).reshape(4, 4) % 5), structure=sm.moore_structure(2, True), symmetric=True)
        g.add_grid_tedges(ids, f * np.arange(16).reshape(4, 4), f * (15 - np.arange(16).reshape(4, 4)))
        graphs.append(g)
    before = [g.get_nx_graph() for g in graphs]
    edges = [sorted((str(u), str(v), round(w, 9)) for u, v, w in b.edges(data="weight")) for b in before]
    assert edges[0] == edges[1] and len(edges[0]) > 40
    flows = [g.maxflow() for g in graphs]
    assert close(flows[0], flows[1], kind)
    after = [g.get_nx_graph() for g in graphs]
    import networkx as nx

    for a in after:
        # What the source reaches in the residual graph is the source segment.
        reach = nx.descendants(a, "s")
        assert "t" not in reach
        assert {v for v in reach if v != "t"} <= {v for v in range(16) if a.nodes[v]["segment"] == 0}
    assert [after[0].nodes[v]["segment"] for v in range(16)] == [after[1].nodes[v]["segment"] for v in range(16)]


def energy(unary, binary, labels):
    return sm.fastmin.energy_of_grid_labeling(unary, binary, labels)


@pytest.mark.parametrize("kind", [int, float])
@pytest.mark.parametrize("move", ["aexpansion_grid", "abswap_grid"])
def test_multilabel_moves(maxflow_ref, kind, move):
    import maxflow.fastmin  # noqa: F401  (PyMaxflow's submodule)

    rng = np.random.default_rng(3)
    for seed in range(4):
        truth = np.repeat(np.arange(4), 6)[None, :].repeat(12, 0)
        noisy = np.where(rng.random(truth.shape) < 0.25, rng.integers(0, 4, truth.shape), truth)
        unary = (10 * (noisy[..., None] != np.arange(4))).astype(kind)
        a, b = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
        binary = (3 * np.minimum(np.abs(a - b), 2)).astype(kind)
        ours = getattr(sm, move)(unary, binary)
        ref = getattr(maxflow_ref, move)(unary, binary)
        eo, er = energy(unary, binary, ours), energy(unary, binary, ref)
        assert eo <= er + 1e-9 if move == "abswap_grid" else eo == er, (seed, eo, er)
        if move == "aexpansion_grid":
            assert (ours == ref).all()


def test_docstring_examples():
    res = doctest.testmod(sm, extraglobs={"maxflow": sm, "np": np}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 20 and res.failed == 0
    res = doctest.testmod(sm.fastmin, extraglobs={"np": np}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted >= 3 and res.failed == 0


# ------------------------------------------------------------ PyMaxflow's own examples


def pymaxflow_sdist():
    """PyMaxflow's source distribution (its examples and docs), from SEGCUT_PYMAXFLOW_SDIST
    (.ci/run downloads it with pip); required in CI, else the tests skip."""
    path = os.environ.get("SEGCUT_PYMAXFLOW_SDIST")
    if not path or not os.path.exists(path):
        if os.environ.get("SEGCUT_REQUIRE_PYMAXFLOW") == "1":
            pytest.fail("SEGCUT_REQUIRE_PYMAXFLOW=1 but SEGCUT_PYMAXFLOW_SDIST does not name PyMaxflow's sdist")
        pytest.skip("SEGCUT_PYMAXFLOW_SDIST not set (pip download --no-binary :all: PyMaxflow==1.3.2)")
    return path


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    out = tmp_path_factory.mktemp("pymaxflow")
    with tarfile.open(pymaxflow_sdist()) as tar:
        members = [m for m in tar.getmembers() if "/examples/" in m.name or m.name.endswith("maxflow/__init__.py")]
        tar.extractall(out, members=members, filter="data") if sys.version_info >= (3, 12) else tar.extractall(out, members=members)
    ex = next(out.glob("*/examples"))
    return ex


def run_example(path, module, monkeypatch):
    """Runs an example file unchanged with ``import maxflow`` giving ``module``; returns
    what it printed and every array it showed or plotted."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    monkeypatch.setattr(plt, "imshow", lambda a, *x, **k: shown.append(np.array(a)))
    monkeypatch.setitem(sys.modules, "maxflow", module)
    if module is sm:
        monkeypatch.setitem(sys.modules, "maxflow.fastmin", sm.fastmin)
    try:
        import imageio.v3  # noqa: F401
    except ImportError:  # the example reads its PNG with imageio: Pillow stands in
        from PIL import Image

        v3 = types.ModuleType("imageio.v3")
        v3.imread = lambda p: np.array(Image.open(p))
        pkg = types.ModuleType("imageio")
        pkg.v3 = v3
        monkeypatch.setitem(sys.modules, "imageio", pkg)
        monkeypatch.setitem(sys.modules, "imageio.v3", v3)
    monkeypatch.chdir(path.parent)
    monkeypatch.syspath_prepend(str(path.parent))
    monkeypatch.delitem(sys.modules, "examples_utils", raising=False)
    buf = io.StringIO()
    with redirect_stdout(buf):
        runpy.run_path(str(path), run_name="__main__")
    return buf.getvalue(), shown


@pytest.mark.parametrize(
    "name", ["simple.py", "binary_restoration.py", "layout_examples.py", "layout_example2.py", "layout_example3D.py"]
)
def test_pymaxflow_examples_run_unchanged(examples, maxflow_ref, monkeypatch, name):
    pytest.importorskip("networkx")
    path = examples / name
    assert path.exists(), f"{name} is not in PyMaxflow's examples any more"
    ours = run_example(path, sm, monkeypatch)
    ref = run_example(path, maxflow_ref, monkeypatch)
    assert ours[0] == ref[0]
    assert len(ours[1]) == len(ref[1])
    for a, b in zip(ours[1], ref[1]):
        assert (a == b).all()


def test_pymaxflow_module_docstring(examples, maxflow_ref):
    """The example in PyMaxflow's own module docstring, run against segcut.maxflow."""
    src = next(examples.parent.glob("maxflow/__init__.py")).read_text()
    doc = src.split('"""')[1]
    test = doctest.DocTestParser().get_doctest(doc, {"maxflow": sm, "np": np}, "pymaxflow-doc", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    sys.modules.setdefault("maxflow", maxflow_ref)
    old = sys.modules["maxflow"]
    sys.modules["maxflow"] = sm
    try:
        runner.run(test)
    finally:
        sys.modules["maxflow"] = old
    assert runner.failures == 0 and runner.tries >= 6


def test_bad_input_is_an_error_and_changes_nothing():
    g = sm.Graph[float]()
    ids = g.add_grid_nodes((3, 3))
    g.add_grid_edges(ids, 1.0)
    edges = g.get_edge_count()
    bad_structure = np.array([[0, 1, 0], [1, 0, 1], [0, -1, 0]])
    with pytest.raises(ValueError):
        g.add_grid_edges(ids, 1.0, structure=bad_structure)
    with pytest.raises(ValueError):
        g.add_grid_edges(ids, np.full((3, 3), np.nan))
    with pytest.raises(ValueError):
        g.add_grid_edges(ids, 1.0, structure=np.ones((2, 2)))
    with pytest.raises(ValueError):
        g.add_edge(0, 9, 1.0, 1.0)
    with pytest.raises(ValueError):
        g.add_edges([0, 1], [1, 2], [1.0, -1.0], 0)
    with pytest.raises(ValueError):
        g.add_grid_tedges(np.array([0, 12]), 1, 1)
    with pytest.raises(ValueError):
        g.get_segment(9)
    assert g.get_edge_count() == edges
    g.add_grid_tedges(ids[:, 0], 5.0, 0)
    g.add_grid_tedges(ids[:, -1], 0, 5.0)
    assert g.maxflow() == 3.0


def test_float_bounds_are_tight_on_a_grid():
    """The feasible flow and the cut's capacity of a fractional 200² restoration are within
    1e-8 relative of each other: the scale keeps each arc to 2**-29 of the largest."""
    rng = np.random.default_rng(5)
    img = rng.random((200, 200)) * 100
    g = sm.Graph[float]()
    ids = g.add_grid_nodes(img.shape)
    g.add_grid_edges(ids, 17.3)
    g.add_grid_tedges(ids, img, 100 - img)
    f = g.maxflow()
    lo, hi = g.flow_bounds
    assert hi == f and lo <= hi
    assert (hi - lo) <= 1e-8 * hi


@pytest.mark.parametrize("solver", ["cuda-grid", "cuda-csr"])
@pytest.mark.parametrize("kind", [int, float])
def test_gpu_solvers_give_the_same_cut(gpu, solver, kind):
    """segcut.maxflow graphs on the GPU solvers (g.solver): the same flow and segments as BK,
    for a grid (grid form) and the same grid with one extra edge (general form)."""
    for extra in (False, True):
        out = []
        for name in ("bk", solver):
            g, ids = grid_case(sm, kind, 11, (300, 400), None, False)
            if extra:
                g.add_edge(int(ids[0, 0]), int(ids[-1, -1]), 5, 5)
            g.solver = name
            out.append((g.maxflow(), g.get_grid_segments(ids)))
        assert close(out[1][0], out[0][0], kind)
        assert (out[1][1] == out[0][1]).all()


def small_cases():
    def empty(M):
        g = M.Graph[int]()
        return g.maxflow()

    def no_edges(M):
        g = M.Graph[float]()
        n = g.add_nodes(3)
        g.add_tedge(n[0], 2.5, 1.0)
        return g.maxflow(), g.get_grid_segments(n).tolist()

    def one_d(M):
        g = M.Graph[int]()
        ids = g.add_grid_nodes((6,))
        g.add_grid_edges(ids, 3)
        g.add_grid_tedges(ids[:1], 9, 0)
        g.add_grid_tedges(ids[-1:], 0, 9)
        return g.maxflow(), g.get_grid_segments(ids).tolist()

    def grid_then_more_nodes(M):
        g = M.Graph[int]()
        ids = g.add_grid_nodes((3, 4))
        g.add_grid_edges(ids, 2)
        more = g.add_nodes(2)
        g.add_edge(int(ids[0, 0]), int(more[0]), 5, 5)
        g.add_tedge(int(more[0]), 10, 0)
        g.add_grid_tedges(ids[:, -1], 0, 7)
        return g.maxflow(), g.get_grid_segments(ids).tolist()

    def four_d(M):
        g = M.Graph[int]()
        ids = g.add_grid_nodes((2, 3, 2, 2))
        g.add_grid_edges(ids, 1)
        g.add_grid_tedges(ids, np.arange(24).reshape(ids.shape) % 5, 2)
        return g.maxflow(), g.get_grid_segments(ids).ravel().tolist()

    def fractional_into_int(M):
        g = M.Graph[int]()
        n = g.add_nodes(2)
        g.add_edge(n[0], n[1], 2.7, 0)  # truncated, as PyMaxflow converts to long
        g.add_tedge(n[0], 5, 0)
        g.add_tedge(n[1], 0, 5)
        return g.maxflow()

    return [empty, no_edges, one_d, grid_then_more_nodes, four_d, fractional_into_int]


@pytest.mark.parametrize("case", small_cases(), ids=lambda f: f.__name__)
def test_small_cases(maxflow_ref, case):
    assert case(sm) == case(maxflow_ref)


def test_reuse_trees_after_edge_changes_is_still_exact(maxflow_ref):
    """Edges added after a solve, nothing marked: PyMaxflow's warm solve then misses flow (its
    documented contract); segcut solves the graph as it stands, as a fresh PyMaxflow graph does."""
    def build(M):
        g = M.Graph[int]()
        ids = g.add_grid_nodes((4, 4))
        g.add_grid_edges(ids, 2)
        g.add_grid_tedges(ids, np.arange(16).reshape(4, 4), 8)
        return g, ids

    g, ids = build(sm)
    g.maxflow()
    g.add_grid_edges(ids, 5)
    g.add_grid_tedges(ids[0], 3, 0)
    ours = g.maxflow(reuse_trees=True), g.get_grid_segments(ids)
    r, rids = build(maxflow_ref)
    r.add_grid_edges(rids, 5)
    r.add_grid_tedges(rids[0], 3, 0)
    assert ours[0] == r.maxflow()
    assert (ours[1] == r.get_grid_segments(rids)).all()


def test_docs_example_runs():
    """The example of docs/python.md's "PyMaxflow compatibility" section runs as written."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "python.md"
    text = doc.read_text()
    section = text[text.index("## PyMaxflow compatibility") :]
    section = section[: section.index("\n## ", 5)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 2
    buf = io.StringIO()
    with redirect_stdout(buf):
        for code in blocks:
            exec(compile(code, str(doc), "exec"), {})
    assert buf.getvalue().strip()
