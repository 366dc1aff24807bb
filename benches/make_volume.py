#!/usr/bin/env python3
"""Writes DIR/vol.nii (500x500x100 uint8: a noisy bright ball in a dark box, voxels 1x1x1) and
DIR/seeds.nii (labels: 1 inside a small ball at the centre, 2 in a corner column), for timing
`segcut DIR/vol.nii --seeds DIR/seeds.nii --seed-format labels -o mask.nii --stats-json s.json`.
Needs numpy.

    python3 benches/make_volume.py /tmp
"""
import struct
import sys

import numpy as np

W, H, D = 500, 500, 100


def nifti(path, a):
    """A minimal single-file NIfTI-1 (uint8, unit spacing)."""
    h = bytearray(352)
    struct.pack_into("<i", h, 0, 348)
    struct.pack_into("<8h", h, 40, 3, W, H, D, 1, 1, 1, 1)
    struct.pack_into("<hh", h, 70, 2, 8)  # datatype uint8, 8 bits per voxel
    struct.pack_into("<8f", h, 76, 1, 1, 1, 1, 1, 1, 1, 1)
    struct.pack_into("<f", h, 108, 352.0)  # vox_offset
    h[344:348] = b"n+1\0"
    with open(path, "wb") as f:
        f.write(h)
        f.write(a.tobytes())


def main(out):
    z, y, x = np.mgrid[0:D, 0:H, 0:W]
    r2 = (x - 250.0) ** 2 + (y - 250.0) ** 2 + (4.0 * (z - 50.0)) ** 2
    rng = np.random.default_rng(5)
    vol = np.where(r2 <= 150.0 ** 2, 170.0, 70.0) + rng.normal(0, 20, size=r2.shape)
    vol = np.clip(np.round(vol), 0, 255).astype(np.uint8)
    seeds = np.zeros_like(vol)
    seeds[r2 <= 20.0 ** 2] = 1
    seeds[(x < 20) & (y < 20)] = 2
    nifti(f"{out}/vol.nii", vol)
    nifti(f"{out}/seeds.nii", seeds)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
