import threading
import time

import numpy as np
import pytest
from conftest import cli, distort, scene, write_png

import tessera

H, W = 48, 56


@pytest.fixture(scope="module")
def pair():
    ref = scene(H, W)
    return ref, distort(ref)


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


@pytest.mark.parametrize("backend", ["gpu", "cpu"])
def test_mad_equals_the_cli_on_the_same_files(tmp_path, pair, backend):
    ref, dist = pair
    write_png(tmp_path / "ref.png", ref)
    write_png(tmp_path / "dist.png", dist)
    want = cli("mad", "score", tmp_path / "ref.png", tmp_path / "dist.png", "--backend", backend)
    got = tessera.mad(ref, dist, backend=backend)
    for field in ("mad", "detection", "appearance", "alpha"):
        assert rel(getattr(got, field), want[field]) <= 1e-6, field
    from_files = tessera.mad(tmp_path / "ref.png", str(tmp_path / "dist.png"), backend=backend)
    assert rel(from_files.mad, want["mad"]) <= 1e-6


def test_gpu_and_cpu_agree_and_identical_images_score_zero(pair):
    ref, dist = pair
    gpu, cpu = tessera.mad(ref, dist), tessera.mad(ref, dist, backend="cpu")
    assert gpu.mad > 0 and rel(gpu.mad, cpu.mad) < 1e-4
    assert tessera.mad(ref, ref).mad == 0.0


def test_float_images_of_8_bit_levels_score_as_the_8_bit_image(pair):
    ref, dist = pair
    want = tessera.mad(ref, dist).mad
    for dtype in (np.float32, np.float64):
        got = tessera.mad(ref.astype(dtype) / 255, dist.astype(dtype) / 255).mad
        assert rel(got, want) <= 1e-9, dtype
    # uint16 of the same levels (v * 257) is the 16-bit path: close, not rounded as 8-bit.
    sixteen = tessera.mad(ref.astype(np.uint16) * 257, dist.astype(np.uint16) * 257).mad
    assert rel(sixteen, want) < 0.05


def test_grey_rgba_strided_and_read_only_inputs(pair):
    ref, dist = pair
    want = tessera.mad(ref, dist)
    rgba = lambda a: np.concatenate([a, np.full(a.shape[:2] + (1,), 255, np.uint8)], axis=2)
    assert tessera.mad(rgba(ref), rgba(dist)).mad == want.mad
    # A transposed view and a slice with steps are read where they lie.
    big_r = np.zeros((2 * H, 2 * W, 3), np.uint8)
    big_r[::2, ::2] = ref
    big_d = np.zeros_like(big_r)
    big_d[::2, ::2] = dist
    assert tessera.mad(big_r[::2, ::2], big_d[::2, ::2]).mad == want.mad
    t = tessera.mad(np.ascontiguousarray(ref.transpose(1, 0, 2)).transpose(1, 0, 2), dist)
    assert t.mad == want.mad
    ro_r, ro_d = ref.copy(), dist.copy()
    ro_r.flags.writeable = False
    ro_d.flags.writeable = False
    assert tessera.mad(ro_r, ro_d).mad == want.mad
    grey = tessera.mad(ref[..., 0], dist[..., 0])
    assert grey.mad > 0


def test_maps_are_returned_when_asked(pair):
    ref, dist = pair
    r = tessera.mad(ref, dist, maps=True)
    assert r.maps is not None
    for m in (r.maps.detection, r.maps.appearance, r.maps.combined):
        assert m.shape == (H, W) and m.dtype == np.float32 and np.isfinite(m).all()
    assert tessera.mad(ref, dist).maps is None


def test_mad_batch_equals_single_pairs_in_every_layout(pair):
    ref, dist = pair
    refs = np.stack([ref, dist, ref])
    dists = np.stack([dist, ref, distort(ref, seed=5)])
    want = np.array([tessera.mad(r, d).mad for r, d in zip(refs, dists)])
    got = tessera.mad_batch(refs.transpose(0, 3, 1, 2), dists.transpose(0, 3, 1, 2))
    assert got.shape == (3,) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(tessera.mad_batch(list(refs), list(dists)), want, rtol=1e-6)
    np.testing.assert_allclose(tessera.mad_batch(list(refs), list(dists), backend="cpu"), want, rtol=1e-4)
    assert tessera.mad_batch([], []).shape == (0,)


def test_create_metric_is_shaped_like_pyiqa(pair):
    ref, dist = pair
    metric = tessera.create_metric("mad")
    assert metric.lower_better is True
    batch = lambda a: (a.astype(np.float32) / 255).transpose(2, 0, 1)[None]
    scores = metric(batch(dist), batch(ref))
    assert scores.shape == (1,)
    assert rel(scores[0], tessera.mad(ref, dist).mad) <= 1e-9
    assert metric._scorer is tessera.create_metric("mad")._scorer
    with pytest.raises(ValueError, match="unknown metric"):
        tessera.create_metric("psnr")


def test_bad_inputs_raise_value_errors_naming_the_problem(pair):
    ref, dist = pair
    cases = [
        ((ref.astype(np.int32), dist), "dtype int32"),
        ((ref, dist[:-1]), "size mismatch"),
        ((ref[:20, :20], dist[:20, :20]), "at least 34x34"),
        ((ref[None], dist[None]), "shape"),
        ((np.zeros((40, 40, 5), np.uint8), np.zeros((40, 40, 5), np.uint8)), "shape"),
        ((np.full((40, 40), np.nan, np.float32), np.zeros((40, 40), np.float32)), "NaN"),
        ((np.full((40, 40), 1.5), np.zeros((40, 40))), "outside \\[0, 1\\]"),
        (("a.png", ref), "two arrays or two image file paths"),
        (([[1, 2], [3, 4]], ref), "dtype int64"),
    ]
    for (r, d), message in cases:
        with pytest.raises(tessera.InvalidInputError, match=message):
            tessera.mad(r, d)
        assert issubclass(tessera.InvalidInputError, ValueError)
    with pytest.raises(tessera.InvalidInputError, match="missing.png"):
        tessera.mad("missing.png", "missing2.png")
    with pytest.raises(tessera.InvalidInputError, match="pair 1"):
        tessera.mad_batch([ref, ref], [dist, dist[:-2]])
    with pytest.raises(tessera.InvalidInputError, match="2 references but 1"):
        tessera.mad_batch([ref, ref], [dist])


def test_a_pair_over_the_memory_budget_is_refused_before_work(pair):
    ref, dist = pair
    old = tessera.memory_budget()
    tessera.set_memory_budget(10_000)
    try:
        with pytest.raises(tessera.MemoryBudgetError, match="memory budget"):
            tessera.mad(ref, dist)
    finally:
        tessera.set_memory_budget(old)


def test_another_thread_runs_while_mad_computes():
    ref = scene(160, 160)
    dist = distort(ref)
    tessera.mad(ref, dist, backend="cpu")  # warm up
    done = threading.Event()
    result = {}

    def work():
        result["mad"] = tessera.mad(ref, dist, backend="cpu").mad
        done.set()

    ticks = 0
    t = threading.Thread(target=work)
    start = time.perf_counter()
    t.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    elapsed = time.perf_counter() - start
    assert result["mad"] > 0
    # With the GIL held for the whole call, this thread would not tick at all meanwhile.
    assert ticks >= min(20, int(elapsed * 200)), (ticks, elapsed)
