"""segcut.stereo and segcut.alpha_expansion (the α-expansion engine of segcut::stereo)."""

import itertools

import numpy as np
import pytest

import segcut


def energy(unary, labels, weights, dist):
    """The energy by its definition, 4-connected, weights per (direction, row, col)."""
    h, w, _ = unary.shape
    e = int(unary[np.arange(h)[:, None], np.arange(w)[None, :], labels].sum())
    e += int((weights[0][:, :-1] * dist(labels[:, :-1], labels[:, 1:])).sum())  # +x
    e += int((weights[1][:-1, :] * dist(labels[:-1, :], labels[1:, :])).sum())  # +y
    return e


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("truncation", [None, 2])
def test_alpha_expansion_energy_and_bound(seed, truncation):
    rng = np.random.default_rng(seed)
    h, w, labels = 2, 4, 3
    unary = rng.integers(0, 20, size=(h, w, labels))
    weights = rng.integers(0, 8, size=(2, h, w))
    if truncation is None:
        dist = lambda a, b: (a != b).astype(int)
        lab = segcut.alpha_expansion(unary, "potts", weights=weights)
    else:
        dist = lambda a, b: np.minimum(np.abs(a - b), truncation)
        lab = segcut.alpha_expansion(unary, "linear", truncation=truncation, weights=weights)
    assert lab.shape == (h, w)
    e = energy(unary, lab.astype(int), weights, dist)
    assert e == lab.result.extra["energy"]
    assert e <= lab.result.extra["initial_energy"]
    best = min(
        energy(unary, np.array(c).reshape(h, w), weights, dist)
        for c in itertools.product(range(labels), repeat=h * w)
    )
    # α-expansion's bound: within 2·max V / min V (nonzero) of the optimum; 2 for Potts.
    bound = 2 if truncation is None else 2 * truncation
    assert best <= e <= bound * best


def test_alpha_expansion_denoises_and_takes_matrices():
    rng = np.random.default_rng(3)
    truth = np.zeros((30, 40), int)
    truth[:, 14:28] = 1
    truth[10:20, 28:] = 2
    noisy = np.where(rng.random(truth.shape) < 0.15, rng.integers(0, 3, truth.shape), truth)
    unary = 10 * (noisy[..., None] != np.arange(3)).astype(int)
    lab = segcut.alpha_expansion(unary, "potts", weights=6)
    assert (lab == truth).mean() > 0.97
    assert lab.result.extra["converged"]
    # The same Potts model given as PyMaxflow's matrix V (weight folded in).
    v = 6 * (1 - np.eye(3, dtype=int))
    np.testing.assert_array_equal(segcut.alpha_expansion(unary, v), lab)
    # 8-connectivity and a starting labelling are accepted.
    lab8 = segcut.alpha_expansion(unary, "potts", weights=4, connectivity=8, initial=noisy, iterations=3)
    assert (lab8 == truth).mean() > 0.95


def test_alpha_expansion_errors():
    u = np.zeros((3, 4, 2), int)
    with pytest.raises(ValueError, match="rows, cols, labels"):
        segcut.alpha_expansion(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="truncation"):
        segcut.alpha_expansion(u, "linear")
    with pytest.raises(ValueError, match="Potts"):
        segcut.alpha_expansion(u, np.array([[0, 1], [2, 0]]))
    with pytest.raises(ValueError, match="weights must have shape"):
        segcut.alpha_expansion(u, weights=np.ones((3, 3, 4), int))
    with pytest.raises(ValueError, match="2\\*\\*24"):
        segcut.alpha_expansion(u - 1)
    with pytest.raises(ValueError, match="unknown solver"):
        segcut.alpha_expansion(u, solver="magic")


def textured_pair(h=20, w=48, shift=3):
    y, x = np.mgrid[0:h, 0:w]
    tex = lambda x, y: (((x * 37 + y * 11) % 23) * 11).astype(np.uint8)
    return tex(x, y), tex(x + shift, y)


def test_stereo_recovers_a_shift():
    left, right = textured_pair()
    d = segcut.stereo(left, right, num_disparities=6)
    assert d.dtype == np.float32 and d.shape == left.shape
    assert (d[:, 8:] == 3).mean() > 0.95
    assert d.result.solver in segcut.solvers()
    assert d.result.extra["energy"] <= d.result.extra["initial_energy"]
    colour = segcut.stereo(np.dstack([left] * 3), np.dstack([right] * 3), 6, smoothness="linear:2",
                           lambda_=10, connectivity=8, data="bt", solver="bk")
    assert (colour[:, 8:] == 3).mean() > 0.9
    shifted = segcut.stereo(left, right, num_disparities=4, min_disparity=1)
    assert shifted.min() >= 1 and shifted.max() <= 4


def test_stereo_errors():
    left, right = textured_pair()
    with pytest.raises(ValueError, match="right"):
        segcut.stereo(left, right[:, :-1])
    with pytest.raises(ValueError, match="smoothness"):
        segcut.stereo(left, right, smoothness="cubic")
    with pytest.raises(TypeError, match="unknown option"):
        segcut.stereo(left, right, disparity=5)


def test_gpu_alpha_expansion_matches_bk(gpu):
    rng = np.random.default_rng(5)
    unary = rng.integers(0, 50, size=(300, 400, 5))
    a = segcut.alpha_expansion(unary, "potts", weights=20, solver="bk")
    b = segcut.alpha_expansion(unary, "potts", weights=20, solver="cuda-grid")
    assert b.result.solver == "cuda-grid"
    assert a.result.extra["energy"] == b.result.extra["energy"]
