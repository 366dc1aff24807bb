"""segcut.segment from numpy arrays: images, volumes, seeds, rectangles, probability maps."""

import numpy as np
import pytest

import segcut


def square_image(dtype=np.uint8, colour=False, shape=(40, 48)):
    rng = np.random.default_rng(0)
    img = np.full(shape, 200.0)
    img[10:30, 12:36] = 40.0
    img += rng.normal(0, 6, size=shape)
    img = np.clip(img, 0, 255)
    if colour:
        img = np.stack([img, img * 0.8, 255 - img], axis=-1)
    truth = np.zeros(shape, bool)
    truth[10:30, 12:36] = True
    return img.astype(dtype), truth


def seeds_for(shape):
    s = np.zeros(shape, np.uint8)
    s[18:22, 20:28] = segcut.SEED_FOREGROUND
    s[:3, :] = segcut.SEED_BACKGROUND
    s[-3:, :] = segcut.SEED_BACKGROUND
    return s


def accuracy(mask, truth):
    return float((np.asarray(mask) == truth).mean())


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64, np.int32])
def test_grey_image_dtypes(dtype):
    img, truth = square_image(dtype)
    mask = segcut.segment(img, seeds_for(img.shape))
    assert mask.shape == img.shape and mask.dtype == bool
    assert accuracy(mask, truth) > 0.98
    r = mask.result
    assert r.solver in segcut.solvers()
    assert r.certificate is not None and r.extra["verified"]
    assert set(r.times) >= {"models", "graph", "solve", "verify", "total"}
    assert all(v >= 0 for v in r.times.values())


def test_colour_image_and_alpha():
    img, truth = square_image(colour=True)
    seeds = seeds_for(truth.shape)
    mask = segcut.segment(img, seeds)
    assert accuracy(mask, truth) > 0.98
    rgba = np.concatenate([img, np.full(truth.shape + (1,), 255, np.uint8)], axis=-1)
    np.testing.assert_array_equal(segcut.segment(rgba, seeds), mask)


def test_options_change_the_result_and_match_the_cli_defaults():
    img, truth = square_image()
    seeds = seeds_for(img.shape)
    default = segcut.segment(img, seeds)
    same = segcut.segment(
        img, seeds, connectivity=8, lambda_=100, iterations=5, model="gmm", components=5,
        color_space="lab", prior=15, prior_contrast=3, prior_softness=0.15, prior_enclosure=8,
        prior_coverage=0.025,
        prior_explained=1, outlier=0, initial="nearer-background", initial_enclosure=0.8,
        initial_coverage=0.05, initial_margin=0.2, stroke_check=0.5,
        drop_unseeded=True, fill_holes=0,
    )
    np.testing.assert_array_equal(default, same)
    # The gated first fit (issue 25) is an option like the others.
    gated = segcut.segment(img, seeds, initial="nearer-unexplained", initial_enclosure=0.8)
    assert accuracy(gated, truth) > 0.95
    # So is the stroke check (issue 25): consistent strokes keep their mask.
    checked = segcut.segment(img, seeds, stroke_check=0.3)
    assert accuracy(checked, truth) > 0.95
    assert default.result.extra["connectivity"] == 8
    # The options reach the pipeline: a larger smoothness weight raises the energy of the
    # (same) boundary; iterations and the solver are what the result reports.
    smooth = segcut.segment(img, seeds, **{"lambda": 1000}, iterations=1, solver="dinic")
    assert smooth.result.extra["energy"] > default.result.extra["energy"]
    assert smooth.result.extra["iterations"] == 1 and smooth.result.solver == "dinic"
    hist = segcut.segment(img, seeds, model="hist", bins=8, connectivity=4, solver="bk")
    assert accuracy(hist, truth) > 0.95 and hist.result.solver == "bk"


def test_rect():
    img, truth = square_image(colour=True)
    mask = segcut.segment(img, rect=(8, 6, 32, 28))
    assert accuracy(mask, truth) > 0.95
    assert not mask[:6].any()


def test_unary_probability_map():
    img, truth = square_image()
    prob = np.where(truth, 0.8, 0.2).astype(np.float32)
    prob[20, 5] = 0.9  # an isolated wrong pixel is smoothed away
    mask = segcut.segment(img, unary=prob)
    assert accuracy(mask, truth) > 0.99
    assert not mask[20, 5]


def test_volume():
    rng = np.random.default_rng(1)
    vol = np.full((12, 20, 22), 180.0) + rng.normal(0, 5, size=(12, 20, 22))
    vol[3:9, 5:15, 6:16] = 50
    truth = np.zeros(vol.shape, bool)
    truth[3:9, 5:15, 6:16] = True
    seeds = np.zeros(vol.shape, np.uint8)
    seeds[6, 10, 11] = 1
    seeds[0] = 2
    mask = segcut.segment(vol.astype(np.float32), seeds)
    assert mask.shape == vol.shape
    assert accuracy(mask, truth) > 0.98
    assert mask.result.extra["connectivity"] == 6
    m26 = segcut.segment(vol, seeds, connectivity=26)
    assert m26.result.extra["connectivity"] == 26
    # A thin 3D array is a colour image unless volume=True says otherwise.
    thin = vol[:, :, :3].copy()
    s3 = np.zeros(thin.shape, np.uint8)
    s3[6, 10, 1] = 1
    s3[0] = 2
    assert segcut.segment(thin, s3, volume=True).shape == thin.shape


def test_errors():
    img, _ = square_image()
    seeds = seeds_for(img.shape)
    with pytest.raises(ValueError, match="seeds"):
        segcut.segment(img)
    with pytest.raises(ValueError, match="no foreground seeds"):
        segcut.segment(img, np.full(img.shape, 2, np.uint8))
    with pytest.raises(ValueError, match="shape"):
        segcut.segment(img, seeds[:-1])
    bad = seeds.copy()
    bad[3, 4] = 9
    with pytest.raises(ValueError, match=r"seeds\[3, 4\] = 9"):
        segcut.segment(img, bad)
    with pytest.raises(TypeError, match="unknown option"):
        segcut.segment(img, seeds, lamda=3)
    with pytest.raises(ValueError, match="lambda"):
        segcut.segment(img, seeds, lambda_=-1)
    with pytest.raises(ValueError, match="iterations"):
        segcut.segment(img, seeds, iterations=0)
    with pytest.raises(ValueError, match="unknown solver"):
        segcut.segment(img, seeds, solver="fast")
    with pytest.raises(ValueError, match="model"):
        segcut.segment(img, seeds, model="svm")
    with pytest.raises(ValueError, match="rectangle"):
        segcut.segment(img, rect=(0, 0, 500, 5))
    with pytest.raises(ValueError, match="not finite"):
        f = img.astype(np.float32)
        f[2, 2] = np.nan
        segcut.segment(f, seeds)
    with pytest.raises(TypeError, match="dtype"):
        segcut.segment(np.array([["a"]]), seeds)
    with pytest.raises(ValueError, match="probab|\\[0, 1\\]"):
        segcut.segment(img, unary=np.full(img.shape, 2.0))


def test_gpu_segment_matches_cpu(gpu):
    rng = np.random.default_rng(2)
    shape = (400, 420)
    img = np.zeros(shape + (3,))
    img[:] = (200, 180, 60)
    img[100:300, 120:320] = (40, 90, 200)
    img = np.clip(img + rng.normal(0, 12, size=img.shape), 0, 255).astype(np.uint8)
    seeds = np.zeros(shape, np.uint8)
    seeds[180:220, 200:240] = segcut.SEED_FOREGROUND
    seeds[:20] = segcut.SEED_BACKGROUND
    cpu = segcut.segment(img, seeds, solver="bk")
    on_gpu = segcut.segment(img, seeds, solver="cuda-grid")
    assert on_gpu.result.solver == "cuda-grid"
    truth = np.zeros(shape, bool)
    truth[100:300, 120:320] = True
    assert accuracy(cpu, truth) > 0.99
    # The GPU builds the graph in single precision: a few boundary pixels may differ.
    assert accuracy(on_gpu, np.asarray(cpu)) > 0.999
