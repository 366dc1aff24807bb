"""α-expansion and α-β-swap on grids (PyMaxflow's ``maxflow.fastmin``), each move an exact
minimum cut through :mod:`segcut.maxflow`'s graphs.

The energy of a labelling ``labels`` (any number of dimensions, von Neumann neighbourhood) is
``sum_p unary[p, labels[p]] + sum binary[labels[p + e_k], labels[p]]`` over the pairs of
neighbours along each axis ``k``. The moves are built as in Boykov, Veksler and Zabih (TPAMI
2001), with the same graphs as PyMaxflow's, so that with the canonical cut the same labels
move.
"""

from __future__ import annotations

from itertools import combinations, count
from typing import Any, Optional, Tuple

import numpy as np

__all__ = ["aexpansion_grid", "abswap_grid", "energy_of_grid_labeling", "aexpansion_grid_step", "abswap_grid_step"]


def _graph_for(unary: np.ndarray):
    from . import GraphFloat, GraphInt

    return GraphFloat() if unary.dtype.kind == "f" else GraphInt()


def _big(unary: np.ndarray) -> Any:
    return np.inf if unary.dtype.kind == "f" else np.iinfo(np.int64).max // 4


def energy_of_grid_labeling(unary: np.ndarray, binary: np.ndarray, labels: np.ndarray) -> Any:
    """The energy of ``labels`` (see the module's documentation).

    >>> float(energy_of_grid_labeling(np.zeros((1, 2, 2)), np.array([[0, 3], [3, 0]]), np.array([[0, 1]])))
    3.0
    """
    lab = np.asarray(labels)
    flat = unary.reshape(-1, unary.shape[-1])
    e = flat[np.arange(flat.shape[0]), lab.ravel()].sum()
    for k in range(lab.ndim):
        later = [slice(None)] * lab.ndim
        earlier = [slice(None)] * lab.ndim
        later[k] = slice(1, None)
        earlier[k] = slice(None, -1)
        e = e + binary[lab[tuple(later)], lab[tuple(earlier)]].sum()
    return e


def _neighbour_pairs(shape: Tuple[int, ...]):
    """For each axis, the flat indices of ``p`` and ``p + e_axis`` for every pair inside."""
    ids = np.arange(int(np.prod(shape))).reshape(shape)
    for k in range(len(shape)):
        a = [slice(None)] * len(shape)
        b = [slice(None)] * len(shape)
        a[k] = slice(None, -1)
        b[k] = slice(1, None)
        yield ids[tuple(a)].ravel(), ids[tuple(b)].ravel()


def _check(unary: np.ndarray, binary: np.ndarray, labels: Optional[np.ndarray]) -> Tuple[int, np.ndarray]:
    if unary.ndim == 0:
        raise ValueError("The unary term cannot be a scalar")
    num_labels = unary.shape[-1]
    if num_labels == 0:
        raise ValueError("The number of labels cannot be 0")
    if binary.shape != (num_labels, num_labels):
        raise ValueError(
            f"The binary term must be a square matrix of shape (num_labels, num_labels); it is "
            f"{binary.shape} but the unary term has num_labels={num_labels}"
        )
    if labels is None:
        labels = unary.argmin(axis=-1).astype(np.int8 if num_labels <= 127 else np.int64)
    else:
        if labels.shape != unary.shape[:-1]:
            raise ValueError(f"labels must have shape {unary.shape[:-1]}, got {labels.shape}")
        if labels.size and labels.min() < 0:
            raise ValueError("Values of labels must be non-negative")
        if labels.size and labels.max() >= num_labels:
            raise ValueError(f"Values of labels must be smaller than num_labels={num_labels}")
    return num_labels, labels


def aexpansion_grid_step(alpha: int, unary: np.ndarray, binary: np.ndarray, labels: np.ndarray):
    """One α-expansion move: relabels in place the pixels that the minimum cut moves to
    ``alpha``; returns ``(energy of the new labelling, graph)``."""
    shape = labels.shape
    n = labels.size
    lab = labels.ravel()
    flat = unary.reshape(n, unary.shape[-1])
    g = _graph_for(unary)
    nodes = g.add_nodes(n)
    keep_cost = flat[np.arange(n), lab].astype(g._dtype if not g._float else np.float64)
    keep_cost = np.where(lab == alpha, _big(unary), keep_cost)
    g.add_grid_tedges(nodes, flat[:, alpha], keep_cost)
    for p, q in _neighbour_pairs(shape):
        lp, lq = lab[p], lab[q]
        same = lp == lq
        w = binary[lp[same], alpha]
        g.add_edges(p[same], q[same], w, w)
        diff = ~same
        pd, qd, lpd, lqd = p[diff], q[diff], lp[diff], lq[diff]
        extra = g.add_nodes(pd.size)
        g.add_grid_tedges(extra, 0, binary[lpd, lqd])
        w1 = binary[lpd, alpha]
        g.add_edges(pd, extra, w1, w1)
        w2 = binary[lqd, alpha]
        g.add_edges(qd, extra, w2, w2)
    energy = g.maxflow()
    moved = g.get_grid_segments(nodes)
    lab = np.where(moved, alpha, lab)
    labels[...] = lab.reshape(shape)
    return energy, g


def abswap_grid_step(alpha: int, beta: int, unary: np.ndarray, binary: np.ndarray, labels: np.ndarray):
    """One α-β-swap move over the pixels labelled ``alpha`` or ``beta``: relabels them in
    place (sink side: ``alpha``); returns ``(cut energy, graph)`` (the cut's energy is not
    the labelling's)."""
    shape = labels.shape
    n = labels.size
    lab = labels.ravel()
    flat = unary.reshape(n, unary.shape[-1])
    inside = (lab == alpha) | (lab == beta)
    node_of = np.full(n, -1, np.int64)
    members = np.flatnonzero(inside)
    g = _graph_for(unary)
    node_of[members] = g.add_nodes(members.size)
    dt = np.float64 if g._float else g._dtype
    ta = flat[members, alpha].astype(dt)
    tb = flat[members, beta].astype(dt)
    ta_full = np.zeros(n, dt)
    tb_full = np.zeros(n, dt)
    vab = binary[alpha, beta]
    for p, q in _neighbour_pairs(shape):
        ip, iq = inside[p], inside[q]
        both = ip & iq
        g.add_edges(node_of[q[both]], node_of[p[both]], vab, vab)
        # A member next to a pixel outside the pair pays V(alpha | beta, that label).
        for m, o in ((p, q), (q, p)):
            sel = inside[m] & ~inside[o]
            np.add.at(ta_full, m[sel], binary[alpha, lab[o[sel]]])
            np.add.at(tb_full, m[sel], binary[beta, lab[o[sel]]])
    g.add_grid_tedges(node_of[members], ta + ta_full[members], tb + tb_full[members])
    energy = g.maxflow()
    seg = g.get_grid_segments(node_of[members])
    lab = lab.copy()
    lab[members] = np.where(seg, alpha, beta)
    labels[...] = lab.reshape(shape)
    return energy, g


def aexpansion_grid(unary: np.ndarray, binary: np.ndarray, max_cycles: Optional[int] = None, labels: Optional[np.ndarray] = None) -> np.ndarray:
    """Minimises the energy (see the module's documentation) by α-expansion, cycling over the
    labels until a cycle lowers it no more or ``max_cycles`` cycles ran. ``unary``:
    ``(S1, ..., SN, L)``; ``binary``: ``(L, L)``, a metric; ``labels``: the start (modified in
    place; default each pixel's cheapest label). Returns the labels.

    >>> unary = np.array([[[0, 9], [9, 0], [0, 9]]])
    >>> aexpansion_grid(unary, np.array([[0, 20], [20, 0]])).tolist()
    [[0, 0, 0]]
    """
    unary = np.asarray(unary)
    binary = np.asarray(binary)
    num_labels, labels = _check(unary, binary, labels)
    best = np.inf
    for _ in count() if max_cycles is None else range(max_cycles):
        improved = False
        for alpha in range(num_labels):
            energy, _g = aexpansion_grid_step(alpha, unary, binary, labels)
            if energy < best:
                best = energy
                improved = True
        if not improved:
            break
    return labels


def abswap_grid(unary: np.ndarray, binary: np.ndarray, max_cycles: Optional[int] = None, labels: Optional[np.ndarray] = None) -> np.ndarray:
    """Minimises the energy by α-β-swaps over every pair of labels, cycling until a cycle
    lowers it no more or ``max_cycles`` cycles ran; a swap that does not lower the energy is
    undone. ``binary`` need not be a metric. Arguments and result as :func:`aexpansion_grid`.

    >>> unary = np.array([[[0, 9], [9, 0], [0, 9]]])
    >>> abswap_grid(unary, np.array([[0, 20], [20, 0]])).tolist()
    [[0, 0, 0]]
    """
    unary = np.asarray(unary)
    binary = np.asarray(binary)
    num_labels, labels = _check(unary, binary, labels)
    best = energy_of_grid_labeling(unary, binary, labels)
    for _ in count() if max_cycles is None else range(max_cycles):
        improved = False
        for alpha, beta in combinations(range(num_labels), 2):
            before = labels.copy()
            abswap_grid_step(alpha, beta, unary, binary, labels)
            energy = energy_of_grid_labeling(unary, binary, labels)
            if energy < best:
                best = energy
                improved = True
            else:
                labels[...] = before
        if not improved:
            break
    return labels
