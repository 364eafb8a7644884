#!/usr/bin/env python3
"""The photograph table of BENCHMARKS.md (SMoE): for each photo and kernel count, fit with
`smoe fit`, render the saved model with `smoe render`, and score the render against the photo
(PSNR and SSIM on 8-bit RGB), beside JPEG at the model's own byte count. One JSON line per
(photo, K) on stdout.

Usage: smoe-table.py SMOE_BIN WORKDIR K1,K2,... PHOTO...
With RESIZE=WxH in the environment, each photo is first cropped to that aspect ratio
(centred) and resized (Lanczos) to WxH, as the Kodak-sized rows of the table are made.

SSIM is Wang et al. (2004) as most image-representation papers report it: an 11x11 Gaussian
window of sigma 1.5, K1 = 0.01, K2 = 0.03, L = 255, per channel, averaged over channels.
JPEG at equal bytes: the highest PIL quality (4:2:0 subsampling, optimised tables) whose file
is no larger than the model file; when even quality 100 is smaller, quality 100.
"""
import io
import json
import os
import subprocess
import sys
import time

import numpy as np
from PIL import Image
from scipy.ndimage import gaussian_filter


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def ssim(a, b):
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    blur = lambda x: gaussian_filter(x, 1.5, truncate=5 / 1.5)  # noqa: E731 (an 11x11 window)
    scores = []
    for ch in range(a.shape[2]):
        x, y = a[..., ch].astype(np.float64), b[..., ch].astype(np.float64)
        mx, my = blur(x), blur(y)
        sxx, syy, sxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
        num = (2 * mx * my + c1) * (2 * sxy + c2)
        den = (mx * mx + my * my + c1) * (sxx + syy + c2)
        scores.append(np.mean(num / den))
    return float(np.mean(scores))


def jpeg_at(photo, budget):
    best = None
    lo, hi = 1, 100
    while lo <= hi:
        q = (lo + hi) // 2
        buf = io.BytesIO()
        Image.fromarray(photo).save(buf, "JPEG", quality=q, optimize=True)
        if buf.tell() <= budget:
            best, lo = (q, buf.getvalue()), q + 1
        else:
            hi = q - 1
    if best is None:  # even quality 1 is larger than the model: report quality 1
        buf = io.BytesIO()
        Image.fromarray(photo).save(buf, "JPEG", quality=1, optimize=True)
        best = (1, buf.getvalue())
    q, data = best
    decoded = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    return {"quality": q, "bytes": len(data), "psnr_db": psnr(photo, decoded), "ssim": ssim(photo, decoded)}


def fitted(path, size, work):
    """The photo cropped (centred) to the aspect of `size` ("WxH") and resized to it."""
    w, h = (int(v) for v in size.split("x"))
    im = Image.open(path).convert("RGB")
    iw, ih = im.size
    cw, ch = min(iw, ih * w // h), min(ih, iw * h // w)
    left, top = (iw - cw) // 2, (ih - ch) // 2
    out = os.path.join(work, f"{os.path.splitext(os.path.basename(path))[0]}-{w}x{h}.png")
    im.crop((left, top, left + cw, top + ch)).resize((w, h), Image.LANCZOS).save(out)
    return out


def run(cmd):
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = (time.perf_counter() - t) * 1e3
    if out.returncode != 0:
        return None, wall, out.stderr.strip()[-400:]
    return json.loads(out.stdout.strip().splitlines()[-1]), wall, None


def main():
    smoe, work, ks, photos = sys.argv[1], sys.argv[2], [int(k) for k in sys.argv[3].split(",")], sys.argv[4:]
    os.makedirs(work, exist_ok=True)
    resize = os.environ.get("RESIZE")
    for path in photos:
        name = os.path.splitext(os.path.basename(path))[0]
        if resize:
            path = fitted(path, resize, work)
        photo = np.asarray(Image.open(path).convert("RGB"))
        h, w = photo.shape[:2]
        for k in ks:
            row = {"photo": name, "width": w, "height": h, "kernels": k}
            model, render = f"{work}/{name}-{k}.smoe", f"{work}/{name}-{k}.png"
            for f in (model, render):
                if os.path.exists(f):
                    os.remove(f)
            fit, fit_wall, err = run([smoe, "fit", path, "--kernels", str(k), "--out", model, "--json"])
            if fit is None:
                row["error"] = f"fit: {err}"
                print(json.dumps(row), flush=True)
                continue
            shown, render_wall, err = run([smoe, "render", model, "--out", render, "--json"])
            if shown is None:
                row["error"] = f"render: {err}"
                print(json.dumps(row), flush=True)
                continue
            ours = np.asarray(Image.open(render).convert("RGB"))
            size = os.path.getsize(model)
            row.update(
                fit_wall_ms=fit_wall,
                fit=fit,
                render_wall_ms=render_wall,
                render=shown,
                model_bytes=size,
                bpp=size * 8 / (w * h),
                psnr_db=psnr(photo, ours),
                ssim=ssim(photo, ours),
                jpeg=jpeg_at(photo, size),
            )
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
