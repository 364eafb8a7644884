"""Shared test helpers: small deterministic images, a PNG writer (no imaging library is
needed), and the command-line binaries the results are compared with."""

import json
import os
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

import tessera

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("TESSERA_BIN_DIR", ROOT / "target" / "debug"))


def write_png(path, arr):
    """Writes a uint8 HxW, HxWx3 or HxWx4 array as a PNG."""
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    h, w = arr.shape[:2]
    channels = 1 if arr.ndim == 2 else arr.shape[2]
    color = {1: 0, 3: 2, 4: 6}[channels]
    raw = b"".join(b"\x00" + arr[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    Path(path).write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def cli(binary, *args):
    """Runs a Tessera binary with --json and returns its last JSON line."""
    exe = BIN / binary
    if not exe.exists():
        pytest.skip(f"{exe} is not built (cargo build --workspace --bins)")
    out = subprocess.run([str(exe), *map(str, args), "--json"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def scene(h, w, seed=0):
    """A smooth RGB scene with edges (uint8)."""
    y, x = np.mgrid[0:h, 0:w] / max(h, w)
    rng = np.random.default_rng(seed)
    img = np.stack([0.5 + 0.4 * np.sin(7 * x + 3 * y), 0.4 + 0.3 * np.cos(5 * y), (x + y) / 2], axis=-1)
    img[(x - 0.4) ** 2 + (y - 0.5) ** 2 < 0.05] = [0.9, 0.2, 0.1]
    img += rng.normal(0, 0.02, img.shape)
    return (np.clip(img, 0, 1) * 255).round().astype(np.uint8)


def distort(img, seed=1, sigma=12.0):
    rng = np.random.default_rng(seed)
    return np.clip(img.astype(np.float64) + rng.normal(0, sigma, img.shape), 0, 255).round().astype(np.uint8)


@pytest.fixture(scope="session", autouse=True)
def no_validation_messages():
    """No Vulkan validation message in the whole session (TESSERA_VALIDATION=1 in CI)."""
    yield
    assert tessera._tessera.validation_messages() == 0
