"""Type stubs of the segcut package (see __init__.py for the documentation)."""

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str
SEED_UNKNOWN: int
SEED_FOREGROUND: int
SEED_BACKGROUND: int
SEED_PROBABLY_FOREGROUND: int
SEED_PROBABLY_BACKGROUND: int
AUTO_MIN_GPU_NODES: int

_PathLike = Union[str, os.PathLike[str]]
_Values = Union[int, float, npt.ArrayLike]

def solvers() -> List[str]: ...
def gpu_unavailable_reason() -> Optional[str]: ...
def gpu_available() -> bool: ...
def nvrtc_version() -> Optional[Tuple[int, int]]: ...

NVRTC_PATH: Optional[str]
def vonNeumann_structure(ndim: int = 2, directed: bool = False) -> npt.NDArray[np.float64]: ...
def moore_structure(ndim: int = 2, directed: bool = False) -> npt.NDArray[np.float64]: ...

@dataclass(frozen=True)
class Certificate:
    flow: int
    cut_capacity: int

@dataclass(frozen=True)
class SolveResult:
    flow: int
    solver: str
    reason: str
    fallback: Optional[str]
    certificate: Optional[Certificate]
    times: Dict[str, float]
    extra: Dict[str, Any]

class Grid:
    shape: Tuple[int, ...]
    connectivity: int
    def __init__(self, shape: Sequence[int], connectivity: Optional[int] = None) -> None: ...
    @property
    def offsets(self) -> List[Tuple[int, ...]]: ...
    def add_grid_edges(
        self,
        weights: _Values = 1,
        structure: Optional[npt.ArrayLike] = None,
        symmetric: bool = False,
        periodic: bool = False,
    ) -> None: ...
    def add_grid_tedges(self, source_caps: _Values, sink_caps: _Values) -> None: ...
    def maxflow(
        self,
        solver: str = "auto",
        *,
        flows: bool = False,
        verify: bool = True,
        gpu_min_nodes: Optional[int] = None,
    ) -> int: ...
    @property
    def result(self) -> SolveResult: ...
    @property
    def certificate(self) -> Optional[Certificate]: ...
    def get_grid_segments(self) -> npt.NDArray[np.bool_]: ...
    def get_flows(
        self,
    ) -> Tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]]: ...
    def write_max(self, path: _PathLike, comment: str = ...) -> None: ...

class Graph:
    def __init__(self, nodes: int = 0) -> None: ...
    @property
    def num_nodes(self) -> int: ...
    @property
    def num_edges(self) -> int: ...
    def add_nodes(self, count: int) -> npt.NDArray[np.int64]: ...
    def add_edges(self, i: _Values, j: _Values, cap: _Values, rev_cap: _Values = 0) -> None: ...
    def add_edge(self, i: int, j: int, cap: int, rev_cap: int = 0) -> None: ...
    def add_tedges(self, i: _Values, cap_source: _Values, cap_sink: _Values) -> None: ...
    def add_tedge(self, i: int, cap_source: int, cap_sink: int) -> None: ...
    def maxflow(
        self,
        solver: str = "auto",
        *,
        flows: bool = False,
        verify: bool = True,
        gpu_min_nodes: Optional[int] = None,
    ) -> int: ...
    @property
    def result(self) -> SolveResult: ...
    @property
    def certificate(self) -> Optional[Certificate]: ...
    def get_segments(self) -> npt.NDArray[np.bool_]: ...
    def get_segment(self, i: int) -> int: ...
    def get_flows(
        self,
    ) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
    def write_max(self, path: _PathLike, comment: str = ...) -> None: ...
    @classmethod
    def read_max(cls, path: _PathLike) -> "Graph": ...

class Mask(np.ndarray):
    result: SolveResult

def segment(
    image: npt.ArrayLike,
    seeds: Optional[npt.ArrayLike] = None,
    rect: Optional[Tuple[int, int, int, int]] = None,
    unary: Optional[npt.ArrayLike] = None,
    *,
    volume: Optional[bool] = None,
    connectivity: Optional[int] = ...,
    lambda_: float = ...,
    sigma: Optional[float] = ...,
    model: str = ...,
    components: Optional[int] = ...,
    bins: Optional[int] = ...,
    color_space: str = ...,
    iterations: int = ...,
    solver: str = ...,
    gpu_min_nodes: int = ...,
    cpu_build: bool = ...,
    prior: float = ...,
    prior_contrast: float = ...,
    prior_softness: float = ...,
    outlier: float = ...,
    drop_unseeded: bool = ...,
    fill_holes: int = ...,
    verify: bool = ...,
    **options: Any,
) -> Mask: ...

class Disparity(np.ndarray):
    result: SolveResult

class Labels(np.ndarray):
    result: SolveResult

def stereo(
    left: npt.ArrayLike,
    right: npt.ArrayLike,
    num_disparities: int = 16,
    min_disparity: int = 0,
    *,
    data: str = ...,
    truncation: float = ...,
    census_weight: float = ...,
    smoothness: str = ...,
    lambda_: float = ...,
    contrast_threshold: float = ...,
    contrast_factor: float = ...,
    connectivity: int = ...,
    iterations: Optional[int] = ...,
    solver: str = ...,
    verify: bool = ...,
    gpu_min_nodes: int = ...,
    median_radius: int = ...,
    median_colour: float = ...,
    median_space: float = ...,
    **options: Any,
) -> Disparity: ...
def alpha_expansion(
    unary: npt.ArrayLike,
    pairwise: Union[str, npt.ArrayLike] = "potts",
    *,
    weights: _Values = 1,
    truncation: Optional[int] = None,
    connectivity: int = 4,
    initial: Optional[npt.ArrayLike] = None,
    order: Optional[Sequence[int]] = None,
    iterations: Optional[int] = None,
    solver: str = "auto",
    verify: bool = False,
    gpu_min_nodes: Optional[int] = None,
) -> Labels: ...

def options(kind: str = ...) -> Dict[str, str]: ...
