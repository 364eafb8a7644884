"""The Python package's benchmark on the GPU machine (run by tools/bench-python.sh there):
tessera.mad_batch on N pairs of 512x512 against `mad batch` on the same pairs as PNG files
(pairs/s, scores compared), and pyiqa's MAD on the same GPU when its wheel is carried
(time per pair, and how far its scores are from ours, the authors' definition). Prints one
JSON object per measurement and writes a Markdown table for BENCHMARKS.md."""

import argparse
import importlib
import json
import os
import struct
import subprocess
import sys
import time
import types
import zipfile
import zlib
from multiprocessing import Pool
from pathlib import Path

import numpy as np


def png_bytes(arr):
    h, w, c = arr.shape
    raw = b"".join(b"\x00" + arr[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, {1: 0, 3: 2}[c], 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


def make_pair(args):
    """Pair i: one of 50 smooth scenes with edges, and a distortion of it (noise, blur,
    quantisation or contrast, by i mod 4, at a strength by i), both uint8 512x512x3."""
    i, size, work = args
    rng = np.random.default_rng(1000 + i % 50)
    y, x = np.mgrid[0:size, 0:size] / size
    f = rng.uniform(2, 12, 6)
    ref = np.stack([0.5 + 0.35 * np.sin(f[0] * x + f[1] * y), 0.5 + 0.3 * np.cos(f[2] * y - f[3] * x), 0.5 + 0.3 * np.sin(f[4] * x * y * 4)], -1)
    cx, cy, r = rng.uniform(0.2, 0.8, 3)
    ref[(x - cx) ** 2 + (y - cy) ** 2 < (r / 3) ** 2] = rng.uniform(0, 1, 3)
    ref = np.clip(ref + rng.normal(0, 0.01, ref.shape), 0, 1)
    drng = np.random.default_rng(i)
    s = 1 + (i // 4) % 5
    kind = i % 4
    if kind == 0:
        dist = ref + drng.normal(0, 0.01 * s, ref.shape)
    elif kind == 1:
        k = 2 * s + 1
        dist = ref.copy()
        for axis in (0, 1):
            dist = sum(np.roll(dist, o, axis=axis) for o in range(-(k // 2), k // 2 + 1)) / k
    elif kind == 2:
        levels = 64 // s
        dist = np.round(ref * levels) / levels
    else:
        dist = 0.5 + (ref - 0.5) * (1 - 0.12 * s)
    to8 = lambda a: (np.clip(a, 0, 1) * 255).round().astype(np.uint8)
    ref8, dist8 = to8(ref), to8(dist)
    (work / f"r{i:04}.png").write_bytes(png_bytes(ref8))
    (work / f"d{i:04}.png").write_bytes(png_bytes(dist8))
    return ref8, dist8


def load_pyiqa_mad(wheel, into):
    """pyiqa's MAD class from its wheel without importing the package's __init__ (which
    imports every metric and their dependencies: transformers, timm, ...): the packages on
    the path to mad_arch are stand-ins holding only their folders."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(into)
    root = Path(into) / "pyiqa"
    for name in ("pyiqa", "pyiqa.archs", "pyiqa.utils"):
        m = types.ModuleType(name)
        m.__path__ = [str(root / Path(*name.split(".")[1:]))]
        sys.modules[name] = m
    sys.path.insert(0, str(into))
    return importlib.import_module("pyiqa.archs.mad_arch").MAD


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=1000)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--work", default="/tmp/tessera-bench-python")
    p.add_argument("--mad", default=".gpu/bin/mad")
    p.add_argument("--pyiqa-wheel", default="")
    p.add_argument("--pyiqa-pairs", type=int, default=100)
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    a = p.parse_args()
    import tessera

    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    records = []

    def emit(rec):
        records.append(rec)
        print(json.dumps(rec), flush=True)

    t0 = time.perf_counter()
    with Pool(min(16, os.cpu_count() or 1)) as pool:
        pairs = pool.map(make_pair, [(i, a.size, work) for i in range(a.pairs)])
    (work / "pairs.csv").write_text("ref,dist\n" + "".join(f"r{i:04}.png,d{i:04}.png\n" for i in range(a.pairs)))
    refs = np.stack([r for r, _ in pairs])
    dists = np.stack([d for _, d in pairs])
    emit({"what": "inputs", "pairs": a.pairs, "size": a.size, "make_s": time.perf_counter() - t0,
          "devices": [d.name for d in tessera.devices()]})

    # `mad batch` on the PNG files: the second of two runs (the first warms the driver's caches).
    cli_scores = None
    for run in range(2):
        t = time.perf_counter()
        res = subprocess.run([a.mad, "batch", "--pairs", str(work / "pairs.csv"), "--json"], capture_output=True, text=True)
        cli_s = time.perf_counter() - t
        if res.returncode != 0:
            emit({"what": "mad batch", "error": res.stderr[-2000:]})
            break
        lines = [json.loads(l) for l in res.stdout.splitlines() if l.startswith("{")]
        by_name = {(l["ref"], l["dist"]): l["mad"] for l in lines if "mad" in l}
        cli_scores = np.array([by_name[(f"r{i:04}.png", f"d{i:04}.png")] for i in range(a.pairs)])
    if cli_scores is not None:
        emit({"what": "mad batch (CLI, PNG files)", "pairs": a.pairs, "wall_s": cli_s, "pairs_per_s": a.pairs / cli_s})

    # tessera.mad_batch on the same pairs as arrays, after a warm-up call on a few of them.
    tessera.mad_batch(list(refs[:16]), list(dists[:16]))
    best = None
    for run in range(2):
        t = time.perf_counter()
        ours = tessera.mad_batch(list(refs), list(dists))
        s = time.perf_counter() - t
        best = s if best is None else min(best, s)
    rec = {"what": "tessera.mad_batch (numpy uint8 HxWx3)", "pairs": a.pairs, "wall_s": best, "pairs_per_s": a.pairs / best}
    if cli_scores is not None:
        rec["max_rel_diff_vs_cli"] = float(np.max(np.abs(ours - cli_scores) / np.maximum(np.abs(cli_scores), 1e-12)))
        rec["ratio_vs_cli"] = (a.pairs / best) / (a.pairs / cli_s)
    emit(rec)
    nchw = refs.transpose(0, 3, 1, 2)
    t = time.perf_counter()
    ours_nchw = tessera.mad_batch(nchw, dists.transpose(0, 3, 1, 2))
    s = time.perf_counter() - t
    emit({"what": "tessera.mad_batch (NxCxHxW strided view)", "pairs": a.pairs, "wall_s": s, "pairs_per_s": a.pairs / s,
          "equal_to_hwc": bool(np.array_equal(ours_nchw, ours))})

    if a.pyiqa_wheel and Path(a.pyiqa_wheel).exists():
        try:
            import torch

            MAD = load_pyiqa_mad(a.pyiqa_wheel, work / "pyiqa")
            net = MAD().cuda().eval()
            n = min(a.pyiqa_pairs, a.pairs)
            to_t = lambda x: torch.from_numpy(x).permute(2, 0, 1)[None].float().div(255).cuda()
            with torch.no_grad():
                net(to_t(dists[0]), to_t(refs[0]))
                torch.cuda.synchronize()
                scores = []
                t = time.perf_counter()
                for i in range(n):
                    scores.append(float(net(to_t(dists[i]), to_t(refs[i])).item()))
                torch.cuda.synchronize()
                s = time.perf_counter() - t
            scores = np.array(scores)
            rel = np.abs(scores - ours[:n]) / np.maximum(np.abs(ours[:n]), 1e-12)
            from scipy.stats import spearmanr

            emit({"what": "pyiqa MAD (torch, CUDA, one pair per call)", "pairs": n, "ms_per_pair": 1e3 * s / n,
                  "pairs_per_s": n / s, "tessera_ms_per_pair": 1e3 * best / a.pairs,
                  "rel_diff_vs_tessera_median": float(np.median(rel)), "rel_diff_vs_tessera_max": float(rel.max()),
                  "spearman_vs_tessera": float(spearmanr(scores, ours[:n]).correlation), "torch": torch.__version__,
                  "gpu": torch.cuda.get_device_name(0)})
        except Exception as e:  # the rest of the results still come back
            emit({"what": "pyiqa MAD", "error": repr(e)})

    with open(out / "bench-python.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    rows = ["| what | pairs | pairs/s | ms/pair | notes |", "|---|---|---|---|---|"]
    for r in records[1:]:
        if "error" in r:
            rows.append(f"| {r['what']} | | | | error: {r['error'][:200]} |")
            continue
        pps = r["pairs_per_s"]
        notes = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()
                          if k not in ("what", "pairs", "pairs_per_s", "wall_s", "ms_per_pair"))
        rows.append(f"| {r['what']} | {r['pairs']} | {pps:.1f} | {1e3 / pps:.2f} | {notes} |")
    table = f"Device: {', '.join(records[0]['devices'])}; {a.pairs} pairs of {a.size}x{a.size} RGB.\n\n" + "\n".join(rows) + "\n"
    (out / "bench-python.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
