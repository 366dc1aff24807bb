"""segcut: exact graph cuts from numpy arrays, on the CPU or a CUDA GPU.

Three entry points:

* :func:`segment` -- interactive segmentation of an image or volume (seeds, a GrabCut
  rectangle, or a probability map), the ``segcut`` command line's pipeline and defaults;
* :class:`Grid` -- a PyMaxflow-style grid graph (``add_grid_edges``, ``add_grid_tedges``,
  ``maxflow``, ``get_grid_segments``) built from numpy arrays in bulk;
* :class:`Graph` -- a general graph from bulk edge arrays, per-edge flows on request, DIMACS
  ``.max`` files in and out;
* :func:`stereo` and :func:`alpha_expansion` -- multi-label problems (disparity maps, any Potts
  or truncated-linear labelling) by α-expansion, each move an exact cut.

Every cut is certified (its capacity equals the flow) unless ``verify=False``. The GIL is
released while graphs are built and solved, so threads run in parallel. Nothing is printed.

>>> import numpy as np, segcut
>>> g = segcut.Grid((2, 3))
>>> g.add_grid_edges(1)
>>> g.add_grid_tedges(np.array([[5, 0, 0], [5, 0, 0]]), np.array([[0, 0, 5], [0, 0, 5]]))
>>> g.maxflow()
2
>>> g.get_grid_segments().astype(int)  # the smallest sink side: the middle column is a tie
array([[0, 0, 1],
       [0, 0, 1]])
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np


def _preload_nvrtc() -> Optional[str]:
    """Loads CUDA 13's NVRTC from the ``nvidia-cuda-nvrtc`` wheel (``pip install
    nvidia-cuda-nvrtc``: ``site-packages/nvidia/cu13/lib/libnvrtc.so.13``) when it is on
    ``sys.path``, or from the file ``SEGCUT_NVRTC`` names, so that the GPU solvers find it
    without ``LD_LIBRARY_PATH``: segcut's CUDA layer opens ``libnvrtc.so.13`` by name, and the
    dynamic loader hands back a library of that name that is already loaded. Returns the file
    loaded, or ``None`` (NVRTC is then looked up on the usual library path at first GPU use)."""
    import ctypes
    import sys

    candidates = []
    if os.environ.get("SEGCUT_NVRTC"):
        candidates.append(os.environ["SEGCUT_NVRTC"])
    for base in sys.path:
        candidates.append(os.path.join(base or ".", "nvidia", "cu13", "lib", "libnvrtc.so.13"))
    for path in candidates:
        if os.path.isfile(path):
            folder = os.path.dirname(path)
            try:
                # NVRTC opens its builtins library by name too: load it first.
                for name in sorted(os.listdir(folder)):
                    if name.startswith("libnvrtc-builtins.so"):
                        ctypes.CDLL(os.path.join(folder, name), mode=ctypes.RTLD_GLOBAL)
                        break
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            return path
    return None


#: The NVRTC library segcut loaded from a Python wheel or ``SEGCUT_NVRTC`` (None: the system's).
NVRTC_PATH: Optional[str] = _preload_nvrtc()

from . import _segcut  # noqa: E402  (after NVRTC is in place)

__all__ = [
    "segment",
    "stereo",
    "options",
    "alpha_expansion",
    "Disparity",
    "Labels",
    "Grid",
    "Graph",
    "Mask",
    "SolveResult",
    "Certificate",
    "gpu_available",
    "gpu_unavailable_reason",
    "nvrtc_version",
    "NVRTC_PATH",
    "solvers",
    "vonNeumann_structure",
    "moore_structure",
    "SEED_UNKNOWN",
    "SEED_FOREGROUND",
    "SEED_BACKGROUND",
    "SEED_PROBABLY_FOREGROUND",
    "SEED_PROBABLY_BACKGROUND",
]

__version__ = "0.1.0"

#: Seed labels (the values of ``seeds`` arrays), as in the command line's label volumes.
SEED_UNKNOWN = 0
SEED_FOREGROUND = 1
SEED_BACKGROUND = 2
SEED_PROBABLY_FOREGROUND = 3
SEED_PROBABLY_BACKGROUND = 4

#: With ``solver="auto"``, graphs with fewer nodes than this are cut on the CPU even when a GPU
#: is usable (the GPU's fixed costs would dominate).
AUTO_MIN_GPU_NODES: int = _segcut.AUTO_MIN_GPU_NODES


def solvers() -> list:
    """The names ``solver=`` accepts: ``auto``, ``bk``, ``dinic``, ``cuda-grid``, ``cuda-csr``.

    >>> "bk" in segcut.solvers()
    True
    """
    return list(_segcut.solver_names())


def gpu_unavailable_reason() -> Optional[str]:
    """Why no GPU solver can run in this process, or ``None`` when one can.

    >>> segcut.gpu_unavailable_reason() is None or isinstance(segcut.gpu_unavailable_reason(), str)
    True
    """
    return _segcut.gpu_unavailable_reason()


def nvrtc_version() -> Optional[Tuple[int, int]]:
    """The ``(major, minor)`` version of the NVRTC library the GPU solvers compile their kernels
    with, ``None`` when none is found (see :data:`NVRTC_PATH`; no GPU needed to ask).

    >>> segcut.nvrtc_version() is None or segcut.nvrtc_version()[0] >= 13
    True
    """
    v = _segcut.nvrtc_version()
    return None if v is None else (int(v[0]), int(v[1]))


def gpu_available() -> bool:
    """Whether the CUDA solvers can run here (a CUDA driver and a usable GPU).

    >>> isinstance(segcut.gpu_available(), bool)
    True
    """
    return gpu_unavailable_reason() is None


@dataclass(frozen=True)
class Certificate:
    """Proof of optimality: the solver's flow value and the capacity of the returned cut,
    computed from the original capacities. They are equal (max-flow/min-cut duality); segcut
    raises ``RuntimeError`` otherwise. Both exclude the constant that terminal capacities
    shared by a node contribute (see :meth:`Grid.add_grid_tedges`)."""

    flow: int
    cut_capacity: int


@dataclass(frozen=True)
class SolveResult:
    """What a solve did: the flow, the solver that ran and why, and per-phase times (seconds).

    ``times`` keys: ``construct`` (all ``add_*`` calls so far), ``prepare`` (terminal
    capacities put in place and the graph checked, or the general graph assembled), ``build``
    (the solver's own graph set-up, e.g. the upload to the GPU), ``solve``, ``verify``; :func:`segment` results
    have ``convert``, ``prepare``, ``models``, ``graph``, ``solve``, ``verify``, ``total``.
    """

    flow: int
    solver: str
    reason: str
    fallback: Optional[str]
    certificate: Optional[Certificate]
    times: Dict[str, float] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "SolveResult":
        d = dict(d)
        cert = d.pop("certificate", None)
        keys = ("flow", "solver", "reason", "fallback", "times")
        return cls(
            flow=d["flow"],
            solver=d["solver"],
            reason=d["reason"],
            fallback=d["fallback"],
            certificate=Certificate(*cert) if cert is not None else None,
            times=dict(d["times"]),
            extra={k: v for k, v in d.items() if k not in keys},
        )


def _options(solver: str, gpu_min_nodes: Optional[int]) -> Tuple[str, int]:
    if not isinstance(solver, str):
        raise TypeError(f"solver must be a string (one of {', '.join(solvers())}), got {solver!r}")
    if gpu_min_nodes is None:
        gpu_min_nodes = AUTO_MIN_GPU_NODES
    return solver, int(gpu_min_nodes)


def _int_values(values: Any, shape: Tuple[int, ...], what: str, mult: int = 1) -> Any:
    """``values`` as the native side takes them: a Python int (one value for all) or a
    C-contiguous int32 or int64 array of ``shape``. Integer and boolean arrays convert exactly; float
    arrays must hold whole numbers (segcut's capacities are integers: scale and round first);
    anything else is a ``TypeError``."""
    a = np.asarray(values)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numbers (an int or float array), got dtype {a.dtype}")
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{what} holds NaN or infinite values")
        if not np.all(a == np.round(a)):
            raise ValueError(
                f"{what} holds fractional values: segcut's capacities are integers "
                "(multiply by a scale and round, e.g. np.rint(w * 1000))"
            )
        if a.size and (np.max(np.abs(a)) >= 2.0**62):
            raise ValueError(f"capacity overflow: {what} holds values beyond 2**62")
    elif a.dtype.kind == "u" and a.size and a.dtype.itemsize == 8 and np.max(a) >= 2**62:
        raise ValueError(f"capacity overflow: {what} holds values beyond 2**62")
    if a.ndim == 0:
        return int(a) * mult
    try:
        a = np.broadcast_to(a, shape)
    except ValueError:
        raise ValueError(
            f"{what} of shape {a.shape} does not broadcast to the grid's shape {shape}"
        ) from None
    if a.dtype == np.int32:
        return np.ascontiguousarray(a)  # read in place when already contiguous
    return np.ascontiguousarray(a, dtype=np.int64)


class Grid:
    """A grid graph, PyMaxflow style: one node per pixel of ``shape`` (``(rows, cols)`` or
    ``(depth, rows, cols)``), arcs to the neighbours of a fixed ``connectivity`` (4 or 8 in 2D,
    6 or 26 in 3D; default 4 / 6), capacities added in bulk from numpy arrays.

    >>> g = segcut.Grid((1, 2))
    >>> g.add_grid_edges(3, symmetric=True)
    >>> g.add_grid_tedges(np.array([[9, 0]]), np.array([[0, 9]]))
    >>> g.maxflow()
    3
    """

    def __init__(self, shape: Sequence[int], connectivity: Optional[int] = None):
        shape = tuple(int(s) for s in shape)
        if connectivity is None:
            connectivity = 6 if len(shape) == 3 else 4
        self._g = _segcut.Grid(list(shape), int(connectivity))
        self.shape = shape
        self.connectivity = int(connectivity)
        self._result: Optional[SolveResult] = None

    @property
    def offsets(self) -> list:
        """The neighbour offsets (numpy axis order), in the order of :meth:`get_flows`' arcs."""
        return [tuple(o) for o in self._g.offsets]

    def add_grid_edges(
        self,
        weights: Any = 1,
        structure: Any = None,
        symmetric: bool = False,
        periodic: bool = False,
    ) -> None:
        """Adds ``weights[p] * structure[o]`` to the arc from every node ``p`` to ``p + o`` for
        each non-zero entry ``o`` of ``structure`` (3×3 or 3×3×3, centred) whose neighbour
        lies inside the grid; with ``symmetric``, also to the arc ``p + o → p``. Capacities add
        up over calls. As in PyMaxflow, ``structure=None`` is the 4- (6-) neighbourhood, both
        directions, and with ``symmetric=True`` half of it. ``weights`` is a number or an array
        broadcastable to the grid's shape (per pixel; call once per direction for per-direction
        weights). Offsets outside the grid's connectivity are a ``ValueError``.

        >>> g = segcut.Grid((3, 3), connectivity=8)
        >>> g.add_grid_edges(np.ones((3, 3)), structure=segcut.moore_structure(), symmetric=True)
        """
        if periodic:
            raise ValueError("periodic grids are not supported")
        nd = len(self.shape)
        if structure is None:
            structure = vonNeumann_structure(nd, directed=bool(symmetric))
        s = np.asarray(structure)
        if s.shape != (3,) * nd:
            raise ValueError(f"structure must have shape {(3,) * nd}, got {s.shape}")
        if s.dtype.kind not in "biuf" or not np.all(s == np.round(s)) or np.any(s < 0):
            raise ValueError("structure must hold non-negative whole numbers")
        w = _int_values(weights, self.shape, "weights")
        for idx in zip(*np.nonzero(s)):
            off = [int(i) - 1 for i in idx]
            if not any(off):
                continue  # the centre: a self loop carries no flow
            mult = int(s[idx])
            if isinstance(w, int):
                self._g.add_direction(off, w * mult, 1, bool(symmetric))
            else:
                self._g.add_direction(off, w, mult, bool(symmetric))
        self._result = None

    def add_grid_tedges(self, source_caps: Any, sink_caps: Any) -> None:
        """Adds ``source_caps[p]`` to the arc source → ``p`` and ``sink_caps[p]`` to ``p`` →
        sink, for every node (numbers or arrays broadcastable to the shape). As in PyMaxflow
        (Kolmogorov's BK), what both arcs of a node share becomes a constant added to the flow,
        so negative values are allowed.

        >>> g = segcut.Grid((2, 2))
        >>> g.add_grid_tedges(np.array([[4, 0], [0, 0]]), 1)
        >>> g.maxflow()  # node (0, 0) passes 1; the others have no source capacity
        1
        """
        s = _int_values(source_caps, self.shape, "source_caps")
        t = _int_values(sink_caps, self.shape, "sink_caps")
        self._g.add_tedges(s, t)
        self._result = None

    def maxflow(
        self,
        solver: str = "auto",
        *,
        flows: bool = False,
        verify: bool = True,
        gpu_min_nodes: Optional[int] = None,
    ) -> int:
        """Solves the max-flow problem and returns the flow value (as PyMaxflow's ``maxflow``).

        ``solver``: ``"auto"`` (the GPU for grids of at least ``gpu_min_nodes`` nodes when one
        is usable, else BK), ``"bk"``, ``"dinic"``, ``"cuda-grid"``, ``"cuda-csr"``. ``flows``
        keeps the arc flows (:meth:`get_flows`); ``verify`` checks the certificate. The result's
        details are in :attr:`result`.

        >>> g = segcut.Grid((1, 2)); g.add_grid_tedges(np.array([[2, 0]]), np.array([[0, 2]]))
        >>> g.add_grid_edges(1, symmetric=True); g.maxflow(solver="bk")
        1
        """
        solver, gmin = _options(solver, gpu_min_nodes)
        flow = self._g.maxflow(solver, bool(flows), bool(verify), gmin)
        self._result = SolveResult._from(self._g.info())
        return flow

    @property
    def result(self) -> SolveResult:
        """The last :meth:`maxflow`'s :class:`SolveResult` (solver, certificate, times)."""
        if self._result is None:
            raise RuntimeError("call maxflow() first")
        return self._result

    @property
    def certificate(self) -> Optional[Certificate]:
        """The last cut's :class:`Certificate` (``None`` with ``verify=False``)."""
        return self.result.certificate

    def get_grid_segments(self) -> np.ndarray:
        """The segment of every node after :meth:`maxflow`, as a bool array of the grid's
        shape: True for the sink segment (PyMaxflow's convention). The sink segment is the set
        of nodes that can still reach the sink, the same for every maximum flow.

        >>> g = segcut.Grid((1, 2)); g.add_grid_tedges(np.array([[3, 0]]), np.array([[0, 3]]))
        >>> g.add_grid_edges(1, symmetric=True); g.maxflow(); g.get_grid_segments()
        1
        array([[False,  True]])
        """
        return self._g.segments()

    def get_flows(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Arc flows of the last ``maxflow(flows=True)``: ``(arcs, source, sink)``, where
        ``arcs[d][p]`` is the flow from ``p`` to ``p + offsets[d]`` and ``source`` / ``sink``
        the flows on the terminal arcs (int32 arrays).

        >>> g = segcut.Grid((1, 2)); g.add_grid_tedges(np.array([[3, 0]]), np.array([[0, 3]]))
        >>> g.add_grid_edges(2, symmetric=True); g.maxflow(flows=True)
        2
        >>> g.get_flows()[0][g.offsets.index((0, 1))]
        array([[2, 0]], dtype=int32)
        """
        return self._g.flows()

    def write_max(self, path: Union[str, os.PathLike], comment: str = "written by segcut (Python)") -> None:
        """Writes the grid as a DIMACS ``.max`` file (readable by ``segcut maxflow`` and
        :meth:`Graph.read_max`).

        >>> segcut.Grid((2, 2)).write_max("/tmp/g.max")
        """
        self._g.write_max(os.fspath(path), comment)


class Graph:
    """A general graph: ``nodes`` nodes (more with :meth:`add_nodes`), arcs added in bulk as
    pairs ``i → j`` / ``j → i`` with their capacities, terminal arcs as in PyMaxflow.

    >>> g = segcut.Graph(2)
    >>> g.add_edges([0], [1], [1], [2])
    >>> g.add_tedges([0, 1], [2, 9], [5, 4])
    >>> g.maxflow()
    8
    >>> g.get_segments()
    array([ True, False])
    """

    def __init__(self, nodes: int = 0):
        self._g = _segcut.Graph(int(nodes))
        self._result: Optional[SolveResult] = None

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return self._g.num_nodes

    @property
    def num_edges(self) -> int:
        """Number of arc pairs added."""
        return self._g.num_edges

    def add_nodes(self, count: int) -> np.ndarray:
        """Adds ``count`` nodes and returns their indices (as PyMaxflow's ``add_nodes``).

        >>> segcut.Graph(3).add_nodes(2)
        array([3, 4])
        """
        first = self._g.add_nodes(int(count))
        self._result = None
        return np.arange(first, first + int(count))

    @staticmethod
    def _columns(arrays: Sequence[Any], names: Sequence[str]) -> Tuple[list, int]:
        arrs = [np.asarray(a) for a in arrays]
        for a, name in zip(arrs, names):
            if a.dtype.kind not in "biuf":
                raise TypeError(f"{name} must be numbers, got dtype {a.dtype}")
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrs))
        except ValueError:
            raise ValueError(
                f"{', '.join(names)} of shapes {[a.shape for a in arrs]} do not broadcast together"
            ) from None
        count = int(np.prod(shape)) if shape else 1
        out = [
            _int_values(np.reshape(np.broadcast_to(a, shape), -1), (count,), name)
            for a, name in zip(arrs, names)
        ]
        return out, count

    def add_edges(self, i: Any, j: Any, cap: Any, rev_cap: Any = 0) -> None:
        """Adds the arc pairs ``i[k] → j[k]`` with capacity ``cap[k]`` and ``j[k] → i[k]`` with
        ``rev_cap[k]`` (arrays or numbers, broadcast together). Nothing is added when any pair
        is bad (``ValueError`` naming it).

        >>> g = segcut.Graph(3); g.add_edges([0, 1], [1, 2], 5, rev_cap=[0, 1])
        """
        cols, count = self._columns([i, j, cap, rev_cap], ["i", "j", "cap", "rev_cap"])
        self._g.add_edges(*cols, count)
        self._result = None

    def add_edge(self, i: int, j: int, cap: int, rev_cap: int = 0) -> None:
        """Adds one arc pair (as PyMaxflow's ``add_edge``); prefer :meth:`add_edges` in bulk.

        >>> g = segcut.Graph(2); g.add_edge(0, 1, 3, 3)
        """
        self.add_edges([i], [j], [cap], [rev_cap])

    def add_tedges(self, i: Any, cap_source: Any, cap_sink: Any) -> None:
        """Adds ``cap_source[k]`` to the arc source → ``i[k]`` and ``cap_sink[k]`` to ``i[k]`` →
        sink (repeats add up; negative values allowed, as in PyMaxflow).

        >>> g = segcut.Graph(2); g.add_tedges(np.arange(2), [3, 0], [0, 3])
        """
        cols, count = self._columns([i, cap_source, cap_sink], ["i", "cap_source", "cap_sink"])
        self._g.add_tedges(*cols, count)
        self._result = None

    def add_tedge(self, i: int, cap_source: int, cap_sink: int) -> None:
        """Adds to one node's terminal arcs (as PyMaxflow's ``add_tedge``).

        >>> g = segcut.Graph(1); g.add_tedge(0, 2, 5)
        """
        self.add_tedges([i], [cap_source], [cap_sink])

    def maxflow(
        self,
        solver: str = "auto",
        *,
        flows: bool = False,
        verify: bool = True,
        gpu_min_nodes: Optional[int] = None,
    ) -> int:
        """Solves and returns the flow value; see :meth:`Grid.maxflow` for the arguments.

        >>> g = segcut.Graph(1); g.add_tedge(0, 2, 5); g.maxflow(solver="dinic")
        2
        """
        solver, gmin = _options(solver, gpu_min_nodes)
        flow = self._g.maxflow(solver, bool(flows), bool(verify), gmin)
        self._result = SolveResult._from(self._g.info())
        return flow

    @property
    def result(self) -> SolveResult:
        """The last :meth:`maxflow`'s :class:`SolveResult`."""
        if self._result is None:
            raise RuntimeError("call maxflow() first")
        return self._result

    @property
    def certificate(self) -> Optional[Certificate]:
        """The last cut's :class:`Certificate`."""
        return self.result.certificate

    def get_segments(self) -> np.ndarray:
        """One bool per node: True for the sink segment.

        >>> g = segcut.Graph(2); g.add_edges(0, 1, 1); g.add_tedges([0, 1], [3, 0], [0, 3])
        >>> g.maxflow()
        1
        >>> g.get_segments()
        array([False,  True])
        """
        return self._g.segments()

    def get_segment(self, i: int) -> int:
        """1 when node ``i`` is in the sink segment, 0 otherwise (as PyMaxflow's)."""
        return int(self.get_segments()[int(i)])

    def get_flows(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Flows of the last ``maxflow(flows=True)``: ``(edges, source, sink)`` -- the net flow
        ``i → j`` of every added pair in the order added (negative: ``j → i``), and each node's
        flow on its source and sink arcs (int64 arrays).

        >>> g = segcut.Graph(2); g.add_edges([0], [1], [3]); g.add_tedges([0, 1], [5, 0], [0, 4])
        >>> g.maxflow(flows=True); g.get_flows()[0]
        3
        array([3])
        """
        return self._g.flows()

    def write_max(self, path: Union[str, os.PathLike], comment: str = "written by segcut (Python)") -> None:
        """Writes the graph as a DIMACS ``.max`` file (atomically: the file appears whole or
        not at all).

        >>> g = segcut.Graph(2); g.add_edges([0], [1], [3]); g.write_max("/tmp/two.max")
        """
        self._g.write_max(os.fspath(path), comment)

    @classmethod
    def read_max(cls, path: Union[str, os.PathLike]) -> "Graph":
        """Reads a DIMACS ``.max`` file (also ``.gz``, ``.bz2``; the first instance of an
        archive), grids included, as a general graph.

        >>> g = segcut.Graph(2); g.add_edges([0], [1], [3]); g.write_max("/tmp/segcut-doc.max")
        >>> segcut.Graph.read_max("/tmp/segcut-doc.max").num_edges
        1
        """
        g = cls.__new__(cls)
        g._g = _segcut.Graph.read_max(os.fspath(path))
        g._result = None
        return g


def vonNeumann_structure(ndim: int = 2, directed: bool = False) -> np.ndarray:
    """The 4- (2D) or 6-neighbourhood (3D) as a 3×3(×3) structure; ``directed`` keeps only the
    forward half (as PyMaxflow's function of the same name).

    >>> segcut.vonNeumann_structure(2, directed=True).astype(int)
    array([[0, 0, 0],
           [0, 0, 1],
           [0, 1, 0]])
    """
    s = np.zeros((3,) * ndim)
    for axis in range(ndim):
        for step in ((2,) if directed else (0, 2)):
            idx = [1] * ndim
            idx[axis] = step
            s[tuple(idx)] = 1
    return s


def moore_structure(ndim: int = 2, directed: bool = False) -> np.ndarray:
    """The 8- (2D) or 26-neighbourhood (3D) as a 3×3(×3) structure; ``directed`` keeps only the
    forward half (the offsets after the centre in C order).

    >>> int(segcut.moore_structure(2).sum())
    8
    """
    s = np.ones((3,) * ndim)
    s[(1,) * ndim] = 0
    if directed:
        flat = s.reshape(-1)
        flat[: flat.size // 2 + 1] = 0
    return s


class Mask(np.ndarray):
    """The bool mask :func:`segment` returns (a numpy array, True for foreground) with its
    :class:`SolveResult` in :attr:`result`.

    >>> isinstance(mask, np.ndarray), mask.result.solver  # doctest: +SKIP
    (True, 'bk')
    """

    result: SolveResult

    def __array_finalize__(self, obj: Any) -> None:
        if obj is not None:
            self.result = getattr(obj, "result", None)


# The keyword options: segcut's table of options (the command line's flags in snake_case),
# with each one's default as the help shows it.
_SEGMENT_OPTIONS = tuple(name for name, _ in _segcut.option_table("segment"))


def options(kind: str = "segment") -> Dict[str, str]:
    """The keyword options of :func:`segment` (``kind="segment"``) or :func:`stereo`
    (``"stereo"``) with their defaults as ``segcut --help`` shows them: segcut's options model,
    the same names as the command line's flags and the batch manifest's columns.

    >>> segcut.options("stereo")["lambda"]
    '10'
    """
    return dict(_segcut.option_table(kind))


def _spatial(image: np.ndarray, volume: Optional[bool]) -> Tuple[Tuple[int, ...], int]:
    """The spatial shape and channel count of ``image``."""
    nd = image.ndim
    if nd == 2:
        if volume:
            raise ValueError("volume=True needs a 3D (depth, rows, cols) or 4D array")
        return image.shape, 1
    if nd == 3:
        if volume is None:
            volume = image.shape[-1] not in (1, 3, 4)
        return (image.shape, 1) if volume else (image.shape[:2], image.shape[2])
    if nd == 4:
        if volume is False:
            raise ValueError("a 4D array is a volume with channels (depth, rows, cols, channels)")
        return image.shape[:3], image.shape[3]
    raise ValueError(
        f"image must be 2D (rows, cols), 3D (rows, cols, channels) or (depth, rows, cols), "
        f"or 4D (depth, rows, cols, channels); got shape {image.shape}"
    )


def segment(
    image: Any,
    seeds: Any = None,
    rect: Optional[Tuple[int, int, int, int]] = None,
    unary: Any = None,
    *,
    volume: Optional[bool] = None,
    **options: Any,
) -> Mask:
    """Segments an image or volume; returns the foreground mask (a bool :class:`Mask` of the
    image's spatial shape, with ``mask.result`` saying which solver ran and how long each phase
    took).

    ``image``: ``(rows, cols)`` grey, ``(rows, cols, 3)`` colour (a 4th channel, alpha, is
    dropped), ``(depth, rows, cols)`` grey volume or ``(depth, rows, cols, channels)``; any
    integer or float dtype, values in their own range (0-255 for uint8). A 3D array whose last
    axis is 1, 3 or 4 long is read as an image; pass ``volume=True`` to read it as a volume.

    ``seeds``: an integer array of the spatial shape: 0 unknown, 1 foreground, 2 background,
    3 probably foreground, 4 probably background (the ``SEED_*`` constants). ``rect``: a GrabCut
    rectangle ``(x, y, w, h)``: outside is background, inside probably foreground (combined
    with ``seeds`` as the command line combines ``--rect`` and ``--seeds``). ``unary``: a
    foreground probability per pixel in [0, 1] used as the data term instead of colour models
    (``lambda`` then defaults to 2).

    ``options`` are the command line's flags with ``_`` for ``-`` and the same defaults
    (``segcut.options("segment")`` lists them with their defaults; ``lambda`` may be written
    ``lambda_``): ``connectivity``, ``lambda``, ``sigma``, ``model``, ``components``, ``bins``,
    ``color_space``, ``iterations``, ``solver``, ``gpu_min_nodes``, ``prior``, ``outlier``,
    ``drop_unseeded``, ``fill_holes``, ``verify``, ``seed_format`` (read ``seeds`` as an
    "opencv" grabCut mask, a "trimap" or "labels"), ... A value equal to the default is used as
    given; with ``unary``, the colour models' options are refused. A float image whose values
    all lie in [0, 1] is scaled to 0-255.

    >>> img = np.full((20, 20), 200, np.uint8); img[5:15, 5:15] = 30
    >>> seeds = np.zeros((20, 20), np.uint8); seeds[10, 10] = 1; seeds[0, 0] = 2
    >>> mask = segcut.segment(img, seeds)
    >>> int(mask.sum()), mask.result.certificate is not None
    (100, True)
    """
    if "lambda_" in options:
        if "lambda" in options:
            raise TypeError("give lambda or lambda_, not both")
        options["lambda"] = options.pop("lambda_")
    unknown = sorted(set(options) - set(_SEGMENT_OPTIONS))
    if unknown:
        raise TypeError(
            f"segment() got unknown option(s) {', '.join(unknown)}; "
            f"options: {', '.join(_SEGMENT_OPTIONS)} (and lambda_)"
        )
    img = np.asarray(image)
    if img.dtype.kind not in "biuf":
        raise TypeError(f"image must be a numeric array, got dtype {img.dtype}")
    shape, channels = _spatial(img, volume)
    if channels == 4:
        img = img[..., :3]
        channels = 3
    elif channels not in (1, 3):
        raise ValueError(f"image has {channels} channels; segcut takes 1 (grey) or 3 (colour)")
    if img.dtype in (np.uint8, np.uint16, np.float32):
        img = np.ascontiguousarray(img)
    else:
        img = np.ascontiguousarray(img, dtype=np.float32)
    s = None
    seed_format = options.get("seed_format")
    if seeds is not None:
        s = np.asarray(seeds)
        if s.dtype.kind not in "biu":
            raise TypeError(f"seeds must be an integer array (labels 0-4), got dtype {s.dtype}")
        if s.shape != tuple(shape):
            raise ValueError(f"seeds have shape {s.shape} but the image's is {tuple(shape)}")
        if s.size and (s.min() < 0 or s.max() > 255):
            raise ValueError(f"seed values must be 0-255, got {int(s.min())}..{int(s.max())}")
        if seed_format in (None, "auto") and s.size and (s.min() < 0 or s.max() > 4):
            bad = np.argwhere((s < 0) | (s > 4))[0]
            raise ValueError(
                f"seeds{list(map(int, bad))} = {int(s[tuple(bad)])}: seed values are 0 (unknown), "
                "1 (foreground), 2 (background), 3 (probably foreground), 4 (probably background)"
            )
        s = np.ascontiguousarray(s, dtype=np.uint8)
    r = None
    if rect is not None:
        r = tuple(int(v) for v in rect)
        if len(r) != 4 or min(r) < 0:
            raise ValueError(f"rect must be (x, y, w, h) with non-negative integers, got {rect!r}")
    u = None
    if unary is not None:
        u = np.asarray(unary)
        if u.dtype.kind not in "biuf":
            raise TypeError(f"unary must be a float array of probabilities, got dtype {u.dtype}")
        if u.shape != tuple(shape):
            raise ValueError(f"unary has shape {u.shape} but the image's is {tuple(shape)}")
        u = np.ascontiguousarray(u, dtype=np.float32)
    mask, info = _segcut.segment(img, list(shape), channels, s, r, u, options)
    out = mask.view(Mask)
    out.result = SolveResult._from(info)
    return out


class Disparity(np.ndarray):
    """The float32 disparity map :func:`stereo` returns, with its :class:`SolveResult` in
    :attr:`result` (``extra``: ``energy``, ``initial_energy``, ``passes``, ``moves``,
    ``converged``)."""

    result: SolveResult

    def __array_finalize__(self, obj: Any) -> None:
        if obj is not None:
            self.result = getattr(obj, "result", None)


class Labels(np.ndarray):
    """The label array :func:`alpha_expansion` returns, with its :class:`SolveResult` in
    :attr:`result` (as :class:`Disparity`)."""

    result: SolveResult

    def __array_finalize__(self, obj: Any) -> None:
        if obj is not None:
            self.result = getattr(obj, "result", None)


_STEREO_OPTIONS = tuple(name for name, _ in _segcut.option_table("stereo"))


def _view_pixels(a: Any, what: str) -> Tuple[np.ndarray, Tuple[int, ...], int]:
    img = np.asarray(a)
    if img.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be a numeric array, got dtype {img.dtype}")
    if img.ndim == 2:
        shape, ch = img.shape, 1
    elif img.ndim == 3 and img.shape[2] in (1, 3, 4):
        if img.shape[2] == 4:
            img = img[..., :3]
        shape, ch = img.shape[:2], img.shape[2]
    else:
        raise ValueError(f"{what} must be (rows, cols) or (rows, cols, 1|3|4), got shape {img.shape}")
    if img.dtype in (np.uint8, np.uint16, np.float32):
        img = np.ascontiguousarray(img)
    else:
        img = np.ascontiguousarray(img, dtype=np.float32)
    return img, tuple(shape), ch


def stereo(
    left: Any,
    right: Any,
    num_disparities: Optional[int] = None,
    min_disparity: Optional[int] = None,
    **options: Any,
) -> Disparity:
    """The disparity map of a rectified stereo pair by α-expansion graph cuts (``segcut
    stereo``): a float32 array of the left view's shape, ``min_disparity ..
    min_disparity + num_disparities - 1``, with ``.result``.

    ``left`` / ``right``: ``(rows, cols)`` grey or ``(rows, cols, 3)`` colour, same shape.
    ``options`` are ``segcut stereo``'s flags with ``_`` for ``-`` and its defaults
    (``segcut.options("stereo")`` lists them): ``data``, ``truncation``, ``census_weight``,
    ``cost_scale``, ``smoothness`` ("potts" or "linear:T"), ``lambda`` / ``lambda_``,
    ``contrast_threshold``, ``contrast_factor``, ``connectivity``, ``iterations``, ``solver``,
    ``verify``, ``gpu_min_nodes``, ``left_right``, ``median_radius``, ``median_colour``,
    ``median_space``; ``num_disparities`` is ``disparities``.

    >>> tex = lambda x, y: ((x * 37 + y * 11) % 23) * 11
    >>> y, x = np.mgrid[0:8, 0:24]
    >>> d = segcut.stereo(tex(x, y).astype(np.uint8), tex(x + 3, y).astype(np.uint8), 6)
    >>> float(d[4, 10])
    3.0
    """
    if "lambda_" in options:
        options["lambda"] = options.pop("lambda_")
    unknown = sorted(set(options) - set(_STEREO_OPTIONS))
    if unknown:
        raise TypeError(f"stereo() got unknown option(s) {', '.join(unknown)}; options: {', '.join(_STEREO_OPTIONS)}")
    l, shape, ch = _view_pixels(left, "left")
    r, rshape, rch = _view_pixels(right, "right")
    if (shape, ch) != (rshape, rch):
        raise ValueError(f"left is {shape} × {ch} channel(s) but right is {rshape} × {rch}")
    if r.dtype != l.dtype:
        r = r.astype(l.dtype)
    opts = dict(options)
    # ``num_disparities`` is the positional spelling of the ``disparities`` option.
    if num_disparities is not None:
        if "disparities" in opts:
            raise TypeError("give num_disparities or disparities, not both")
        opts["disparities"] = num_disparities
    if min_disparity is not None:
        opts["min_disparity"] = min_disparity
    disp, info = _segcut.stereo(l, r, list(shape), ch, opts)
    out = disp.view(Disparity)
    out.result = SolveResult._from(info)
    return out


def _pairwise_of(pairwise: Any, truncation: Optional[int], labels: int) -> Tuple[Optional[int], int]:
    """``(truncation or None for Potts, weight factor)`` of a ``pairwise`` argument."""
    if isinstance(pairwise, str):
        if pairwise == "potts":
            if truncation is not None:
                raise ValueError("truncation is for pairwise='linear'")
            return None, 1
        if pairwise == "linear":
            if truncation is None or int(truncation) < 1:
                raise ValueError("pairwise='linear' needs truncation >= 1")
            return int(truncation), 1
        raise ValueError(f"pairwise must be 'potts', 'linear' or an (L, L) matrix, got {pairwise!r}")
    v = np.asarray(pairwise)
    if v.shape != (labels, labels):
        raise ValueError(f"a pairwise matrix must be ({labels}, {labels}), got {v.shape}")
    if labels < 2:
        return None, 0
    c = v[0, 1]
    a, b = np.meshgrid(np.arange(labels), np.arange(labels), indexing="ij")
    if c >= 0 and c == int(c) and np.array_equal(v, c * (a != b)):
        return None, int(c)
    dist = np.abs(a - b)
    if c > 0 and c == int(c):
        t = int(round(float(v.max()) / float(c)))
        if t >= 1 and np.array_equal(v, c * np.minimum(dist, t)):
            return t, int(c)
    raise ValueError(
        "the pairwise matrix must be w·Potts (w off the diagonal, 0 on it) or w·min(|a − b|, T) "
        "(truncated linear); segcut's α-expansion supports those two"
    )


def alpha_expansion(
    unary: Any,
    pairwise: Any = "potts",
    *,
    weights: Any = 1,
    truncation: Optional[int] = None,
    connectivity: int = 4,
    initial: Any = None,
    order: Optional[Sequence[int]] = None,
    iterations: Optional[int] = None,
    solver: str = "auto",
    verify: bool = False,
    gpu_min_nodes: Optional[int] = None,
) -> Labels:
    """Minimises ``sum_p unary[p, l_p] + sum_(p,q) weights[d][p] · V(l_p, l_q)`` over labellings
    of a 2D grid by α-expansion (each move an exact minimum cut); returns the labels, an int
    array ``(rows, cols)`` with ``.result`` (energy, passes, convergence, times).

    ``unary``: ``(rows, cols, labels)`` integer costs in ``[0, 2**24]`` (PyMaxflow's
    ``aexpansion_grid`` layout). ``pairwise``: ``"potts"``, ``"linear"`` (with ``truncation``
    T: ``min(|a − b|, T)``), or an ``(L, L)`` matrix that is one of those times a weight.
    ``weights``: a number, a ``(rows, cols)`` array for every direction, or
    ``(directions, rows, cols)``: one plane per forward direction (+x, +y, then the diagonals
    (+1, +1) and (+1, −1) in (x, y) with ``connectivity=8``), weight of the pair
    ``(p, p + offset)``. ``initial``: the starting labels (default: each pixel's cheapest);
    ``order``: the label order within a pass; ``iterations``: most passes (default: until the
    energy stops falling).

    >>> unary = np.zeros((4, 5, 2), int); unary[:, :2, 1] = 10; unary[:, 2:, 0] = 10
    >>> unary[1, 1] = [10, 0]   # one noisy pixel
    >>> segcut.alpha_expansion(unary, "potts", weights=8).tolist()[1]
    [0, 0, 1, 1, 1]
    """
    u = np.asarray(unary)
    if u.dtype.kind not in "biuf":
        raise TypeError(f"unary must be numbers, got dtype {u.dtype}")
    if u.ndim != 3:
        raise ValueError(f"unary must be (rows, cols, labels), got shape {u.shape}")
    if u.dtype.kind == "f" and not np.all(u == np.round(u)):
        raise ValueError("unary holds fractional costs: segcut's costs are integers (scale and round)")
    if u.size and (u.min() < 0 or u.max() > 2**24):
        raise ValueError("unary costs must lie in [0, 2**24]")
    h, w, labels = u.shape
    trunc, factor = _pairwise_of(pairwise, truncation, labels)
    cost = np.ascontiguousarray(np.moveaxis(u, -1, 0), dtype=np.int32)
    dirs = 2 if int(connectivity) == 4 else 4
    wt = np.asarray(weights)
    if wt.dtype.kind not in "biuf":
        raise TypeError(f"weights must be numbers, got dtype {wt.dtype}")
    if wt.dtype.kind == "f" and not np.all(wt == np.round(wt)):
        raise ValueError("weights hold fractional values: segcut's weights are integers")
    if wt.ndim == 0:
        wv = int(wt) * factor
    else:
        if wt.shape == (h, w):
            wt = np.broadcast_to(wt, (dirs, h, w))
        if wt.size and (wt.min() < 0 or int(wt.max()) * factor > 2**31 - 1):
            raise ValueError("weights must be non-negative and fit 32 bits (times the matrix's weight)")
        wv = np.ascontiguousarray(wt * factor, dtype=np.int32)
    if isinstance(wv, int) and not (0 <= wv <= 2**31 - 1):
        raise ValueError(f"weights must be non-negative and fit 32 bits, got {wv}")
    init = None
    if initial is not None:
        i0 = np.asarray(initial)
        if i0.shape != (h, w) or i0.dtype.kind not in "iu":
            raise ValueError(f"initial must be an integer array of shape {(h, w)}")
        if i0.size and (i0.min() < 0 or i0.max() >= labels):
            raise ValueError(f"initial labels must lie in 0..{labels - 1}")
        init = np.ascontiguousarray(i0, dtype=np.uint16)
    opts: Dict[str, Any] = {"solver": solver, "verify": bool(verify)}
    if gpu_min_nodes is not None:
        opts["gpu_min_nodes"] = int(gpu_min_nodes)
    if iterations is not None:
        opts["max_passes"] = int(iterations)
    if order is not None:
        opts["order"] = [int(x) for x in order]
    lab, info = _segcut.alpha_expansion(cost, wv, int(connectivity), trunc, init, opts)
    out = lab.view(Labels)
    out.result = SolveResult._from(info)
    return out
