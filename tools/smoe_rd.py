#!/usr/bin/env python3
"""Rate-distortion of `.smc` (`smoe fit --bpp`) against the image codecs Pillow has.

For each photo (scikit-image's natural colour photos at native size, or the images of a
folder) and each target rate: `smoe fit PHOTO --bpp B --out x.smc` (fit time from its
record), `smoe render x.smc --out x.png` (decode + render time), then JPEG (optimised,
4:2:0), JPEG 2000 (OpenJPEG), WebP and AVIF, each where this Pillow has it, at the largest
quality whose file is at most the .smc's bytes. PSNR, SSIM and MS-SSIM (RGB, 8-bit,
Gaussian-window SSIM, five-scale MS-SSIM with Wang et al.'s weights) of every decoded image;
BD-rate of each codec against JPEG (PSNR, cubic fit of log rate, over the common range).

Writes smoe_rd.json (every row), smoe_rd.md (the table) and smoe_rd.png (the curves) to
--out. A time limit stops starting new fits once reached (the skipped points are listed).
"""

import argparse
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image, features
from scipy.ndimage import gaussian_filter

# scikit-image's colour photos (name -> loader attribute); `motorcycle_left` is the left
# view of `stereo_motorcycle`.
SKIMAGE_PHOTOS = ["astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field", "motorcycle_left"]


def skimage_photos(names):
    from skimage import data

    out = []
    for name in names:
        # Some of scikit-image's photos are fetched on first use: without a network they
        # are skipped, with a line that says so.
        try:
            img = data.stereo_motorcycle()[0] if name == "motorcycle_left" else getattr(data, name)()
        except Exception as e:
            print(f"smoe_rd: photo {name} skipped: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        img = np.asarray(img)
        if img.ndim == 2:
            img = np.repeat(img[:, :, None], 3, axis=2)
        out.append((name, np.ascontiguousarray(img[:, :, :3]).astype(np.uint8)))
    return out


def folder_photos(folder, max_side):
    out = []
    for name in sorted(os.listdir(folder)):
        try:
            img = Image.open(os.path.join(folder, name)).convert("RGB")
        except Exception:
            continue
        if max_side and max(img.size) > max_side:
            img.thumbnail((max_side, max_side), Image.LANCZOS)
        out.append((os.path.splitext(name)[0], np.asarray(img, dtype=np.uint8)))
    return out


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * math.log10(255.0**2 / mse)


def _ssim_maps(x, y, sigma=1.5):
    """Per-pixel luminance and contrast-structure terms of SSIM (one channel, float64)."""
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    f = lambda z: gaussian_filter(z, sigma, truncate=3.5)
    mx, my = f(x), f(y)
    sxx, syy, sxy = f(x * x) - mx * mx, f(y * y) - my * my, f(x * y) - mx * my
    lum = (2 * mx * my + c1) / (mx * mx + my * my + c1)
    cs = (2 * sxy + c2) / (sxx + syy + c2)
    return lum, cs


def ssim(a, b):
    vals = []
    for c in range(3):
        lum, cs = _ssim_maps(a[:, :, c].astype(np.float64), b[:, :, c].astype(np.float64))
        vals.append(np.mean(lum * cs))
    return float(np.mean(vals))


MS_WEIGHTS = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333]


def ms_ssim(a, b):
    vals = []
    for c in range(3):
        x, y = a[:, :, c].astype(np.float64), b[:, :, c].astype(np.float64)
        result = 1.0
        for i, w in enumerate(MS_WEIGHTS):
            lum, cs = _ssim_maps(x, y)
            if i == len(MS_WEIGHTS) - 1:
                result *= max(np.mean(lum * cs), 0.0) ** w
            else:
                result *= max(np.mean(cs), 0.0) ** w
                h, wd = (x.shape[0] // 2) * 2, (x.shape[1] // 2) * 2
                x = x[:h, :wd].reshape(h // 2, 2, wd // 2, 2).mean(axis=(1, 3))
                y = y[:h, :wd].reshape(h // 2, 2, wd // 2, 2).mean(axis=(1, 3))
        vals.append(result)
    return float(np.mean(vals))


def metrics(ref, img):
    return {"psnr_db": psnr(ref, img), "ssim": ssim(ref, img), "ms_ssim": ms_ssim(ref, img)}


# Each codec: an encoder of (image, quality) and the quality range searched; larger quality
# means more bytes. JPEG 2000 is driven by its compression ratio instead (see below).
def _pil_encode(img, fmt, **kw):
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format=fmt, **kw)
    return buf.getvalue()


def codecs():
    out = {"jpeg": (lambda img, q: _pil_encode(img, "JPEG", quality=q, optimize=True, subsampling=2), 1, 95)}
    if features.check("jpg_2000"):
        # Quality q in 1..=1000 maps to a compression ratio of 2000/q (2 to 2000).
        out["jpeg2000"] = (
            lambda img, q: _pil_encode(img, "JPEG2000", quality_mode="rates", quality_layers=[2000.0 / q]),
            1,
            1000,
        )
    if features.check("webp"):
        out["webp"] = (lambda img, q: _pil_encode(img, "WEBP", quality=q, method=6), 0, 100)
    if features.check("avif"):
        out["avif"] = (lambda img, q: _pil_encode(img, "AVIF", quality=q, speed=8), 0, 100)
    return out


def within(encode, lo, hi, img, budget):
    """The file of the largest quality in lo..=hi of at most `budget` bytes, or None."""
    if len(encode(img, lo)) > budget:
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(encode(img, mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return encode(img, lo), lo


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    lines = [l for l in out.stdout.splitlines() if l.strip().startswith("{")]
    return json.loads(lines[-1])


def bd_rate(rates_a, psnr_a, rates_b, psnr_b):
    """Bjontegaard delta rate of B against A in percent (negative: B needs fewer bits)."""
    pa = [(p, r) for p, r in zip(psnr_a, rates_a) if math.isfinite(p) and r > 0]
    pb = [(p, r) for p, r in zip(psnr_b, rates_b) if math.isfinite(p) and r > 0]
    if len(pa) < 4 or len(pb) < 4:
        return None
    fa = np.polyfit([p for p, _ in pa], [math.log(r) for _, r in pa], 3)
    fb = np.polyfit([p for p, _ in pb], [math.log(r) for _, r in pb], 3)
    lo = max(min(p for p, _ in pa), min(p for p, _ in pb))
    hi = min(max(p for p, _ in pa), max(p for p, _ in pb))
    if hi <= lo:
        return None
    ia, ib = np.polyint(fa), np.polyint(fb)
    avg = ((np.polyval(ib, hi) - np.polyval(ib, lo)) - (np.polyval(ia, hi) - np.polyval(ia, lo))) / (hi - lo)
    return float((math.exp(avg) - 1) * 100)


def plot(rows, names, path):
    """PSNR against bpp, mean over photos per codec and target, as a PNG."""
    series = {}
    for codec in names:
        pts = {}
        for r in rows:
            if r["codec"] == codec and r.get("psnr_db") is not None:
                pts.setdefault(r["target_bpp"], []).append((r["bpp"], r["psnr_db"]))
        series[codec] = sorted((np.mean([b for b, _ in v]), np.mean([p for _, p in v])) for v in pts.values())
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 5))
        for codec, pts in series.items():
            if pts:
                ax.plot([b for b, _ in pts], [p for _, p in pts], marker="o", label=codec)
        ax.set_xscale("log")
        ax.set_xlabel("bits per pixel")
        ax.set_ylabel("PSNR (dB, mean over photos)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        return
    except ImportError:
        pass
    # Without matplotlib: the same curves drawn with Pillow.
    from PIL import ImageDraw

    W, H, m = 800, 560, 60
    im = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(im)
    allp = [pt for pts in series.values() for pt in pts]
    if not allp:
        im.save(path)
        return
    bx = [math.log(b) for b, _ in allp]
    py = [p for _, p in allp]
    x0, x1, y0, y1 = min(bx), max(bx) + 1e-9, min(py) - 1, max(py) + 1
    X = lambda b: m + (math.log(b) - x0) / (x1 - x0) * (W - 2 * m)
    Y = lambda p: H - m - (p - y0) / (y1 - y0) * (H - 2 * m)
    d.rectangle([m, m, W - m, H - m], outline="black")
    colours = ["red", "blue", "green", "orange", "purple", "brown"]
    for i, (codec, pts) in enumerate(series.items()):
        c = colours[i % len(colours)]
        xy = [(X(b), Y(p)) for b, p in pts]
        if len(xy) > 1:
            d.line(xy, fill=c, width=2)
        for x, y in xy:
            d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=c)
        d.text((m + 10, m + 10 + 14 * i), codec, fill=c)
    d.text((W // 2 - 60, H - m + 20), "bits per pixel (log)", fill="black")
    d.text((5, m - 20), f"PSNR dB {y0:.1f}..{y1:.1f}", fill="black")
    im.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=".gpu/bin/smoe", help="the smoe binary")
    ap.add_argument("--out", default=os.environ.get("OUT", "smoe-rd"), help="the folder for the results")
    ap.add_argument(
        "--bpp", default="0.25,0.5,1,2,0.1", help="target rates, comma separated, in the order run (all photos at each)"
    )
    ap.add_argument("--photos", default=",".join(SKIMAGE_PHOTOS), help="scikit-image photo names")
    ap.add_argument("--photos-dir", help="use the images of this folder instead of scikit-image's")
    ap.add_argument("--max-side", type=int, default=0, help="--photos-dir: downscale to this longest side")
    ap.add_argument("--time-limit", type=float, default=330.0, help="seconds after which no new fit starts")
    ap.add_argument("--fit-args", default="", help="extra arguments of smoe fit (e.g. '--budget-fits 2')")
    ap.add_argument("--backend", default="gpu", help="smoe's --backend for fit and render")
    args = ap.parse_args()
    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    targets = [float(b) for b in args.bpp.split(",")]
    photos = folder_photos(args.photos_dir, args.max_side) if args.photos_dir else skimage_photos(args.photos.split(","))
    backend = ["--backend", args.backend]
    fit_extra = args.fit_args.split() + backend
    others = codecs()
    rows, skipped = [], []
    work = tempfile.mkdtemp(prefix="smoe-rd-")
    for name, ref in photos:
        Image.fromarray(ref).save(os.path.join(work, f"{name}.png"))
    for bpp in targets:
        for name, ref in photos:
            h, w = ref.shape[:2]
            png = os.path.join(work, f"{name}.png")
            if time.time() - start > args.time_limit:
                skipped.append(f"{name}@{bpp}")
                continue
            smc = os.path.join(work, f"{name}-{bpp}.smc")
            out_png = os.path.join(work, f"{name}-{bpp}.png")
            try:
                fit = run_json([args.bin, "fit", png, "--bpp", str(bpp), "--out", smc, "--json"] + fit_extra)
                t = time.time()
                rec = run_json([args.bin, "render", smc, "--out", out_png, "--json"] + backend)
                render_wall_ms = (time.time() - t) * 1e3
            except RuntimeError as e:
                print(f"{name} @ {bpp} bpp: {e}", file=sys.stderr)
                rows.append({"photo": name, "codec": "smc", "target_bpp": bpp, "error": str(e)[-500:]})
                continue
            size = os.path.getsize(smc)
            dec = np.asarray(Image.open(out_png).convert("RGB"))
            row = {
                "photo": name,
                "width": w,
                "height": h,
                "codec": "smc",
                "target_bpp": bpp,
                "bytes": size,
                "bpp": size * 8 / (w * h),
                "kernels": fit.get("kernels"),
                "fit_psnr_db": fit.get("psnr_db"),
                "fit_ms": fit.get("wall_ms"),
                "render_ms": rec.get("render_ms"),
                "decode_render_ms": rec.get("wall_ms"),
                "decode_render_process_ms": render_wall_ms,
                "trials": fit.get("trials"),
            }
            row.update(metrics(ref, dec))
            rows.append(row)
            print(f"{name} {w}x{h} @ {bpp}: smc {size} B {row['psnr_db']:.2f} dB", flush=True)
            for codec, (encode, lo, hi) in others.items():
                t = time.time()
                found = within(encode, lo, hi, ref, size)
                r = {"photo": name, "codec": codec, "target_bpp": bpp}
                if found is None:
                    r.update({"bytes": None, "bpp": None, "psnr_db": None, "note": "cannot reach the bytes"})
                else:
                    data, q = found
                    img = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
                    r.update({"bytes": len(data), "bpp": len(data) * 8 / (w * h), "quality": q})
                    r.update(metrics(ref, img))
                r["search_ms"] = (time.time() - t) * 1e3
                rows.append(r)
    names = ["smc"] + list(others)
    # BD-rate against JPEG per photo, and the mean.
    bd = {}
    for codec in [c for c in names if c != "jpeg"] if "jpeg" in names else []:
        per = []
        for name, _ in photos:
            pick = lambda c: [r for r in rows if r["photo"] == name and r["codec"] == c and r.get("psnr_db") is not None]
            a, b = pick("jpeg"), pick(codec)
            v = bd_rate([r["bpp"] for r in a], [r["psnr_db"] for r in a], [r["bpp"] for r in b], [r["psnr_db"] for r in b])
            if v is not None:
                per.append(v)
        bd[codec] = {"mean_percent": float(np.mean(per)) if per else None, "photos": len(per)}
    # Per target: .smc against JPEG on the photos where both reached the bytes (paired), and
    # the photos where JPEG could not get that small at all.
    paired = {}
    for bpp in targets:
        pairs, unreachable = [], 0
        for name, _ in photos:
            get = lambda c: next((r for r in rows if r["photo"] == name and r["codec"] == c and r["target_bpp"] == bpp), None)
            a, b = get("smc"), get("jpeg")
            if a is None or a.get("psnr_db") is None or b is None:
                continue
            if b.get("psnr_db") is None:
                unreachable += 1
            else:
                pairs.append((a["psnr_db"], b["psnr_db"]))
        paired[str(bpp)] = {
            "photos": len(pairs),
            "smc_psnr_db": float(np.mean([p for p, _ in pairs])) if pairs else None,
            "jpeg_psnr_db": float(np.mean([q for _, q in pairs])) if pairs else None,
            "smc_minus_jpeg_db": float(np.mean([p - q for p, q in pairs])) if pairs else None,
            "jpeg_cannot_reach": unreachable,
        }
    rows.sort(key=lambda r: (r["photo"], r["target_bpp"]))
    summary = {
        "rows": rows,
        "bd_rate_vs_jpeg": bd,
        "smc_vs_jpeg": paired,
        "skipped": skipped,
        "wall_s": time.time() - start,
    }
    with open(os.path.join(args.out, "smoe_rd.json"), "w") as f:
        json.dump(summary, f, indent=1)
    lines = ["| photo | target bpp | codec | bytes | bpp | PSNR dB | SSIM | MS-SSIM | fit ms | decode+render ms |", "|" + "---|" * 10]
    for r in rows:
        fmt = lambda k, spec: format(r[k], spec) if r.get(k) is not None else "-"
        lines.append(
            f"| {r['photo']} | {r['target_bpp']} | {r['codec']} | {fmt('bytes', 'd')} | {fmt('bpp', '.3f')} | "
            f"{fmt('psnr_db', '.2f')} | {fmt('ssim', '.4f')} | {fmt('ms_ssim', '.4f')} | {fmt('fit_ms', '.0f')} | "
            f"{fmt('decode_render_ms', '.0f')} |"
        )
    lines += ["", "Mean over photos, per target (only photos where the codec reached the bytes):", ""]
    lines += ["| target bpp | codec | photos | bpp | PSNR dB | SSIM | MS-SSIM |", "|---|---|---|---|---|---|---|"]
    for bpp in targets:
        for codec in names:
            sel = [r for r in rows if r["codec"] == codec and r["target_bpp"] == bpp and r.get("psnr_db") is not None]
            if sel:
                m = lambda k: np.mean([r[k] for r in sel])
                lines.append(
                    f"| {bpp} | {codec} | {len(sel)} | {m('bpp'):.3f} | {m('psnr_db'):.2f} | {m('ssim'):.4f} | {m('ms_ssim'):.4f} |"
                )
    lines += ["", ".smc against JPEG at the same bytes (mean over the photos where both reached them):", ""]
    for bpp, v in paired.items():
        if v["photos"]:
            lines.append(
                f"- {bpp} bpp: .smc {v['smc_psnr_db']:.2f} dB, JPEG {v['jpeg_psnr_db']:.2f} dB "
                f"({v['smc_minus_jpeg_db']:+.2f} dB over {v['photos']} photos); JPEG cannot reach the bytes on {v['jpeg_cannot_reach']}"
            )
        else:
            lines.append(f"- {bpp} bpp: no pair; JPEG cannot reach the bytes on {v['jpeg_cannot_reach']} photos")
    lines += ["", "BD-rate against JPEG (PSNR; negative = fewer bits for the same PSNR):", ""]
    for codec, v in bd.items():
        mean = "n/a" if v["mean_percent"] is None else f"{v['mean_percent']:+.1f}%"
        lines.append(f"- {codec}: {mean} over {v['photos']} photos")
    if skipped:
        lines += ["", f"Skipped (time limit): {', '.join(skipped)}"]
    with open(os.path.join(args.out, "smoe_rd.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(rows, names, os.path.join(args.out, "smoe_rd.png"))
    print("\n".join(lines[lines.index("") + 1 :][-(len(bd) + len(paired) + 8) :]))
    print(f"wrote {args.out}/smoe_rd.json, smoe_rd.md, smoe_rd.png in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
