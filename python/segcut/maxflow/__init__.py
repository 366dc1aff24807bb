"""PyMaxflow's interface over segcut's engine: ``import segcut.maxflow as maxflow``.

The classes and functions of PyMaxflow 1.3 (``Graph[int]`` / ``Graph[float]``, ``GraphInt``,
``GraphFloat``, node ids from ``add_nodes`` / ``add_grid_nodes``, ``add_edge``, ``add_edges``,
``add_tedge``, ``add_grid_edges``, ``add_grid_tedges``, ``maxflow``, ``get_segment``,
``get_grid_segments``, ``reuse_trees`` / ``mark_node`` / ``mark_grid_nodes``, ``copy``,
``reset``, ``get_nx_graph``, ``aexpansion_grid`` / ``abswap_grid``,
``moore_structure`` / ``vonNeumann_structure``) with the same arguments and results, so that
PyMaxflow programs run unchanged with this module imported as ``maxflow``.

How it differs inside (docs/python.md, "PyMaxflow compatibility"):

* The graph is kept as numpy arrays and cut when :meth:`GraphInt.maxflow` is called: a grid
  built from one ``add_grid_nodes`` block with 3×3(×3) structures is solved as segcut's grid
  graph (parallel arcs merged), anything else as a general graph. The cut returned is the
  canonical one (the nodes that can still reach the sink), which is also what PyMaxflow's BK
  returns, so segments agree wherever the minimum cut is unique and where it is not.
* segcut's solvers take 32-bit integer capacities. Integer graphs whose capacities fit are cut
  exactly. Otherwise (``Graph[float]``, ``np.inf``, integers beyond 2**30) capacities are
  scaled by a power of two ``S`` and rounded **down**: the flow of the rounded graph divided
  by ``S`` is then a feasible flow of the real one, a lower bound on the minimum cut, and the
  returned cut's capacity (summed from the capacities as given) an upper bound. Both are in
  :attr:`GraphInt.flow_bounds`; ``maxflow()`` returns the upper one. ``S`` is the finer of the
  scale at which no finite capacity exceeds 2**30 - 1 and the one that maps an estimate of the
  minimum cut to 2**28 units (arcs above 2**30 - 1 are then clamped, harmlessly; the only choice
  with infinite capacities), so each arc loses less than 2**-29 of the largest capacity (or of
  the estimated cut), and the bounds differ by at most (arcs in the cut) / ``S``.
* Infinite capacities are arcs no minimum cut crosses when a finite cut exists; when none
  does, ``maxflow()`` returns ``inf``.
* ``maxflow(reuse_trees=True)`` continues from the last solve's search trees when only
  terminal capacities changed on a grid (segcut's ``maxflow::Dynamic``); otherwise it solves
  from scratch. Either way the result is the maximum flow of the graph as it now stands, so
  ``mark_node`` / ``mark_grid_nodes`` are accepted but not needed.
* ``copy()`` copies the capacities as given (and the last result); ``get_nx_graph()`` shows the
  residual capacities of one maximum flow, which may differ from PyMaxflow's where maximum
  flows are not unique (the segments do not).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import _segcut
from .. import moore_structure as _moore
from .. import vonNeumann_structure as _von_neumann

__all__ = [
    "Graph",
    "GraphInt",
    "GraphFloat",
    "moore_structure",
    "vonNeumann_structure",
    "aexpansion_grid",
    "abswap_grid",
    "fastmin",
]

#: The PyMaxflow release whose interface this module follows.
PYMAXFLOW_API = "1.3"

# The largest capacity handed to the solver: opposite arcs of a pair then sum below 2**31.
_CAP_LIMIT = 2**30 - 1
# Scales are chosen so that the estimated minimum cut spans _CAP_LIMIT / 4 units: arcs clamped
# to _CAP_LIMIT then cost more than any minimum cut.
_TARGET = _CAP_LIMIT / 4.0
# Below this many units a first solve's cut is re-solved at a finer scale.
_REFINE_BELOW = _CAP_LIMIT / 64.0


def moore_structure(ndim: int = 2, directed: bool = False) -> np.ndarray:
    """The 8- (2D) or 26-neighbourhood (3D) as a 3×3(×3) structure (PyMaxflow's function);
    ``directed`` keeps only the forward half, for ``add_grid_edges(..., symmetric=True)``.

    >>> int(maxflow.moore_structure(2, directed=True).sum())
    4
    """
    return _moore(ndim, directed)


def vonNeumann_structure(ndim: int = 2, directed: bool = False) -> np.ndarray:
    """The 4- (2D) or 6-neighbourhood (3D) as a 3×3(×3) structure (PyMaxflow's function);
    ``directed`` keeps only the forward half.

    >>> maxflow.vonNeumann_structure(2).astype(int).tolist()
    [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    """
    return _von_neumann(ndim, directed)


def _ids(nodeids: Any) -> np.ndarray:
    a = np.asarray(nodeids)
    if a.dtype.kind not in "iu":
        if a.dtype.kind == "f" and np.all(a == np.round(a)):
            return a.astype(np.int64)
        raise TypeError(f"node ids must be integers, got dtype {a.dtype}")
    return a.astype(np.int64, copy=False)


class _Problem:
    """One max-flow instance as numpy arrays: per-node terminal capacities and either grid
    directions over one node block (``grid``) or arc pairs (``pairs``)."""

    def __init__(self, n, src, snk, shape, grid, pairs):
        self.n = n
        self.src = src
        self.snk = snk
        self.shape = shape  # the node block's shape for the grid form, else None
        self.grid = grid  # {offset: capacities of the arcs p -> p + offset, of `shape`}
        self.pairs = pairs  # (i, j, cap, rev) or None


def vals_array(shape, sl, vals, graph) -> np.ndarray:
    """A direction's capacities as an array of ``shape``: ``vals`` on the slice ``sl``."""
    acc = np.zeros(shape, np.float64 if graph._float else graph._dtype)
    acc[sl] = vals
    return acc


def _dir_array(shape, off, acc) -> np.ndarray:
    """A grid direction's capacities as an array (a number stands for every arc inside)."""
    if np.ndim(acc):
        return acc
    out = np.zeros(shape, np.asarray(acc).dtype)
    out[_valid_slices(shape, off)[0]] = acc
    return out


def _valid_slices(shape: Tuple[int, ...], off: Tuple[int, ...]):
    """Slices of the nodes ``p`` with ``p + off`` inside ``shape``, and of those ``p + off``."""
    src, dst = [], []
    for s, o in zip(shape, off):
        src.append(slice(max(0, -o), min(s, s - o)))
        dst.append(slice(max(0, o), min(s, s + o)))
    return tuple(src), tuple(dst)


class GraphInt:
    """A flow network with integer capacities (PyMaxflow's ``GraphInt``, ``Graph[int]``).

    ``est_node_num`` and ``est_edge_num`` are accepted for compatibility (storage grows as
    needed). The terminals are implicit; nodes are added with :meth:`add_nodes` or
    :meth:`add_grid_nodes`, which return their ids.

    >>> g = maxflow.Graph[int](2, 2)
    >>> nodes = g.add_nodes(2)
    >>> g.add_edge(nodes[0], nodes[1], 1, 2)
    >>> g.add_tedge(nodes[0], 2, 5)
    >>> g.add_tedge(nodes[1], 9, 4)
    >>> g.maxflow()
    8
    >>> g.get_grid_segments(nodes)
    array([ True, False])
    """

    _dtype: Any = np.int64
    _float = False

    #: The solver segcut runs (``"auto"``: BK, or a GPU for large graphs when one is usable;
    #: ``"bk"``, ``"dinic"``, ``"cuda-grid"``, ``"cuda-csr"``), per class or per graph.
    solver = "auto"
    #: Check each cut's certificate (flow = cut capacity of the solved integer graph).
    verify = False

    def __init__(self, est_node_num: int = 0, est_edge_num: int = 0, copy_rhs: Any = None):
        if copy_rhs is not None:
            self._copy_from(copy_rhs)
        else:
            self.reset()

    # ----------------------------------------------------------------------------- building

    def reset(self) -> None:
        """Removes all nodes and edges."""
        self._n = 0
        self._src = np.zeros(16, self._dtype)
        self._snk = np.zeros(16, self._dtype)
        self._blocks: List[Tuple[int, Optional[Tuple[int, ...]]]] = []
        self._grid: Dict[Tuple[int, ...], np.ndarray] = {}
        self._chunks: List[Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._single: List[Tuple[int, int, Any, Any]] = []
        self._arc_count = 0
        self._edges_version = 0
        self._result: Optional[Dict[str, Any]] = None
        self._native: Optional[Tuple[Any, int, float]] = None

    def _copy_from(self, rhs: "GraphInt") -> None:
        if type(rhs) is not type(self):
            raise TypeError(f"copy_rhs must be a {type(self).__name__}")
        self.reset()
        self._n = rhs._n
        self._src = rhs._src.copy()
        self._snk = rhs._snk.copy()
        self._blocks = list(rhs._blocks)
        self._grid = {k: np.copy(v) if np.ndim(v) else v for k, v in rhs._grid.items()}
        self._chunks = list(rhs._chunks)  # chunks are never changed in place
        self._single = list(rhs._single)
        self._arc_count = rhs._arc_count
        self._result = None if rhs._result is None else dict(rhs._result)
        self.solver = rhs.solver
        self.verify = rhs.verify

    def copy(self) -> "GraphInt":
        """A copy of the graph: nodes, edges, capacities (as given) and the last result.

        >>> g = maxflow.Graph[int](); n = g.add_nodes(1); g.add_tedge(n[0], 3, 2)
        >>> h = g.copy(); h.add_tedge(n[0], 0, 5); (g.maxflow(), h.maxflow())
        (2, 3)
        """
        return type(self)(0, 0, self)

    def _grow(self, count: int) -> int:
        if count < 0:
            raise ValueError(f"cannot add a negative number of nodes ({count})")
        first = self._n
        need = first + count
        if need > self._src.size:
            size = max(need, 2 * self._src.size)
            for name in ("_src", "_snk"):
                old = getattr(self, name)
                new = np.zeros(size, self._dtype)
                new[:first] = old[:first]
                setattr(self, name, new)
        self._n = need
        self._changed()
        return first

    def _changed(self, edges: bool = False) -> None:
        if edges:
            self._edges_version += 1
        self._result = None

    def add_nodes(self, num_nodes: int) -> np.ndarray:
        """Adds ``num_nodes`` nodes; returns their ids (consecutive).

        >>> maxflow.Graph[float]().add_nodes(3)
        array([0, 1, 2])
        """
        first = self._grow(int(num_nodes))
        self._blocks.append((first, None))
        return np.arange(first, first + int(num_nodes))

    def add_grid_nodes(self, shape: Any) -> np.ndarray:
        """Adds one node per cell of ``shape``; returns their ids as an array of that shape.

        >>> maxflow.Graph[int]().add_grid_nodes((2, 3))
        array([[0, 1, 2],
               [3, 4, 5]])
        """
        shape = tuple(int(s) for s in np.atleast_1d(shape))
        count = int(np.prod(shape, dtype=np.int64))
        first = self._grow(count)
        self._blocks.append((first, shape))
        return np.arange(first, first + count, dtype=np.int64).reshape(shape)

    def get_node_count(self) -> int:
        """The number of (non-terminal) nodes."""
        return self._n

    def get_edge_count(self) -> int:
        """The number of non-terminal arcs: two per edge added (as PyMaxflow counts them)."""
        return self._arc_count

    get_node_num = get_node_count
    get_edge_num = get_edge_count

    def _cap(self, value: Any, what: str) -> Any:
        v = self._dtype(value) if not self._float else float(value)
        if v < 0 or (self._float and math.isnan(v)):
            raise ValueError(f"{what} must be a non-negative capacity, got {value!r}")
        return v

    def _check_node(self, i: int, what: str = "node") -> None:
        if not 0 <= i < self._n:
            raise ValueError(f"{what} {i} is not in the graph ({self._n} nodes)")

    def add_edge(self, i: int, j: int, capacity: Any, rcapacity: Any) -> None:
        """Adds the arcs ``i → j`` (``capacity``) and ``j → i`` (``rcapacity``); an edge with a
        node ``-1`` or from a node to itself is skipped, as in PyMaxflow.

        >>> g = maxflow.Graph[int](); n = g.add_nodes(2); g.add_edge(n[0], n[1], 3, 0)
        """
        i, j = int(i), int(j)
        if i == -1 or j == -1 or i == j:
            return
        self._check_node(i, "the first node")
        self._check_node(j, "the second node")
        self._single.append((i, j, self._cap(capacity, "capacity"), self._cap(rcapacity, "rcapacity")))
        self._arc_count += 2
        self._changed(edges=True)

    def _add_pairs(self, i: np.ndarray, j: np.ndarray, cap: np.ndarray, rev: np.ndarray) -> None:
        keep = (i != -1) & (j != -1) & (i != j)
        if not keep.all():
            i, j, cap, rev = i[keep], j[keep], cap[keep], rev[keep]
        if i.size == 0:
            return
        for name, a in (("i", i), ("j", j)):
            if a.min() < 0 or a.max() >= self._n:
                bad = int(a[(a < 0) | (a >= self._n)][0])
                raise ValueError(f"edge node {name} = {bad} is not in the graph ({self._n} nodes)")
        for name, c in (("capacity", cap), ("rev_capacity", rev)):
            if c.min() < 0 or (self._float and np.isnan(c).any()):
                raise ValueError(f"edge {name} holds negative or NaN values")
        self._chunks.append((i, j, cap, rev))
        self._arc_count += 2 * int(i.size)
        self._changed(edges=True)

    def add_edges(self, i: Any, j: Any, capacity: Any, rev_capacity: Any) -> None:
        """Adds the edges ``i[k] → j[k]`` (``capacity[k]``, and ``rev_capacity[k]`` back) in
        bulk; arguments broadcast together.

        >>> g = maxflow.Graph[float](); n = g.add_nodes(3)
        >>> g.add_edges(n[:2], n[1:], np.array([1.5, 2.0]), np.zeros(2))
        """
        i, j = _ids(i), _ids(j)
        cap = np.asarray(capacity, dtype=self._dtype if not self._float else np.float64)
        rev = np.asarray(rev_capacity, dtype=self._dtype if not self._float else np.float64)
        i, j, cap, rev = (np.ravel(a).copy() for a in np.broadcast_arrays(i, j, cap, rev))
        self._add_pairs(i, j, cap, rev)

    def add_tedge(self, i: int, cap_source: Any, cap_sink: Any) -> None:
        """Adds ``cap_source`` to the arc source → ``i`` and ``cap_sink`` to ``i`` → sink
        (repeats add up; negative values allowed, as in PyMaxflow); node ``-1`` is skipped.

        >>> g = maxflow.Graph[int](); n = g.add_nodes(1); g.add_tedge(n[0], 2, 5); g.maxflow()
        2
        """
        i = int(i)
        if i == -1:
            return
        self._check_node(i)
        if self._float:
            self._src[i] += float(cap_source)
            self._snk[i] += float(cap_sink)
        else:
            self._src[i] += self._dtype(cap_source)
            self._snk[i] += self._dtype(cap_sink)
        self._changed()

    def _values(self, v: Any, shape: Tuple[int, ...], what: str) -> np.ndarray:
        a = np.asarray(v)
        if a.dtype.kind not in "biuf":
            raise TypeError(f"{what} must be numbers, got dtype {a.dtype}")
        a = a.astype(np.float64 if self._float else self._dtype, copy=False)
        try:
            return np.broadcast_to(a, shape)
        except ValueError:
            raise ValueError(f"{what} of shape {a.shape} does not broadcast to the node ids' shape {shape}") from None

    def _whole_block(self, ids: np.ndarray) -> bool:
        """Whether ``ids`` are exactly the graph's one node block, in order (the grid form)."""
        if len(self._blocks) != 1 or self._blocks[0][1] is None or ids.shape != self._blocks[0][1]:
            return False
        if getattr(self, "_arange", None) is None or self._arange.size != self._n:
            self._arange = np.arange(self._n, dtype=np.int64)
        return bool(np.array_equal(ids.ravel(), self._arange))

    def add_grid_tedges(self, nodeids: Any, sourcecaps: Any, sinkcaps: Any) -> None:
        """Adds ``sourcecaps`` / ``sinkcaps`` (broadcast to ``nodeids``' shape) to the terminal
        arcs of the nodes ``nodeids`` (ids ``-1`` skipped; repeats add up).

        >>> g = maxflow.Graph[int](); ids = g.add_grid_nodes((2, 2))
        >>> g.add_grid_tedges(ids, [[3, 0], [0, 0]], 1); g.maxflow()
        1
        """
        ids = _ids(nodeids)
        s = self._values(sourcecaps, ids.shape, "sourcecaps")
        t = self._values(sinkcaps, ids.shape, "sinkcaps")
        if self._whole_block(ids):
            self._src[: self._n] += s.ravel()
            self._snk[: self._n] += t.ravel()
        else:
            keep = ids != -1
            ids, s, t = ids[keep], s[keep], t[keep]
            if ids.size and (ids.min() < 0 or ids.max() >= self._n):
                raise ValueError(f"node ids must lie in 0..{self._n - 1} (or be -1)")
            np.add.at(self._src, ids, s)
            np.add.at(self._snk, ids, t)
        self._changed()

    def add_grid_edges(
        self,
        nodeids: Any,
        weights: Any = 1,
        structure: Any = None,
        symmetric: bool = False,
        periodic: Any = False,
    ) -> None:
        """Adds an edge from every node ``p`` of ``nodeids`` to ``p + o`` for each non-zero
        entry ``o`` of ``structure`` (odd-sized, centred; any size, e.g. 5×5), with capacity
        ``weights[p] * structure[o]`` and, with ``symmetric``, the same back. ``structure=None``
        is ``vonNeumann_structure(nodeids.ndim, directed=symmetric)``. Ids ``-1`` are skipped;
        ``periodic`` (a bool, or one per axis) wraps the grid around.

        >>> g = maxflow.Graph[int](); ids = g.add_grid_nodes((3, 3))
        >>> g.add_grid_edges(ids, 2, structure=maxflow.moore_structure(2, True), symmetric=True)
        >>> g.get_edge_count()
        40
        """
        ids = _ids(nodeids)
        nd = ids.ndim
        if structure is None:
            structure = vonNeumann_structure(nd, bool(symmetric))
        st = np.asarray(structure, dtype=np.float64 if self._float else self._dtype)
        if st.ndim > nd:
            raise ValueError(f"structure has {st.ndim} dimensions, the node ids {nd}")
        st = st.reshape((1,) * (nd - st.ndim) + st.shape)
        if any(s % 2 == 0 for s in st.shape):
            raise ValueError("the structure array must have an odd shape")
        per = np.broadcast_to(np.asarray(periodic, dtype=bool), (nd,))
        w = self._values(weights, ids.shape, "weights")
        centre = tuple(s // 2 for s in st.shape)
        # Everything checked before anything is added: a failed call leaves the graph as it was.
        if st.size and ((st < 0).any() or (self._float and np.isnan(st).any())):
            raise ValueError("structure entries must be non-negative")
        if w.size and (np.min(w) < 0 or (self._float and np.isnan(w).any())):
            raise ValueError("edge weights must be non-negative")
        grid_form = not per.any() and self._whole_block(ids)
        scalar = np.ndim(weights) == 0
        for idx in zip(*np.nonzero(st)):
            off = tuple(int(a) - c for a, c in zip(idx, centre))
            if not any(off):
                continue  # the centre: a self loop
            sv = st[idx]
            if sv < 0 or (self._float and math.isnan(sv)):
                raise ValueError("structure entries must be non-negative")
            # One number for every node stays a number (no array of the grid's size).
            cap = np.broadcast_to(w.flat[0] * sv, w.shape) if scalar else w * sv
            if grid_form:
                self._add_grid_direction(ids.shape, off, cap, bool(symmetric))
            else:
                self._add_grid_pairs(ids, off, cap, bool(symmetric), per)

    def _add_grid_direction(self, shape, off, cap, symmetric) -> None:
        src, dst = _valid_slices(shape, off)
        c = cap[src]
        if c.size == 0:
            return
        count = c.size
        if not any(c.strides):
            c = c.flat[0]  # one value for all nodes: added as a number
        if np.min(c) < 0 or (self._float and np.isnan(c).any()):
            raise ValueError("edge weights must be non-negative")
        for o, sl, vals in ((off, src, c), (tuple(-x for x in off), dst, c if symmetric else None)):
            if vals is None:
                continue
            acc = self._grid.get(o)
            if acc is None:
                # One value for every arc of the direction stays one number.
                self._grid[o] = vals if np.ndim(vals) == 0 else vals_array(shape, sl, vals, self)
            elif np.ndim(acc) == 0 and np.ndim(vals) == 0:
                self._grid[o] = acc + vals
            else:
                if np.ndim(acc) == 0:
                    acc = self._grid[o] = vals_array(shape, sl, acc, self)
                acc[sl] += vals
        self._arc_count += 2 * count
        self._changed(edges=True)

    def _add_grid_pairs(self, ids, off, cap, symmetric, per) -> None:
        src_ix, dst_ix = [], []
        for s, o, p in zip(ids.shape, off, per):
            k = np.arange(s)
            if p:
                src_ix.append(k)
                dst_ix.append((k + o) % s)
            else:
                k = k[(k + o >= 0) & (k + o < s)]
                src_ix.append(k)
                dst_ix.append(k + o)
        if any(k.size == 0 for k in src_ix):
            return
        i = ids[np.ix_(*src_ix)].ravel()
        j = ids[np.ix_(*dst_ix)].ravel()
        c = np.ascontiguousarray(cap[np.ix_(*src_ix)]).ravel()
        self._add_pairs(i, j, c, c.copy() if symmetric else np.zeros_like(c))

    # ------------------------------------------------------------------------------ solving

    def mark_node(self, i: int) -> None:
        """Accepted for PyMaxflow's ``reuse_trees`` protocol. segcut compares every node's
        terminal capacities with the last solve's itself, so marking is not needed."""
        self._check_node(int(i))

    def mark_grid_nodes(self, nodeids: Any) -> None:
        """As :meth:`mark_node` for many nodes."""
        _ids(nodeids)

    def _problem(self) -> _Problem:
        n = self._n
        src, snk = self._src[:n], self._snk[:n]
        if not self._chunks and not self._single and self._blocks:
            first, shape = self._blocks[0]
            if len(self._blocks) == 1 and shape is not None and len(shape) in (2, 3):
                if all(max(abs(x) for x in o) <= 1 for o in self._grid):
                    return _Problem(n, src, snk, shape, dict(self._grid), None)
        chunks = list(self._chunks)
        if self._grid:
            shape = self._blocks[0][1]  # grid directions belong to the first block (at 0)
            ids = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
            for off, acc in self._grid.items():
                sl, dl = _valid_slices(shape, off)
                c = _dir_array(shape, off, acc)[sl].ravel()
                keep = c != 0
                chunks.append((ids[sl].ravel()[keep], ids[dl].ravel()[keep], c[keep], np.zeros(int(keep.sum()), acc.dtype)))
        if self._single:
            i, j, c, r = zip(*self._single)
            dt = np.float64 if self._float else self._dtype
            chunks.append((np.array(i, np.int64), np.array(j, np.int64), np.array(c, dt), np.array(r, dt)))
        if chunks:
            pairs = tuple(np.concatenate([c[k] for c in chunks]) for k in range(4))
        else:
            dt = np.float64 if self._float else self._dtype
            pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, dt), np.zeros(0, dt))
        return _Problem(n, src, snk, None, None, pairs)

    def maxflow(self, reuse_trees: bool = False) -> Any:
        """Computes the maximum flow (the capacity of the minimum cut, terminal constants
        included) and returns it: an int for ``GraphInt``, a float for ``GraphFloat``
        (``inf`` when every cut crosses an infinite arc). With ``reuse_trees``, a grid whose
        terminal capacities alone changed continues from the last solve.

        >>> g = maxflow.Graph[float](); n = g.add_nodes(2)
        >>> g.add_edge(n[0], n[1], 0.5, 0); g.add_tedge(n[0], 1.25, 0); g.add_tedge(n[1], 0, 2)
        >>> g.maxflow()
        0.5
        """
        p = self._problem()
        self._result = _solve(self, p, bool(reuse_trees))
        return self._result["flow"]

    @property
    def flow_bounds(self) -> Tuple[Any, Any]:
        """``(lower, upper)`` bounds on the maximum flow from the last :meth:`maxflow`:
        ``upper`` is the returned cut's capacity (what ``maxflow()`` returned), ``lower`` the
        value of a feasible flow; equal when the capacities were cut exactly."""
        return self._solved()["bounds"]

    @property
    def scale(self) -> float:
        """The factor the last solve multiplied capacities by before rounding them down to
        the solver's integers (1 for integer graphs that fit 2**30)."""
        return self._solved()["scale"]

    @property
    def result(self):
        """The last solve's :class:`segcut.SolveResult` (solver, reason, times)."""
        from .. import SolveResult

        return SolveResult._from(self._solved()["info"])

    def _solved(self) -> Dict[str, Any]:
        if self._result is None:
            raise RuntimeError("call maxflow() first")
        return self._result

    def _sink(self) -> np.ndarray:
        if self._result is None:
            return np.zeros(self._n, bool)  # PyMaxflow: every node is in the source segment
        return self._result["sink"]

    def get_segment(self, i: int) -> int:
        """1 when node ``i`` is in the sink segment after :meth:`maxflow`, else 0."""
        i = int(i)
        self._check_node(i)
        return int(self._sink()[i])

    def get_grid_segments(self, nodeids: Any) -> np.ndarray:
        """The segment of each node of ``nodeids`` as a bool array of its shape: True for
        the sink segment (ids ``-1`` give False).

        >>> g = maxflow.Graph[int](); ids = g.add_grid_nodes((1, 2))
        >>> g.add_grid_tedges(ids, [[5, 0]], [[0, 5]]); g.maxflow()
        0
        >>> g.get_grid_segments(ids)
        array([[False,  True]])
        """
        ids = _ids(nodeids)
        sink = self._sink()
        if self._whole_block(ids):
            return sink.reshape(ids.shape).copy()
        valid = ids != -1
        if ids[valid].size and (ids[valid].min() < 0 or ids[valid].max() >= self._n):
            raise ValueError(f"node ids must lie in 0..{self._n - 1} (or be -1)")
        return np.where(valid, sink[np.where(valid, ids, 0)], False)

    # -------------------------------------------------------------------------- inspection

    def get_nx_graph(self):
        """A ``networkx.DiGraph`` of the network: nodes ``0 .. n-1`` (attribute ``segment``)
        and ``'s'``, ``'t'``; every arc with a non-zero residual capacity (``weight``). Before
        :meth:`maxflow` the residuals are the capacities; after it, those a maximum flow
        leaves. Needs networkx (``pip install networkx``); for debugging small graphs."""
        import networkx as nx

        p = self._problem()
        if p.pairs is None:
            p = self._problem_pairs(p)
        i, j, cap, rev = p.pairs
        e = (p.src - p.snk).astype(np.float64 if self._float else self._dtype)
        if self._result is not None:
            solved = _solve(self, p, False, flows=True)
            edge, sflow, tflow = solved["flows"]
            fwd, back = cap - edge, rev + edge
            tr = e - sflow + tflow
            if self._float:
                # Capacities were rounded down to multiples of 1/scale: an arc whose integer
                # residual is 0 (saturated) keeps less than 1/scale here.
                tol = 1.0 / solved["scale"]
                fwd, back = np.where(fwd < tol, 0, fwd), np.where(back < tol, 0, back)
                tr = np.where(np.abs(tr) < tol, 0, tr)
        else:
            fwd, back, tr = cap, rev, e
        conv = float if self._float else int
        g = nx.DiGraph()
        g.add_nodes_from(range(self._n))
        for a, b, r in zip(np.concatenate([i, j]).tolist(), np.concatenate([j, i]).tolist(), np.concatenate([fwd, back]).tolist()):
            if r != 0:
                if g.has_edge(a, b):
                    g[a][b]["weight"] += conv(r)
                else:
                    g.add_edge(a, b, weight=conv(r))
        g.add_nodes_from(["s", "t"])
        sink = self._sink()
        for v in range(self._n):
            g.nodes[v]["segment"] = int(sink[v])
            r = conv(tr[v])
            if r > 0:
                g.add_edge("s", v, weight=r)
            elif r < 0:
                g.add_edge(v, "t", weight=-r)
        return g

    def _problem_pairs(self, p: _Problem) -> _Problem:
        """The grid form ``p`` as arc pairs."""
        ids = np.arange(p.n, dtype=np.int64).reshape(p.shape)
        chunks = []
        for off, acc in p.grid.items():
            sl, dl = _valid_slices(p.shape, off)
            c = _dir_array(p.shape, off, acc)[sl].ravel()
            chunks.append((ids[sl].ravel(), ids[dl].ravel(), c, np.zeros_like(c)))
        dt = np.float64 if self._float else self._dtype
        if not chunks:
            chunks = [(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, dt), np.zeros(0, dt))]
        pairs = tuple(np.concatenate([c[k] for c in chunks]) for k in range(4))
        return _Problem(p.n, p.src, p.snk, None, None, pairs)


class GraphFloat(GraphInt):
    """A flow network with real capacities (PyMaxflow's ``GraphFloat``, ``Graph[float]``):
    ``np.inf`` allowed; cut at a fixed-point scale with the bounds in :attr:`flow_bounds`
    (see the module's documentation)."""

    _dtype = np.float64
    _float = True


#: PyMaxflow's template-like access: ``Graph[int]``, ``Graph[float]``.
Graph = {int: GraphInt, float: GraphFloat}


# ------------------------------------------------------------------------------- the solve


def _solve(graph: GraphInt, p: _Problem, warm: bool, flows: bool = False) -> Dict[str, Any]:
    """Solves ``p`` (see the module's documentation for the scaling) and returns the result:
    ``flow``, ``bounds``, ``scale``, ``sink`` (bool per node), ``info``, and with ``flows``
    the pair, source and sink flows in the units of the capacities."""
    is_float = graph._float
    with np.errstate(invalid="ignore"):
        e = p.src - p.snk
    both_inf = np.isnan(e) if is_float else None
    if both_inf is not None and both_inf.any():
        e = np.where(both_inf, 0.0, e)
        const = _exact_sum(np.minimum(p.src, p.snk)[~both_inf], is_float)
    else:
        both_inf = None
        const = _exact_sum(np.minimum(p.src, p.snk), is_float)
    pos = np.maximum(e, 0)
    neg = np.maximum(-e, 0)
    if p.grid is not None:
        # A number standing for a whole direction counts as n arcs (an upper bound).
        arcs = [np.atleast_1d(a) if np.ndim(a) else np.full(1, a) * 1 for a in p.grid.values()]
        uniform = [np.ndim(a) == 0 for a in p.grid.values()]
    else:
        arcs = [p.pairs[2], p.pairs[3]]
        uniform = [False, False]

    exact = True
    has_inf = False
    fmax = 0.0
    for a in [pos, neg] + arcs:
        if a.size == 0:
            continue
        if is_float:
            fin = np.isfinite(a)
            if not fin.all():
                exact = False
                has_inf = True
            vals = a[fin] if not fin.all() else a
            if vals.size:
                fmax = max(fmax, float(vals.max()))
                if exact and not np.all(vals == np.floor(vals)):
                    exact = False
        else:
            fmax = max(fmax, float(a.max()))
    if fmax > _CAP_LIMIT:
        exact = False

    if exact:
        scale = 1.0
    else:
        u = min(_fsum(pos), _fsum(neg))
        if not math.isfinite(u):
            counts = [1, 1] + [p.n if un else 1 for un in uniform]
            u = sum(k * (_fsum(a[np.isfinite(a)]) if is_float else _fsum(a)) for k, a in zip(counts, [pos, neg] + arcs))
        scale = _scale_for(u if u > 0 else (fmax if fmax > 0 else 1.0))
        # Two safe scales, the finer wins: one where no finite capacity reaches the clamp (BK
        # sums flows in 64 bits, so only single arcs must fit), and, above, one where every
        # clamped arc costs more than the minimum cut (needed for infinite capacities).
        arc_scale = _arc_scale(fmax)
        if not has_inf:
            scale = max(scale, arc_scale)
        if not is_float:
            scale = min(scale, 1.0)

    # A warm re-solve needs the same n-links at the same scale as the kept state.
    keep = graph._native
    reuse = (
        warm
        and not flows
        and p.grid is not None
        and keep is not None
        and keep[1] == graph._edges_version
        and keep[2] == scale
    )
    # Keep BK's state for a later reuse_trees solve whenever BK is what runs anyway.
    keep_state = p.grid is not None and not flows and (warm or _runs_bk(graph.solver, p.n))
    res = _solve_at(graph, p, pos, neg, arcs, scale, flows, reuse, keep_state, exact)
    if not exact and not flows:
        cut = res["cut"]
        if math.isfinite(cut) and cut > 0 and cut * scale < _REFINE_BELOW:
            finer = _scale_for(cut) if has_inf else max(_scale_for(cut), arc_scale)
            if not is_float:
                finer = min(finer, 1.0)
            if finer > scale:
                res2 = _solve_at(graph, p, pos, neg, arcs, finer, flows, False, False)
                if res2["cut"] <= cut:
                    res, scale = res2, finer
    if both_inf is not None:
        res["cut"] = math.inf
        res["lower"] = math.inf
    flow_hi = res["cut"] + const
    flow_lo = res["lower"] + const
    if not is_float:
        flow_hi = int(flow_hi) if math.isfinite(flow_hi) else flow_hi
        flow_lo = int(flow_lo) if math.isfinite(flow_lo) else flow_lo
    out = {
        "flow": flow_hi,
        "bounds": (flow_lo, flow_hi),
        "scale": scale,
        "sink": res["sink"],
        "info": res["info"],
    }
    if flows:
        out["flows"] = res["flows"]
    return out


def _runs_bk(solver: str, n: int) -> bool:
    if solver == "bk":
        return True
    if solver != "auto":
        return False
    return n < _segcut.AUTO_MIN_GPU_NODES or _segcut.gpu_unavailable_reason() is not None


def _fsum(a: np.ndarray) -> float:
    return float(np.sum(a, dtype=np.float64)) if a.size else 0.0


def _exact_sum(a: np.ndarray, is_float: bool) -> Any:
    if is_float:
        return math.fsum(a.tolist()) if a.size < 4096 else float(np.sum(a, dtype=np.float64))
    if a.size and float(np.abs(a).max()) * a.size >= 2.0**62:
        return sum(int(x) for x in a.tolist())
    return int(np.sum(a, dtype=np.int64))


def _arc_scale(fmax: float) -> float:
    """The power of two that keeps every capacity up to ``fmax`` below the clamp."""
    if fmax <= 0:
        return 1.0
    k = math.floor(math.log2(_CAP_LIMIT) - math.log2(fmax))
    return 2.0 ** max(-1000, min(1000, k))


def _scale_for(u: float) -> float:
    """The power of two that maps ``u`` to about ``_TARGET`` units."""
    k = math.floor(math.log2(_TARGET) - math.log2(u))
    return 2.0 ** max(-1000, min(1000, k))


def _rounded(a: np.ndarray, scale: float, fits: bool = False) -> np.ndarray:
    """``a`` times ``scale``, rounded down and clamped to the solver's range, as int32
    (``fits``: the caller knows every value already lies in it)."""
    if scale == 1.0 and a.dtype.kind in "iu":
        if not fits and a.size and a.max() > _CAP_LIMIT:
            a = np.minimum(a, _CAP_LIMIT)
        return a.astype(np.int32)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.floor(a * scale)
    r = np.where(np.isnan(r), 0, np.minimum(r, _CAP_LIMIT))
    return r.astype(np.int32)


def _solve_at(graph, p, pos, neg, arcs, scale, flows, reuse, warm, exact=False) -> Dict[str, Any]:
    """One integer solve at ``scale``: the canonical cut, its capacity from the capacities as
    given (``cut``), and the integer flow divided by ``scale`` (``lower``)."""
    solver = graph.solver
    if reuse or (warm and solver in ("auto", "bk")):
        solver = "bk"
    gmin = _segcut.AUTO_MIN_GPU_NODES
    rs, rt = _rounded(pos, scale, exact), _rounded(neg, scale, exact)
    if p.grid is not None:
        conn = _connectivity(p.grid, len(p.shape))
        if reuse:
            native = graph._native[0]
            native.reset_terminals()
        else:
            native = _segcut.Grid(list(p.shape), conn)
            for off, acc in p.grid.items():
                r = _rounded(np.atleast_1d(acc), scale, exact)
                native.set_direction(list(off), int(r[0]) if np.ndim(acc) == 0 else r)
        native.add_tedges(rs, rt)
        iflow = native.maxflow(solver, False, bool(graph.verify), gmin, bool(warm))
        sink = native.segments().ravel()
        graph._native = (native, graph._edges_version, scale) if warm else None
        info = dict(native.info())
    else:
        i, j, cap, rev = p.pairs
        if solver == "cuda-grid":
            solver = "cuda-csr"  # not a grid: the GPU solver for general graphs
        native = _segcut.Graph(p.n)
        rc, rr = _rounded(cap, scale), _rounded(rev, scale)
        keep = (rc != 0) | (rr != 0)
        if flows:
            keep[:] = True
        if keep.any():
            native.add_edges(
                np.ascontiguousarray(i[keep]), np.ascontiguousarray(j[keep]), rc[keep], rr[keep], int(keep.sum())
            )
        native.add_tedges(np.arange(p.n, dtype=np.int32), rs, rt, p.n)
        iflow = native.maxflow(solver, bool(flows), bool(graph.verify), gmin)
        sink = native.segments()
        info = dict(native.info())
        graph._native = None
    out = {"sink": sink, "lower": iflow / scale, "info": info}
    if exact:
        out["lower"] = iflow
        out["cut"] = iflow  # the capacities were cut as given: flow = cut capacity
    else:
        out["cut"] = _cut_capacity(p, pos, neg, sink, graph._float)
    if flows:
        edge, sflow, tflow = native.flows()
        if graph._float:
            out["flows"] = (edge / scale, sflow / scale, tflow / scale)
        elif scale != 1.0:  # integers beyond 2**30 were scaled down: flows in their units again
            out["flows"] = tuple(np.rint(a / scale).astype(np.int64) for a in (edge, sflow, tflow))
        else:
            out["flows"] = (edge, sflow, tflow)
    return out


def _connectivity(grid: Dict[Tuple[int, ...], np.ndarray], nd: int) -> int:
    diagonal = any(sum(1 for x in o if x) > 1 for o in grid)
    if nd == 2:
        return 8 if diagonal else 4
    return 26 if diagonal else 6


def _cut_capacity(p: _Problem, pos, neg, sink: np.ndarray, is_float: bool) -> Any:
    """The capacity of the cut (source side: not ``sink``) from the capacities as given."""
    parts = [pos[sink], neg[~sink]]
    if p.grid is not None:
        s = sink.reshape(p.shape)
        for off, acc in p.grid.items():
            sl, dl = _valid_slices(p.shape, off)
            crossing = ~s[sl] & s[dl]
            parts.append(acc[sl][crossing] if np.ndim(acc) else np.full(int(crossing.sum()), acc))
    else:
        i, j, cap, rev = p.pairs
        si, sj = sink[i], sink[j]
        parts.append(cap[~si & sj])
        parts.append(rev[si & ~sj])
    vals = [a[a != 0] for a in parts]
    if is_float:
        if any(np.isinf(a).any() for a in vals):
            return math.inf
        return math.fsum(float(np.sum(a, dtype=np.float64)) for a in vals)
    return sum(_exact_sum(a, False) for a in vals)


from . import fastmin  # noqa: E402  (needs the graph classes above)
from .fastmin import abswap_grid, aexpansion_grid  # noqa: E402
