"""The CPU exact solver beside scipy's linear_sum_assignment, on the same matrices, in one run.

Matrices (rows = patches, columns = tiles):
- photo: the cells of a target photo against random crops of other photos (scikit-image's
  sample photos), each described by a 4x4 grid of mean colours (48 values in 0..255), the
  cost the squared Euclidean distance between descriptions;
- uniform: u in [0, 1);
- integer: floor(u n), a low range with many ties.

Usage: python3 exact_vs_scipy.py MOSAIC_BINARY [MxN ...]   (default 2048x8192)
Prints one JSON line per matrix and solver; costs are compared in f64.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.optimize import linear_sum_assignment
import skimage.data as data


def grid_means(img, u=4, v=4):
    """(u v 3) mean colours of an image cut into a u x v grid, float64."""
    h, w, _ = img.shape
    out = np.empty((v, u, 3))
    for y in range(v):
        for x in range(u):
            out[y, x] = img[y * h // v:(y + 1) * h // v, x * w // u:(x + 1) * w // u].reshape(-1, 3).mean(0)
    return out.ravel()


def photo_matrix(m, n, rng):
    target = data.astronaut()
    library = [data.chelsea(), data.coffee(), data.rocket(), data.hubble_deep_field(),
               data.immunohistochemistry(), data.retina(), data.colorwheel(), data.stereo_motorcycle()[0]]
    cols = int(round(np.sqrt(m)))
    while m % cols:
        cols -= 1
    rows = m // cols
    h, w, _ = target.shape
    cells = np.array([grid_means(target[r * h // rows:(r + 1) * h // rows, c * w // cols:(c + 1) * w // cols])
                      for r in range(rows) for c in range(cols)])
    tiles = []
    for k in range(n):
        img = library[k % len(library)]
        ih, iw, _ = img.shape
        s = int(rng.integers(16, min(ih, iw) // 3))
        y, x = int(rng.integers(0, ih - s)), int(rng.integers(0, iw - s))
        tiles.append(grid_means(img[y:y + s, x:x + s]))
    tiles = np.array(tiles)
    d = (cells ** 2).sum(1)[:, None] + (tiles ** 2).sum(1)[None, :] - 2 * cells @ tiles.T
    return np.maximum(d, 0.0)


def main():
    binary = sys.argv[1]
    sizes = [tuple(map(int, s.split("x"))) for s in sys.argv[2:]] or [(2048, 8192)]
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        for m, n in sizes:
            mats = {
                "photo": photo_matrix(m, n, rng),
                "uniform": rng.random((m, n)),
                "integer": np.floor(rng.random((m, n)) * n),
            }
            for kind, d in mats.items():
                # Stored as float32 (what `mosaic distance` writes); both solvers read the same values.
                d = d.astype(np.float32)
                path = os.path.join(tmp, f"{kind}.npy")
                np.save(path, d)
                d64 = d.astype(np.float64)
                t = time.perf_counter()
                r, c = linear_sum_assignment(d64)
                scipy_ms = (time.perf_counter() - t) * 1e3
                scipy_cost = float(d64[r, c].sum())
                out = subprocess.run([binary, "solve", "--distance", path, "--method", "exact", "--backend", "cpu",
                                      "--json"], capture_output=True, text=True, check=True)
                ours = json.loads(out.stdout)
                print(json.dumps({"matrix": kind, "m": m, "n": n, "scipy_ms": round(scipy_ms, 1),
                                  "ours_ms": round(ours["solve_ms"], 1), "speedup": round(scipy_ms / ours["solve_ms"], 2),
                                  "scipy_cost": scipy_cost, "ours_cost": ours["cost"],
                                  "equal": abs(scipy_cost - ours["cost"]) <= 1e-9 * max(scipy_cost, 1.0),
                                  "duality_gap": ours["duality_gap"]}), flush=True)


if __name__ == "__main__":
    main()
