#!/usr/bin/env python3
"""Rate-distortion of the light-field codec (and SMoE's `.smc`) against x265 and JPEG on rendered
light fields.

For every scene (an HCI-layout folder, as tools/lfrender.sh writes), on exactly the same
views:
- ours: `lightfield train` on the *other* scenes (the scene coded is never seen in
  training; with --dct, `lightfield train --dct`, one fixed DCT dictionary), then
  `lightfield encode` at several epsilons and `lightfield decode --views`;
- x265: the views as one pseudo-video in serpentine order (row 0 left to right, row 1 right
  to left, ...), ffmpeg's libx265 at several QPs, 4:4:4 (yuv444p, BT.601 limited range as
  ffmpeg converts RGB), preset medium, tune psnr, one intra frame then P/B frames as x265
  chooses; decoded by ffmpeg back to RGB;
- JPEG: each view on its own, Pillow (libjpeg) at several qualities, 4:4:4;
- smc (with --smoe): `smoe fit LF.npy --bpp B --out x.smc` of the whole light field (a 4D
  Steered Mixture-of-Experts fitted to the byte budget), every view rendered from the file by
  `smoe render x.smc --views DIR`.
Rates are bits per pixel: the file's bits (for ours the whole .lfc, dictionaries included;
for x265 the raw HEVC stream; for JPEG the sum of the views' files) over views x width x
height. Quality is the mean over views of each view's PSNR on 8-bit RGB (all three
channels) and on Y (BT.601 luma, full range, computed from the 8-bit RGB of both sides).
The BD-rate (Bjontegaard, cubic fit of log rate against RGB PSNR over the overlapping
PSNR range) is ours against x265: negative means fewer bits than x265 at equal PSNR.

  tools/lfrd.py --lightfield target/release/lightfield --scene DIR [--scene DIR ...]
                --work DIR --json OUT.jsonl [--plot OUT.png] [--backend cpu|gpu]
                [--patch auto|HxWxUxV] [--dictionaries K] [--max-patches N] [--iterations I] [--dct]
                [--smoe target/release/smoe] [--no-x265]

One JSON object per line per (scene, codec, setting), then one per scene with the BD-rate.
Needs ffmpeg with libx265 (apt-get install ffmpeg), numpy and Pillow.
"""

import argparse
import glob
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image, ImageDraw

EPSILONS = [0.3, 0.25, 0.2, 0.15, 0.12, 0.09, 0.07, 0.055, 0.04, 0.025]
QPS = [51, 46, 41, 36, 31, 26]
JPEG_QUALITIES = [2, 5, 10, 20, 40, 70, 90]
SMC_BPP = [0.1, 0.25, 0.5, 1.0]


def read_views(folder):
    """The HCI folder's views as uint8 (N, H, W, 3), row-major, and the grid (U, V)."""
    files = sorted(glob.glob(os.path.join(folder, "input_Cam*.png")))
    if not files:
        sys.exit(f"lfrd.py: {folder} holds no input_CamNNN.png views")
    cfg = dict(
        line.split(" = ", 1) for line in open(os.path.join(folder, "parameters.cfg")).read().splitlines() if " = " in line
    )
    grid = (int(cfg["num_cams_y"]), int(cfg["num_cams_x"]))
    if grid[0] * grid[1] != len(files):
        sys.exit(f"lfrd.py: {folder}: {len(files)} views for a {grid[0]}x{grid[1]} grid")
    return np.stack([np.asarray(Image.open(f).convert("RGB")) for f in files]), grid


def luma(rgb):
    r, g, b = (rgb[..., c].astype(np.float64) for c in range(3))
    return 0.299 * r + 0.587 * g + 0.114 * b


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 99.0 if mse == 0 else 10 * math.log10(255.0**2 / mse)


def quality(ref, got):
    """Mean over views of the RGB PSNR and of the Y PSNR."""
    rgb = [psnr(r, g) for r, g in zip(ref, got)]
    y = [psnr(luma(r), luma(g)) for r, g in zip(ref, got)]
    return float(np.mean(rgb)), float(np.mean(y))


def serpentine(grid):
    u, v = grid
    return [r * v + (c if r % 2 == 0 else v - 1 - c) for r in range(u) for c in range(v)]


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"lfrd.py: {' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def x265_points(views, grid, work):
    n, h, w, _ = views.shape
    order = serpentine(grid)
    raw = os.path.join(work, "views.rgb")
    with open(raw, "wb") as f:
        for i in order:
            f.write(views[i].tobytes())
    out = []
    for qp in QPS:
        stream = os.path.join(work, f"x265_qp{qp}.hevc")
        t0 = time.time()
        run(["ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", "25",
             "-i", raw, "-pix_fmt", "yuv444p", "-c:v", "libx265", "-preset", "medium", "-tune", "psnr",
             "-x265-params", f"qp={qp}:log-level=error", "-f", "hevc", stream])
        encode_ms = (time.time() - t0) * 1e3
        t0 = time.time()
        dec = subprocess.run(["ffmpeg", "-loglevel", "error", "-i", stream, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                             capture_output=True, check=True).stdout
        decode_ms = (time.time() - t0) * 1e3
        frames = np.frombuffer(dec, np.uint8).reshape(n, h, w, 3)
        got = np.empty_like(views)
        for k, i in enumerate(order):
            got[i] = frames[k]
        bits = os.path.getsize(stream) * 8
        rgb, y = quality(views, got)
        out.append({"codec": "x265", "setting": f"qp {qp}", "bits": bits, "bpp": bits / (n * h * w), "psnr_rgb_db": rgb,
                    "psnr_y_db": y, "encode_ms": encode_ms, "decode_ms": decode_ms})
    return out


def jpeg_points(views):
    n, h, w, _ = views.shape
    out = []
    for q in JPEG_QUALITIES:
        bits, got = 0, np.empty_like(views)
        t0 = time.time()
        for i in range(n):
            buf = io.BytesIO()
            Image.fromarray(views[i]).save(buf, "JPEG", quality=q, subsampling=0)
            bits += len(buf.getvalue()) * 8
            got[i] = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
        rgb, y = quality(views, got)
        out.append({"codec": "jpeg", "setting": f"quality {q}", "bits": bits, "bpp": bits / (n * h * w),
                    "psnr_rgb_db": rgb, "psnr_y_db": y, "codec_ms": (time.time() - t0) * 1e3})
    return out


def ours_points(lightfield, scene, others, views, work, args):
    n, h, w, _ = views.shape
    dict_path = os.path.join(work, "dict.lfd")
    t0 = time.time()
    train = ["--dictionaries", str(args.dictionaries), "--patch", args.patch, "--max-patches", str(args.max_patches),
             "--iterations", str(args.iterations), "--epsilon", "0.02"]
    if args.dct:
        train = ["--dct", "--patch", args.patch]
    else:
        train = ["--input", *others, *train]
    rec = json.loads(run([lightfield, "train", *train, "--out", dict_path, "--json", "--backend", args.backend])
                     .splitlines()[-1])
    train_ms = (time.time() - t0) * 1e3
    my, mx, mu, mv = (int(x) for x in args.patch.split("x"))
    sparsity = my * mx * mu * mv * 3 // 4
    out = []
    for eps in EPSILONS:
        lfc = os.path.join(work, f"ours_{eps}.lfc")
        enc = json.loads(run([lightfield, "encode", "--input", scene, "--dict", dict_path, "--sparsity", str(sparsity),
                              "--epsilon", str(eps), "--out", lfc, "--json", "--backend", args.backend]).splitlines()[-1])
        folder = os.path.join(work, f"ours_{eps}")
        dec = json.loads(run([lightfield, "decode", lfc, "--views", folder, "--json", "--backend", args.backend])
                         .splitlines()[-1])
        u, v = enc["views"]
        got = np.stack([np.asarray(Image.open(os.path.join(folder, f"view_{i // v}_{i % v}.png")).convert("RGB"))
                        for i in range(u * v)])
        bits = os.path.getsize(lfc) * 8
        rgb, y = quality(views, got)
        info = json.loads(run([lightfield, "info", lfc, "--json"]).splitlines()[-1])
        out.append({"codec": "ours", "setting": f"epsilon {eps}", "bits": bits, "bpp": bits / (n * h * w),
                    "format_version": info["format_version"], "breakdown": info["breakdown"],
                    "psnr_rgb_db": rgb, "psnr_y_db": y, "encode_ms": enc["encode_ms"], "decode_ms": dec["decode_ms"],
                    "mean_coefficients": enc["mean_coefficients"], "train_ms": train_ms, "dictionaries": 1 if args.dct else args.dictionaries,
                    "patch": args.patch, "train_patches": rec.get("training_patches", 0),
                    "ensemble": "dct" if args.dct else "trained"})
    return out


def smc_points(smoe, views, grid, work, args):
    """`.smc` files fitted to each budget in SMC_BPP, every view rendered back from the file."""
    n, h, w, _ = views.shape
    u, v = grid
    npy = os.path.join(work, "lightfield.npy")
    np.save(npy, views.reshape(u, v, h, w, 3))
    out = []
    for bpp in SMC_BPP:
        smc = os.path.join(work, f"smc_{bpp}.smc")
        t0 = time.time()
        fit = json.loads(run([smoe, "fit", npy, "--bpp", str(bpp), "--out", smc, "--json", "--backend", args.backend])
                         .splitlines()[-1])
        fit_ms = (time.time() - t0) * 1e3
        t0 = time.time()
        folder = os.path.join(work, f"smc_{bpp}")
        run([smoe, "render", smc, "--views", folder, "--backend", args.backend])
        got = np.stack([np.asarray(Image.open(os.path.join(folder, f"view_{i // v}_{i % v}.png")).convert("RGB"))
                        for i in range(n)])
        render_ms = (time.time() - t0) * 1e3
        bits = os.path.getsize(smc) * 8
        rgb, y = quality(views, got)
        out.append({"codec": "smc", "setting": f"bpp {bpp}", "bits": bits, "bpp": bits / (n * h * w), "psnr_rgb_db": rgb,
                    "psnr_y_db": y, "fit_ms": fit_ms, "render_all_views_ms": render_ms,
                    "fit_psnr_db": fit.get("psnr_db"), "kernels": fit.get("kernels")})
    return out


def bd_rate(anchor, test):
    """Bjontegaard delta rate of `test` against `anchor` (percent), from (bpp, psnr) points."""
    def fit(points):
        p = sorted(points, key=lambda t: t[1])
        return np.polyfit([t[1] for t in p], [math.log(t[0]) for t in p], 3), p[0][1], p[-1][1]
    (pa, la, ha), (pt, lt, ht) = fit(anchor), fit(test)
    lo, hi = max(la, lt), min(ha, ht)
    if hi <= lo:
        return None
    ia, it = np.polyint(pa), np.polyint(pt)
    da = (np.polyval(ia, hi) - np.polyval(ia, lo)) / (hi - lo)
    dt = (np.polyval(it, hi) - np.polyval(it, lo)) / (hi - lo)
    return float((math.exp(dt - da) - 1) * 100)


def at_bpp(points, bpp):
    """PSNR (RGB) at `bpp`, interpolated linearly in log rate; None outside the points."""
    p = sorted((q["bpp"], q["psnr_rgb_db"]) for q in points)
    for (r0, q0), (r1, q1) in zip(p, p[1:]):
        if r0 <= bpp <= r1:
            t = (math.log(bpp) - math.log(r0)) / (math.log(r1) - math.log(r0))
            return q0 + t * (q1 - q0)
    return None


COLOURS = {"ours": (200, 30, 30), "x265": (30, 90, 200), "jpeg": (40, 150, 40), "smc": (150, 60, 170)}


def plot(results, path):
    """One small panel per scene: RGB PSNR against bpp (log axis, 0.01 to 10)."""
    scenes = list(dict.fromkeys(r["scene"] for r in results))
    pw, ph, m = 300, 220, 34
    img = Image.new("RGB", (pw * len(scenes), ph + 18), "white")
    d = ImageDraw.Draw(img)
    lo_db, hi_db = 15.0, 45.0
    for k, s in enumerate(scenes):
        x0 = k * pw
        X = lambda b: x0 + m + (math.log10(b) + 2) / 3 * (pw - m - 8)
        Y = lambda q: 8 + (hi_db - q) / (hi_db - lo_db) * (ph - m - 8)
        d.rectangle([X(0.01), Y(hi_db), X(10), Y(lo_db)], outline="black")
        for b in (0.01, 0.1, 1, 10):
            d.text((X(b) - 10, Y(lo_db) + 3), f"{b:g}", fill="black")
        for q in range(int(lo_db), int(hi_db) + 1, 10):
            d.text((x0 + 4, Y(q) - 6), f"{q}", fill="black")
            d.line([X(0.01), Y(q), X(10), Y(q)], fill=(225, 225, 225))
        d.text((x0 + m + 4, Y(hi_db) + 2), s, fill="black")
        for codec, colour in COLOURS.items():
            pts = sorted((r["bpp"], r["psnr_rgb_db"]) for r in results if r["scene"] == s and r["codec"] == codec)
            pts = [(b, q) for b, q in pts if 0.01 <= b <= 10 and lo_db <= q <= hi_db]
            for (b0, q0), (b1, q1) in zip(pts, pts[1:]):
                d.line([X(b0), Y(q0), X(b1), Y(q1)], fill=colour, width=2)
            for b, q in pts:
                d.ellipse([X(b) - 2, Y(q) - 2, X(b) + 2, Y(q) + 2], fill=colour)
    x = 6
    for codec, colour in COLOURS.items():
        d.rectangle([x, ph + 4, x + 10, ph + 14], fill=colour)
        d.text((x + 14, ph + 3), codec, fill="black")
        x += 70
    d.text((x, ph + 3), "RGB PSNR (dB) against bits per pixel (log scale)", fill="black")
    img.save(path, optimize=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lightfield", required=True)
    ap.add_argument("--scene", action="append", required=True, help="HCI-layout folder (at least two)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--plot")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--dictionaries", type=int, default=8)
    ap.add_argument("--patch", default="auto",
                    help="HxWxUxV, or auto (the default): 16x16 pixels (the largest mode size) of the scene's whole "
                         "view grid, on either backend (with --dct 1-18%% less rate than 8x8 pixels on the rendered "
                         "scenes, BENCHMARKS.md); patches whose views do not divide the grid pad it (8x8-view "
                         "patches code a 9x9 grid as 16x16 views)")
    ap.add_argument("--max-patches", type=int, default=8000)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--dct", action="store_true",
                    help="code with `lightfield train --dct` (one fixed DCT-II dictionary) instead of training")
    ap.add_argument("--smoe", help="the smoe binary: adds `.smc` points")
    ap.add_argument("--no-x265", action="store_true", help="leave x265 out (no ffmpeg with libx265)")
    ap.add_argument("--only", action="append", help="code only this scene (by folder name; the others still train)")
    args = ap.parse_args()
    if len(args.scene) < 2:
        sys.exit("lfrd.py: give at least two --scene folders (each is coded with dictionaries trained on the others)")
    os.makedirs(args.work, exist_ok=True)
    results = []
    with open(args.json, "w") as out:
        for scene in args.scene:
            name = os.path.basename(scene.rstrip("/"))
            if args.only and name not in args.only:
                continue
            work = tempfile.mkdtemp(prefix=name + ".", dir=args.work)
            views, grid = read_views(scene)
            others = [s for s in args.scene if s != scene]
            if args.patch == "auto":
                args.patch = f"16x16x{grid[0]}x{grid[1]}"
            points = ours_points(args.lightfield, scene, others, views, work, args)
            if not args.no_x265:
                points += x265_points(views, grid, work)
            points += jpeg_points(views)
            if args.smoe:
                points += smc_points(args.smoe, views, grid, work, args)
            for p in points:
                p.update(scene=name, views=list(grid), width=views.shape[2], height=views.shape[1])
                out.write(json.dumps(p) + "\n")
                out.flush()
            results += points
            curve = {c: [(p["bpp"], p["psnr_rgb_db"]) for p in points if p["codec"] == c] for c in COLOURS}
            anchor = "jpeg" if args.no_x265 else "x265"
            summary = {"scene": name, "codec": "summary", "anchor": anchor,
                       **{f"bd_rate_{c}_vs_{anchor}_pct": bd_rate(curve[anchor], curve[c])
                          for c in COLOURS if c != anchor and len(curve[c]) >= 4},
                       "psnr_at_bpp": {str(b): {c: at_bpp([p for p in points if p["codec"] == c], b)
                                                for c in COLOURS if curve[c]} for b in (0.1, 0.25, 0.3, 0.5, 1.0)}}
            out.write(json.dumps(summary) + "\n")
            out.flush()
            print(json.dumps(summary), file=sys.stderr)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
