"""The keyword options come from segcut's options model: every option of the table is a keyword,
values are range-checked by the library, a value equal to the default is honoured, and the seed
conventions and float images are read as docs/python.md says."""

import numpy as np
import pytest

import segcut
from segcut import _segcut


def square(dtype=np.uint8):
    img = np.full((24, 24, 3), 200, np.uint8)
    img[6:18, 6:18] = (40, 80, 120)
    return img


def test_every_option_is_a_keyword():
    img = square()
    seeds = np.zeros(img.shape[:2], np.uint8)
    seeds[12, 12] = 1
    seeds[0, 0] = 2
    for name, default in _segcut.option_table("segment"):
        assert default
        # An unknown keyword is a TypeError; a known one never is (a bad value is a ValueError).
        try:
            segcut.segment(img, seeds, **{name: "not-a-value"})
        except ValueError as e:
            assert name in str(e)
        except TypeError as e:  # pragma: no cover - the failure this test looks for
            pytest.fail(f"{name}: {e}")
    for name, _ in _segcut.option_table("stereo"):
        left = right = np.zeros((8, 24), np.uint8)
        with pytest.raises(ValueError, match=name):
            segcut.stereo(left, right, **{name: "not-a-value"})


def test_values_are_range_checked():
    img = square()
    seeds = np.zeros(img.shape[:2], np.uint8)
    seeds[12, 12] = 1
    seeds[0, 0] = 2
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="lambda"):
            segcut.segment(img, seeds, lambda_=bad)
    left = right = np.zeros((8, 24), np.uint8)
    with pytest.raises(ValueError, match="cost_scale"):
        segcut.stereo(left, right, cost_scale=0)
    with pytest.raises(ValueError, match="lambda"):
        segcut.stereo(left, right, lambda_=float("nan"))


def test_unary_keeps_a_given_lambda_and_refuses_model_options():
    img = square()
    p = np.where(img[..., 0] < 100, 0.9, 0.1).astype(np.float32)
    given = segcut.segment(img, unary=p, lambda_=100)
    assert given.result.extra["report"]["options"]["lambda"] == 100
    default = segcut.segment(img, unary=p)
    assert default.result.extra["report"]["options"]["lambda"] == 2
    with pytest.raises(ValueError, match="model"):
        segcut.segment(img, unary=p, model="gmm")
    with pytest.raises(ValueError, match="iterations"):
        segcut.segment(img, unary=p, iterations=3)


def test_opencv_seed_format_reads_2_as_probably_background():
    img = square()
    mask = np.full(img.shape[:2], 2, np.uint8)  # everything probably background
    mask[12, 12] = 1
    mask[0, 0] = 0
    soft = segcut.segment(img, mask, seed_format="opencv", drop_unseeded=False)
    # Soft: the square's colour pulls its pixels to the foreground despite the 2s.
    assert soft[8:16, 8:16].all()
    assert soft.result.extra["report"]["seeds"]["probably_background"] == mask.size - 2
    hard = segcut.segment(img, mask)  # segcut's labels: 2 is hard background
    assert hard.sum() == 1 or hard.sum() < soft.sum()


def test_unit_float_images_are_scaled():
    img = square()
    seeds = np.zeros(img.shape[:2], np.uint8)
    seeds[12, 12] = 1
    seeds[0, 0] = 2
    as_u8 = segcut.segment(img, seeds, lambda_=50)
    as_unit = segcut.segment(img.astype(np.float32) / 255, seeds, lambda_=50)
    assert (as_u8 == as_unit).all()
    assert as_unit.result.extra["report"]["options"]["beta"] == pytest.approx(
        as_u8.result.extra["report"]["options"]["beta"], rel=1e-4
    )
