#!/usr/bin/env python3
"""Renders samples/balloon.png (a synthetic 320x240 photo-like picture) and its scribbles
samples/balloon-seeds.png (palette PNG: index 0 free, 1 foreground, 2 background).

Made for segcut and free to redistribute with it. Plain Python (zlib for PNG), deterministic:
    python3 samples/make_sample.py
"""
import math
import random
import struct
import zlib

W, H = 320, 240
rng = random.Random(2026)


def png(path, width, height, rows, color_type, palette=None):
    """Writes an 8-bit PNG; rows are bytes objects without the filter byte."""
    def chunk(tag, data):
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0))
    if palette:
        out += chunk(b"PLTE", b"".join(bytes(c) for c in palette))
    out += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(out)


# Smooth value noise for texture.
GRID = 16
lattice = [[rng.random() for _ in range(3 * W // GRID + 2)] for _ in range(3 * H // GRID + 2)]


def value_noise(x, y):
    gx, gy = x / GRID, y / GRID
    x0, y0 = int(gx), int(gy)
    fx, fy = gx - x0, gy - y0
    sx, sy = fx * fx * (3 - 2 * fx), fy * fy * (3 - 2 * fy)
    a = lattice[y0][x0] * (1 - sx) + lattice[y0][x0 + 1] * sx
    b = lattice[y0 + 1][x0] * (1 - sx) + lattice[y0 + 1][x0 + 1] * sx
    return a * (1 - sy) + b * sy


# The balloon: an ellipse with a light from the upper left, and its knot and string.
CX, CY, RX, RY = 150.0, 100.0, 58.0, 72.0


def balloon(x, y):
    dx, dy = (x - CX) / RX, (y - CY) / RY
    r2 = dx * dx + dy * dy
    if r2 <= 1.0:
        shade = 0.55 + 0.45 * max(0.0, 1.0 - math.hypot(dx + 0.35, dy + 0.4))
        return (200 * shade + 30, 40 * shade + 10, 50 * shade + 15)
    if abs(x - CX) <= 6 - (y - (CY + RY)) and CY + RY - 2 <= y <= CY + RY + 6:
        return (170, 30, 40)  # the knot
    return None


def string(x, y):
    if y < CY + RY + 6 or y > H - 1:
        return False
    sx = CX + 6 * math.sin((y - CY - RY) / 14.0)
    return abs(x - sx) < 0.9


def background(x, y):
    t = y / (H - 1)
    if y < 170 + 8 * math.sin(x / 37.0):  # sky with soft clouds
        n = value_noise(x, y)
        c = (110 + 60 * t + 50 * n, 160 + 40 * t + 40 * n, 230 - 10 * t + 20 * n)
    else:  # grass
        n = value_noise(x * 2.5, y * 2.5)
        c = (60 + 40 * n, 130 + 60 * n, 50 + 20 * n)
    return c


rgb_rows = []
for y in range(H):
    row = bytearray()
    for x in range(W):
        c = balloon(x, y)
        if c is None:
            c = (235, 235, 235) if string(x, y) else background(x, y)
        for v in c:
            row.append(max(0, min(255, int(round(v + rng.gauss(0, 6))))))
    rgb_rows.append(bytes(row))
png("samples/balloon.png", W, H, rgb_rows, 2)

# Scribbles: a stroke down the balloon (foreground); strokes across the sky and the grass
# (background).
labels = [[0] * W for _ in range(H)]


def stroke(points, label, radius=2):
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for i in range(steps + 1):
            x = x0 + (x1 - x0) * i / steps
            y = y0 + (y1 - y0) * i / steps
            for yy in range(int(y) - radius, int(y) + radius + 1):
                for xx in range(int(x) - radius, int(x) + radius + 1):
                    if 0 <= xx < W and 0 <= yy < H:
                        labels[yy][xx] = label


stroke([(130, 60), (150, 95), (145, 140)], 1)
stroke([(20, 30), (80, 20), (110, 40)], 2)
stroke([(230, 40), (290, 90), (260, 150)], 2)
stroke([(30, 205), (120, 215), (260, 200), (300, 225)], 2)
png("samples/balloon-seeds.png", W, H, [bytes(r) for r in labels], 3,
    palette=[(0, 0, 0), (255, 0, 0), (0, 0, 255)])
print("wrote samples/balloon.png and samples/balloon-seeds.png")
