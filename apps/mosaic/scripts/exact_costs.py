"""The exact solvers on the same cost matrices in one run: ours (GPU auction, CPU), scipy's
linear_sum_assignment and HyLAC (Kawtikwar and Nagi, JPDC 2024: its classical and hybrid
GPU Hungarian solvers, built here with nvcc from their public source).

`mosaic bench --costs DIR` writes the matrices (photo, uniform, integer: whole numbers below
2^24, so float32 and HyLAC's uint32 costs hold them exactly) and times our solvers; this
script then solves each file with scipy and HyLAC and prints one JSON line per matrix and
solver, then a table. HyLAC solves square problems: an m x n matrix (m < n) gets n - m rows
of zeros, which changes no optimal assignment of the real rows nor its cost. HyLAC prints
its objective in 32 bits: it is checked against ours modulo 2^32.

Usage (on the GPU machine, from the repository root):
  python3 apps/mosaic/scripts/exact_costs.py --mosaic .gpu/bin/mosaic --hylac .gpu/hylac \\
      [--size 2048x8192 ...] [--skip-cpu] [--cpu-max-entries N] [--limit S] [--out DIR]
--hylac names a folder holding HyLAC's codebase/Hung and codebase/Hung-CT (tools/hylac-stage.sh
puts them in .gpu/hylac); without it, or without nvcc, HyLAC is left out and says why.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

# A driver of our own: reads an n x n uint32 matrix (raw, little-endian) and times one of
# HyLAC's solvers on it, object construction (allocations, the upload) and solve apart.
DRIVER = r"""
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda.h>
#include <cub/cub.cuh>
// CCCL 3 (CUDA 13) removed cub::Min, which HyLAC's reductions name; cuda::minimum is its
// replacement. CCCL 3 also needs C++17 (the build below asks for it).
#if defined(CCCL_MAJOR_VERSION) && CCCL_MAJOR_VERSION >= 3
#include <cuda/functional>
namespace cub { using Min = ::cuda::minimum<>; }
#endif
#include "../include/defs.cuh"
#include "../include/config.h"
#include "../include/cost_generator.h"
#include HEADER

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: driver FILE N\n"); return 2; }
  size_t n = strtoull(argv[2], nullptr, 10);
  std::vector<uint> costs(n * n);
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(costs.data(), sizeof(uint), n * n, f) != n * n) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
  fclose(f);
  cudaFree(0);
  auto t0 = std::chrono::steady_clock::now();
  {
    SOLVER solver(costs.data(), n, 0);
    cudaDeviceSynchronize();
    auto t1 = std::chrono::steady_clock::now();
    solver.solve();
    cudaDeviceSynchronize();
    auto t2 = std::chrono::steady_clock::now();
    printf("\ndriver_build_ms %f\ndriver_solve_ms %f\n",
           std::chrono::duration<double, std::milli>(t1 - t0).count(),
           std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  return 0;
}
"""

# (name, folder under codebase/, header as the driver includes it, solver type)
VARIANTS = [
    ("hylac-classical", "Hung", '"../LAP/Hung_lap.cuh"', "LAP<uint>"),
    ("hylac-hybrid", "Hung-CT", '"../LAP/HLAP.cuh"', "HLAP<uint>"),
]


def arch():
    """The GPU's compute capability as nvcc's sm number (90 where it cannot be read)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout.split()[0]
        return out.replace(".", "")
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "90"


def build_hylac(src, work):
    """Compiles the driver against each HyLAC variant: {name: executable or error text}."""
    if not src or not os.path.isdir(os.path.join(src, "codebase")):
        return {name: "no HyLAC source (--hylac; tools/hylac-stage.sh)" for name, *_ in VARIANTS}
    if shutil.which("nvcc") is None:
        return {name: "nvcc not found" for name, *_ in VARIANTS}
    built = {}
    sm = arch()
    for name, folder, header, solver in VARIANTS:
        tree = os.path.join(work, name)
        shutil.copytree(os.path.join(src, "codebase", folder), tree)
        driver = os.path.join(tree, "src", "tessera_driver.cu")
        with open(driver, "w") as f:
            f.write(DRIVER.replace("HEADER", header).replace("SOLVER", solver))
        exe = os.path.join(tree, "driver")
        cmd = ["nvcc", "-O3", "-std=c++17", f"-arch=sm_{sm}", "-Xcompiler", "-fopenmp", driver, "-o", exe,
               "-lcuda", "-lgomp"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        built[name] = exe if r.returncode == 0 else "nvcc failed: " + r.stderr[-1500:]
    return built


def run_hylac(exe, d, work, limit):
    """Pads d (m x n, m <= n) to n x n with zero rows, runs the driver: (ms, objective mod 2^32)."""
    m, n = d.shape
    square = np.zeros((n, n), dtype=np.uint32)
    square[:m] = d.astype(np.uint32)
    path = os.path.join(work, "costs.u32")
    square.tofile(path)
    r = subprocess.run([exe, path, str(n)], capture_output=True, text=True, timeout=limit)
    fields = {}
    for line in r.stdout.splitlines():
        if line.startswith("Obj val:"):
            fields["objective"] = int(line.split(":")[1])
        elif line.startswith("driver_"):
            key, value = line.split()
            fields[key] = float(value)
    if r.returncode != 0 or "driver_solve_ms" not in fields:
        raise RuntimeError(f"exit {r.returncode}: {(r.stderr or r.stdout)[-400:]}")
    return fields


SCIPY = r"""
import json, sys, time
import numpy as np
from scipy.optimize import linear_sum_assignment
d = np.load(sys.argv[1]).astype(np.float64)
t = time.perf_counter()
r, c = linear_sum_assignment(d)
print(json.dumps({"ms": (time.perf_counter() - t) * 1e3, "cost": float(d[r, c].sum())}))
"""


def run_scipy(path, limit):
    """scipy's linear_sum_assignment on the file, in a process of its own (so it can be timed out)."""
    r = subprocess.run([sys.executable, "-c", SCIPY, path], capture_output=True, text=True, timeout=limit)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-400:])
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mosaic", default=".gpu/bin/mosaic")
    ap.add_argument("--hylac", help="folder holding HyLAC's codebase/")
    ap.add_argument("--size", action="append", default=[], help="MxN (repeatable)")
    ap.add_argument("--skip-cpu", action="store_true", help="no CPU exact run of ours")
    ap.add_argument("--out", help="folder for the matrices (default: a temporary one)")
    ap.add_argument("--kinds", default="photo,uniform,integer",
                    help="the matrix kinds scipy and HyLAC also solve (ours solve every kind)")
    ap.add_argument("--limit", type=float, default=120, help="seconds per scipy or HyLAC run")
    ap.add_argument("--cpu-max-entries", type=int, default=2048 * 8192,
                    help="our CPU exact solver runs only on matrices of at most this many entries")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tessera-costs-")
    out = args.out or os.path.join(work, "matrices")
    hylac = build_hylac(args.hylac, work)
    for name, exe in hylac.items():
        if not os.path.isfile(exe):
            print(json.dumps({"solver": name, "error": exe}), flush=True)
    records = []
    for size in args.size or ["2048x8192", "4096x4096"]:
        m, n = map(int, size.split("x"))
        cmd = [args.mosaic, "bench", "--costs", out, "--json", f"--size={size}"]
        if args.skip_cpu or m * n > args.cpu_max_entries:
            cmd.append("--skip-cpu")
        ours = subprocess.run(cmd, capture_output=True, text=True)
        if ours.returncode != 0:
            print(json.dumps({"solver": "tessera", "size": size, "error": ours.stderr[-1000:]}), flush=True)
            continue
        records.extend(ours.stdout.splitlines())
    rows = []
    for line in records:
        rec = json.loads(line)
        print(json.dumps({"solver": "tessera", **rec}), flush=True)
        row = {"matrix": rec["matrix"], "size": rec["size"], "levels": rec["levels"], "ours_gpu_ms": rec["gpu_ms"],
               "ours_hungarian_ms": (rec.get("hungarian") or {}).get("total_ms"), "ours_cpu_ms": rec["cpu_ms"], "cost": rec["gpu_cost"]}
        if rec["matrix"] not in args.kinds.split(","):
            rows.append(row)
            continue
        d = np.load(rec["file"]).astype(np.float64)
        try:
            sp = run_scipy(rec["file"], args.limit)
            equal = abs(sp["cost"] - rec["gpu_cost"]) <= 1e-9 * max(sp["cost"], 1.0)
            print(json.dumps({"solver": "scipy", "matrix": rec["matrix"], "size": rec["size"], **sp, "equal": equal}),
                  flush=True)
            row["scipy_ms"] = sp["ms"]
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(json.dumps({"solver": "scipy", "matrix": rec["matrix"], "size": rec["size"], "error": str(e)[-400:]}),
                  flush=True)
        for name, exe in hylac.items():
            if not os.path.isfile(exe):
                continue
            try:
                f = run_hylac(exe, d, work, args.limit)
                total = f["driver_build_ms"] + f["driver_solve_ms"]
                want = int(round(rec["gpu_cost"])) % (1 << 32)
                print(json.dumps({"solver": name, "matrix": rec["matrix"], "size": rec["size"], "ms": total,
                                  "build_ms": f["driver_build_ms"], "solve_ms": f["driver_solve_ms"],
                                  "objective_mod_2_32": f.get("objective"),
                                  "equal_mod_2_32": f.get("objective") == want}), flush=True)
                row[name + "_ms"] = total
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(json.dumps({"solver": name, "matrix": rec["matrix"], "size": rec["size"], "error": str(e)}),
                      flush=True)
        rows.append(row)
    cols = ["ours_gpu_ms", "ours_hungarian_ms", "ours_cpu_ms", "scipy_ms", "hylac-classical_ms", "hylac-hybrid_ms"]
    print("\n| matrix | size | levels | " + " | ".join(c[:-3] + " ms" for c in cols) + " |")
    print("|---|---|---|" + "---|" * len(cols))
    for row in rows:
        cells = [f"{row[c]:.1f}" if isinstance(row.get(c), float) else "-" for c in cols]
        print(f"| {row['matrix']} | {row['size']} | {row['levels']:.0f} | " + " | ".join(cells) + " |")
    if not args.out:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
