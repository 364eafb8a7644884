"""An example renderer on tessera.composite.Compositor and an mpi4py communicator.

Each rank ray-casts its share of a scene of spheres (sphere i is drawn by rank i mod N)
into full-size colour and depth buffers with numpy, hands them to the compositor with the
viewport of the pixels it drew, and the root writes the composited image as a PNG.

    mpirun -n 3 python examples/python/composite_mpi.py --size 160x120 --out frame.png \\
        [--mode zbuffer|over] [--float] [--empty-rank R] [--order reverse] [--root R] \\
        [--backend auto|gpu|cpu] [--frames N] [--check] [--check-errors]

--mode over gives every sphere alpha 0.6 (premultiplied) and blends the ranks front to back
in rank order (reversed with --order reverse). --float composites float32 RGBA instead of
uint8. --check gathers every rank's buffers to the root and compares the composite with an
independent one computed here with numpy (z-buffer: identical; over: within half a level
per merge, and 1/255 at most for up to 3 ranks).
--check-errors first makes calls with bad arguments and checks that each raises on every
rank. The root prints one JSON line of per-phase times per frame.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import zlib

import numpy as np
from mpi4py import MPI

import tessera


def spheres(count: int, w: int, h: int) -> np.ndarray:
    """The scene, the same on every rank: x, y (pixels), z in (0, 1), radius, r, g, b."""
    rng = np.random.default_rng(12345)
    s = np.empty((count, 7))
    s[:, 0] = rng.uniform(0, w, count)
    s[:, 1] = rng.uniform(0, h, count)
    s[:, 2] = rng.uniform(0.1, 0.9, count)
    s[:, 3] = rng.uniform(0.05, 0.2, count) * min(w, h)
    s[:, 4:] = rng.uniform(0.2, 1.0, (count, 3))
    return s


def draw(scene: np.ndarray, mine: np.ndarray, w: int, h: int, alpha: float):
    """This rank's spheres: premultiplied RGBA in [0, 1], depth (1.0 = background), and the
    viewport (x, y, w, h) of the pixels drawn."""
    color = np.zeros((h, w, 4))
    depth = np.ones((h, w), np.float32)
    for x, y, z, r, *rgb in scene[mine]:
        # The sphere's bounding box, clipped to the image.
        x0, x1 = max(int(x - r), 0), min(int(x + r) + 1, w)
        y0, y1 = max(int(y - r), 0), min(int(y + r) + 1, h)
        if x0 >= x1 or y0 >= y1:
            continue
        ys, xs = np.mgrid[y0:y1, x0:x1] + 0.5
        d2 = ((xs - x) ** 2 + (ys - y) ** 2) / (r * r)
        front = np.sqrt(np.clip(1.0 - d2, 0.0, 1.0))
        # The sphere's front surface: nearer at its centre, shaded by its normal's z.
        surface = (z - 0.05 * front).astype(np.float32)
        box = depth[y0:y1, x0:x1]
        nearer = (d2 < 1.0) & (surface < box)
        c = color[y0:y1, x0:x1]
        c[nearer, :3] = alpha * (front[..., None] * np.array(rgb))[nearer]
        c[nearer, 3] = alpha
        box[nearer] = surface[nearer]
    rows, cols = np.nonzero(depth < 1.0)
    if rows.size == 0:
        viewport = (0, 0, 0, 0)
    else:
        viewport = (int(cols.min()), int(rows.min()), int(cols.max() - cols.min() + 1), int(rows.max() - rows.min() + 1))
    return color, depth, viewport


def png(path: str, rgba: np.ndarray) -> None:
    """Writes an 8-bit RGBA PNG (no dependency beyond zlib)."""
    h, w, _ = rgba.shape
    raw = b"".join(b"\0" + rgba[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def reference(parts, order, mode: str) -> np.ndarray:
    """An independent composite in float64: the nearest depth (ties to the earlier rank in
    order), or premultiplied "over" front to back in `order`; 0 where no rank drew."""
    colors = np.stack([c.astype(np.float64) for c, _ in parts])
    depths = np.stack([d for _, d in parts])
    if mode == "zbuffer":
        ordered = depths[order]
        first = np.argmin(ordered, axis=0)
        winner = np.asarray(order)[first]
        out = np.take_along_axis(colors, winner[None, ..., None], axis=0)[0]
        out[np.min(depths, axis=0) >= 1.0] = 0.0
        return out
    acc = np.zeros(colors.shape[1:])
    for r in order:
        drawn = (depths[r] < 1.0)[..., None]
        acc += np.where(drawn, colors[r] * (1.0 - acc[..., 3:4]), 0.0)
    return acc


def check_errors(comm, w: int, h: int) -> int:
    """Bad arguments raise on every rank; returns how many did not."""
    bad = 0
    c = tessera.composite.Compositor(comm, w, h)
    wrong = [
        ("a colour of the wrong shape", lambda: c.composite(np.zeros((h, w + 1, 4), np.uint8), np.ones((h, w), np.float32))),
        ("float colour for rgba8", lambda: c.composite(np.zeros((h, w, 4), np.float32), np.ones((h, w), np.float32))),
        ("no depth for the z-buffer", lambda: c.composite(np.zeros((h, w, 4), np.uint8))),
        ("a viewport outside the image", lambda: c.composite(np.zeros((h, w, 4), np.uint8), np.ones((h, w), np.float32), (0, 0, w + 1, h))),
    ]
    # One rank alone passes a NaN depth: every rank's call fails.
    nan = np.ones((h, w), np.float32)
    if comm.rank == comm.size - 1:
        nan[0, 0] = np.nan
    wrong.append(("a NaN depth on one rank", lambda: c.composite(np.zeros((h, w, 4), np.uint8), nan)))
    wrong += [
        ("width 0", lambda: tessera.composite.Compositor(comm, 0, h)),
        ("a z-buffer without depth", lambda: tessera.composite.Compositor(comm, w, h, depth=False)),
        ("colour 'rgb9'", lambda: tessera.composite.Compositor(comm, w, h, color="rgb9")),
    ]
    for what, call in wrong:
        try:
            call()
            bad += 1
            print(f"rank {comm.rank}: {what} was not refused", file=sys.stderr)
        except tessera.TesseraError as e:
            if comm.rank == 0:
                print(f"refused as expected: {what}: {type(e).__name__}: {e}")
    return bad


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="160x120")
    p.add_argument("--out", default="frame.png")
    p.add_argument("--mode", choices=["zbuffer", "over"], default="zbuffer")
    p.add_argument("--float", action="store_true")
    p.add_argument("--empty-rank", type=int, default=-1)
    p.add_argument("--order", choices=["ranks", "reverse"], default="ranks")
    p.add_argument("--root", type=int, default=0)
    p.add_argument("--spheres", type=int, default=24)
    p.add_argument("--backend", default="auto")
    p.add_argument("--frames", type=int, default=1)
    p.add_argument("--check", action="store_true")
    p.add_argument("--check-errors", action="store_true")
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    w, h = (int(v) for v in a.size.split("x"))
    if a.check_errors and check_errors(comm, w, h):
        return 1
    alpha = 0.6 if a.mode == "over" else 1.0
    scene = spheres(a.spheres, w, h)
    mine = np.arange(a.spheres) % comm.size == comm.rank
    if comm.rank == a.empty_rank:
        mine[:] = False
    color, depth, viewport = draw(scene, mine, w, h, alpha)
    if a.float:
        color = color.astype(np.float32)
    else:
        color = np.round(color * 255).astype(np.uint8)
    order = list(range(comm.size))[:: -1 if a.order == "reverse" else 1]
    c = tessera.composite.Compositor(
        comm, w, h, color="rgba32f" if a.float else "rgba8", mode=a.mode, order=order, root=a.root, backend=a.backend
    )
    for _ in range(a.frames):
        out = c.composite(color, depth, viewport)
        times = comm.gather(c.last_times, root=a.root)
        if out is not None:
            slowest = {k: max(t[k] for t in times) for k in times[0]}
            print(json.dumps({"ranks": comm.size, "size": a.size, "device": c.device, "bytes_sent": c.last_bytes_sent, **slowest}))
    parts = comm.gather((color, depth), root=a.root) if a.check else None
    if out is None:
        return 0
    rgba, _ = out
    image = rgba if not a.float else np.round(np.clip(rgba, 0, 1) * 255).astype(np.uint8)
    png(a.out, image)
    if a.check:
        scale = 1.0 if a.float else 255.0
        want = reference([(c_ / scale, d) for c_, d in parts], order, a.mode)
        worst = float(np.max(np.abs(rgba.astype(np.float64) / scale - want)))
        # Blending in 8 bits rounds once per merge of two partial images (at most half a
        # level each, scaled down by the layers in front): N ranks, at most N - 1 merges.
        bound = 0.0 if a.mode == "zbuffer" else max(1.0, 0.5 * (comm.size - 1)) / 255.0 + 1e-6
        if a.float:
            bound = 1e-6
        if worst > bound:
            print(f"check failed: off by {worst} from an independent composite (bound {bound})", file=sys.stderr)
            return 1
        print(f"check passed: {a.mode}, {'float32' if a.float else 'uint8'}, {comm.size} ranks, worst {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
