#!/usr/bin/env bash
# Compares the `bench` figures of two sets of release binaries in one device call: each
# benchmark set runs with the old binaries, then the new, then the old again (so a drift of
# the GPU's clocks during the call shows as old-vs-old spread), through tools/gpu-bench.sh.
# It then writes $OUT/compare.txt: for every timing or rate the two runs report in the same
# place, new / old (the better of the two old runs), marked where they differ by over 3%.
#
# Prepare (on the build machine, from the project root):
#   # the new set (this checkout) into .gpu/bin, the loader into .gl/:
#   bash tools/gpu-pack.sh
#   # the old set, built from commit 5b2613b in a worktree of its own, into .gpu/old-bin:
#   git worktree add /tmp/tessera-old 5b2613b
#   (cd /tmp/tessera-old && CARGO_TARGET_DIR=target-release cargo build --release --workspace --bins)
#   mkdir -p .gpu/old-bin
#   for b in gpu-info prims-bench mad smoe mosaic composite lightfield; do
#     cp /tmp/tessera-old/target-release/release/$b .gpu/old-bin/; done
#   strip .gpu/bin/* .gpu/old-bin/*; rm -rf .gpu/tests   # the carry holds 64 MiB in all
#   cp tools/bench-compare.sh .gpu/
# Run (one device call):
#   run(carry: [".gl", ".gpu"], command: "bash .gpu/bench-compare.sh [SET ...]")
# SET: prims mad smoe mosaic composite lightfield (default: all six). Results come back in
# $OUT/results.tar.gz (every set's .jsonl and .err, both runs) and $OUT/compare.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RES=/tmp/tessera-results
OLD=${OLD:-.gpu/old-bin}; NEW=${NEW:-.gpu/bin}
sets=("$@"); [ ${#sets[@]} -gt 0 ] || sets=(prims mad smoe mosaic composite lightfield)
for s in "${sets[@]}"; do
  B=$OLD TAG=-old bash .gpu/gpu-bench.sh "$s"
  B=$NEW TAG= bash .gpu/gpu-bench.sh "$s"
  B=$OLD TAG=-old2 bash .gpu/gpu-bench.sh "$s"
done
python3 - "$RES" "${sets[@]}" >"$OUT/compare.txt" <<'EOF'
import json, sys

res, sets = sys.argv[1], sys.argv[2:]
# Figures where less is better (times) and where more is (rates); others are not compared.
LOWER = ("_ms", "ms_per", "seconds", "_us")
HIGHER = ("per_s", "gb_s", "tflop", "fps", "mpix")

def records(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip().startswith("{")]
    except OSError:
        return []

def figures(value, prefix=""):
    """(dotted key, number) for every numeric leaf."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from figures(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from figures(v, f"{prefix}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield prefix, float(value)

def sense(key):
    k = key.lower()
    if k.endswith("wall_ms"):
        return None  # process wall time, set-up included
    if any(h in k for h in HIGHER):
        return "higher"
    if any(l in k for l in LOWER):
        return "lower"
    return None

worst = []
for s in sets:
    old, old2, new = (records(f"{res}/{s}{tag}.jsonl") for tag in ("-old", "-old2", ""))
    print(f"== {s}: {len(old)} records old, {len(new)} new, {len(old2)} old again")
    if len(old) != len(new):
        print("   (record counts differ: compared in order up to the shorter)")
    for i, (o, n) in enumerate(zip(old, new)):
        o2 = old2[i] if i < len(old2) else {}
        name = n.get("name") or n.get("stage") or n.get("kernel") or n.get("command") or f"record {i}"
        of, nf, of2 = dict(figures(o)), dict(figures(n)), dict(figures(o2))
        for key, nv in nf.items():
            way = sense(key)
            if way is None or key not in of or of[key] <= 0 or nv <= 0:
                continue
            olds = [of[key]] + ([of2[key]] if of2.get(key, 0) > 0 else [])
            best_old = min(olds) if way == "lower" else max(olds)
            ratio = nv / best_old if way == "lower" else best_old / nv
            spread = max(olds) / min(olds)
            flag = "  <-- over 3% slower" if ratio > 1.03 else ("  (faster)" if ratio < 0.97 else "")
            print(f"   {name} {key}: old {best_old:.6g} new {nv:.6g}  new/old time {ratio:.3f}"
                  f"  (old runs spread {spread:.3f}){flag}")
            worst.append((ratio, s, name, key))
worst.sort(reverse=True)
print("== largest slow-downs (new/old time)")
for ratio, s, name, key in worst[:15]:
    print(f"   {ratio:.3f}  {s} {name} {key}")
EOF
tar czf "$OUT/results.tar.gz" -C "$RES" .
cat "$OUT/compare.txt" | tail -n 40
