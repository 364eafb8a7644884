#!/usr/bin/env python3
"""A model of the compositing library's frame time per strategy, fitted to the per-phase
times tools/gpu-composite-lib.sh measures at a few rank counts (several ranks sharing one
GPU machine), checked against rank counts it was not fitted on, and used to predict 64 to
1024 ranks at 4K and 8K over a network given by its bandwidth and latency.

    python3 tools/composite_model.py RUN.jsonl [--markdown]

The model, per rank and frame of P pixels on N ranks (rounds and messages as
apps/composite/src/schedule.rs builds them):
  encode    = E(P)                                  each rank encodes its whole frame
  exchange  = messages * (o + L) + bytes / B        o: software cost per message
  composite = c * P * (1 - 1/N)                     pixels merged over the rounds
  gather    = g * P + L + bytes_final / B_root      the root writes the image
bytes = s * P * (1 - 1/N) (Active Pixel bytes a pixel, s, measured), bytes_final alike.
Fitted here: E (the median at the fewest ranks), o and 1/B of the machine's shared-memory
MPI (least squares over every exchange), c per strategy and g. For the network the fitted
o is kept and L, B are the network's; the GPU work (E, c, g) is the machine's.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict

RADIX_MAX = 8
STRATEGY = {1: "bswap", 2: "radixk", 3: "direct", 0: "auto"}
# Per rank: bandwidth (bytes/s) and one message's latency (s).
NETWORKS = {
    "NVLink 4 (H100/H200, 450 GB/s a direction, 2 us)": (450e9, 2e-6),
    "InfiniBand NDR (400 Gb/s, 1.5 us)": (50e9, 1.5e-6),
}
PREDICT_RANKS = [64, 128, 256, 512, 1024]


def radix_factors(n: int) -> list:
    primes, m, d = [], n, 2
    while m > 1:
        while m % d == 0:
            primes.append(d)
            m //= d
        d += 1
    factors: list = []
    for p in primes:
        if factors and factors[-1] * p <= RADIX_MAX:
            factors[-1] *= p
        else:
            factors.append(p)
    return factors


def messages(strategy: str, n: int) -> int:
    """Messages a rank sends over the rounds (the most any rank sends)."""
    if n <= 1:
        return 0
    if strategy == "direct":
        return n - 1
    if strategy == "radixk":
        return sum(k - 1 for k in radix_factors(n))
    p = 1 << (n.bit_length() - 1)
    return int(math.log2(p)) + (1 if n > p else 0)


def load(path: str) -> list:
    rows = []
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("tool") != "tessera":
            continue
        r["strategy_name"] = STRATEGY.get(r.get("strategy", 0), "auto")
        r["pixels"] = r["width"] * r["height"]
        rows.append(r)
    return rows


def medians(rows: list) -> dict:
    """One point per (size, ranks, strategy): the median of its frames after the first."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["width"], r["height"], r["ranks"], r["strategy_name"])].append(r)
    out = {}
    for key, frames in groups.items():
        frames = frames[1:] or frames
        out[key] = {k: statistics.median(f[k] for f in frames) for k in
                    ["wall_ms", "total_ms", "encode_ms", "exchange_ms", "composite_ms", "gather_ms", "bytes_sent"]}
        out[key]["pixels"] = frames[0]["pixels"]
    return out


def lstsq2(xs: list, ys: list) -> tuple:
    """Least squares y = a x0 + b x1 (no intercept), a and b kept >= 0."""
    s00 = sum(x[0] * x[0] for x in xs)
    s01 = sum(x[0] * x[1] for x in xs)
    s11 = sum(x[1] * x[1] for x in xs)
    t0 = sum(x[0] * y for x, y in zip(xs, ys))
    t1 = sum(x[1] * y for x, y in zip(xs, ys))
    det = s00 * s11 - s01 * s01
    if det <= 0:
        return 0.0, (t1 / s11 if s11 else 0.0)
    a, b = (t0 * s11 - t1 * s01) / det, (s00 * t1 - s01 * t0) / det
    if a < 0:
        return 0.0, max(t1 / s11, 0.0)
    if b < 0:
        return max(t0 / s00, 0.0), 0.0
    return a, b


class Model:
    def __init__(self, points: dict, fit_ranks: set):
        pts = {k: v for k, v in points.items() if k[2] in fit_ranks and k[2] > 1}
        if not pts:
            raise SystemExit("composite_model: no measurements at the fitting rank counts")
        # Encode: the fewest ranks' median per size (least GPU sharing).
        self.encode = {}
        for (w, h, n, st), v in sorted(pts.items(), key=lambda kv: kv[0][2]):
            self.encode.setdefault((w, h), v["encode_ms"])
        xs, ys = [], []
        for (w, h, n, st), v in pts.items():
            xs.append((messages(st, n), v["bytes_sent"]))
            ys.append(v["exchange_ms"] * 1e-3)
        self.per_message, self.per_byte = lstsq2(xs, ys)
        self.merge = {}
        for st in {k[3] for k in pts}:
            num = sum(v["composite_ms"] * 1e-3 * v["pixels"] * (1 - 1 / k[2]) for k, v in pts.items() if k[3] == st)
            den = sum((v["pixels"] * (1 - 1 / k[2])) ** 2 for k, v in pts.items() if k[3] == st)
            self.merge[st] = num / den if den else 0.0
        self.gather = statistics.median(v["gather_ms"] * 1e-3 / v["pixels"] for v in pts.values())
        # Active Pixel bytes a rank sends per pixel of (1 - 1/N) of the image.
        self.bytes_per_pixel = statistics.median(
            v["bytes_sent"] / (v["pixels"] * (1 - 1 / k[2])) for k, v in pts.items())

    def frame(self, size: tuple, n: int, st: str, bandwidth=None, latency=0.0) -> dict:
        p = size[0] * size[1]
        share = p * (1 - 1 / n)
        sent = self.bytes_per_pixel * share
        per_byte = self.per_byte if bandwidth is None else 1 / bandwidth
        encode = self.encode.get(size, min(self.encode.values()) * p / min(w * h for w, h in self.encode)) * 1e-3
        exchange = messages(st, n) * (self.per_message + latency) + sent * per_byte
        composite = self.merge.get(st, max(self.merge.values())) * share
        gather = self.gather * p + latency + (sent / n) * per_byte
        total = encode + exchange + composite + gather
        return {"total_ms": total * 1e3, "encode_ms": encode * 1e3, "exchange_ms": exchange * 1e3,
                "composite_ms": composite * 1e3, "gather_ms": gather * 1e3}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--fit-ranks", default="2,3,4", help="rank counts the model is fitted on")
    args = ap.parse_args()
    points = medians(load(args.run))
    if not points:
        print("composite_model: no tessera lines in", args.run, file=sys.stderr)
        return 1
    fit = {int(r) for r in args.fit_ranks.split(",")}
    model = Model(points, fit)
    print(f"fitted on {sorted(fit)} ranks: per message {model.per_message * 1e6:.1f} us, "
          f"shared-memory bandwidth {1 / model.per_byte / 1e9 if model.per_byte else float('inf'):.1f} GB/s, "
          f"merge {', '.join(f'{k} {v * 1e9:.2f} ns/px' for k, v in sorted(model.merge.items()))}, "
          f"gather {model.gather * 1e9:.2f} ns/px, {model.bytes_per_pixel:.2f} bytes sent a pixel")
    print()
    print("| size | ranks | strategy | measured total (ms) | model (ms) | error | fitted on |")
    print("|---|---|---|---|---|---|---|")
    for (w, h, n, st), v in sorted(points.items()):
        if n < 2:
            continue
        m = model.frame((w, h), n, st)["total_ms"]
        err = (m - v["total_ms"]) / v["total_ms"]
        print(f"| {w}x{h} | {n} | {st} | {v['total_ms']:.2f} | {m:.2f} | {err:+.0%} | {'yes' if n in fit else 'no'} |")
    sizes = sorted({(k[0], k[1]) for k in points})
    strategies = sorted({k[3] for k in points})
    for net, (bw, lat) in NETWORKS.items():
        print()
        print(f"Predicted frame time (ms), {net}:")
        print()
        print("| size | strategy | " + " | ".join(f"{n} ranks" for n in PREDICT_RANKS) + " |")
        print("|---|---|" + "---|" * len(PREDICT_RANKS))
        for size in sizes:
            for st in strategies:
                cells = [model.frame(size, n, st, bw, lat)["total_ms"] for n in PREDICT_RANKS]
                print(f"| {size[0]}x{size[1]} | {st} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
