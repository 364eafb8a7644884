import numpy as np
import pytest
from conftest import cli, scene, write_png

import tessera


def matrix(m, n, seed=3):
    return np.random.default_rng(seed).random((m, n)) * 10


@pytest.mark.parametrize("method", ["exact", "greedy", "softassign"])
def test_solve_cost_is_the_cli_cost(tmp_path, method):
    d = matrix(9, 13)
    np.save(tmp_path / "d.npy", d)
    want = cli("mosaic", "solve", "--distance", tmp_path / "d.npy", "--method", method)
    got = tessera.mosaic.solve(d, method)
    assert got.cost == want["cost"]
    assert got.assignment.tolist() == want["assignment"]
    assert len(set(got.assignment.tolist())) == 9


def test_exact_is_optimal_on_cpu_and_gpu_and_honours_repeat():
    d = matrix(12, 7)
    with pytest.raises(tessera.InvalidInputError, match="repeat"):
        tessera.mosaic.solve(d)
    gpu = tessera.mosaic.solve(d, repeat=2)
    cpu = tessera.mosaic.solve(d, repeat=2, backend="cpu")
    assert np.bincount(gpu.assignment, minlength=7).max() <= 2
    assert gpu.cost == pytest.approx(cpu.cost, rel=1e-12)
    sliced = tessera.mosaic.solve(np.asfortranarray(d[:, :7].astype(np.float32)).T.T, repeat=2, backend="cpu")
    assert sliced.cost == pytest.approx(cpu.cost, rel=1e-6)


def test_bad_matrices_name_the_entry():
    d = matrix(3, 4)
    d[1, 2] = np.nan
    with pytest.raises(tessera.InvalidInputError, match=r"entry \(1, 2\)"):
        tessera.mosaic.solve(d)
    with pytest.raises(tessera.InvalidInputError, match="negative"):
        tessera.mosaic.solve(-matrix(3, 4))
    with pytest.raises(tessera.InvalidInputError, match="2-D"):
        tessera.mosaic.solve(np.zeros(5))
    with pytest.raises(tessera.InvalidInputError, match="method"):
        tessera.mosaic.solve(matrix(3, 4), method="best")


def test_build_from_arrays_and_from_a_folder_agree_with_the_cli(tmp_path):
    target = scene(64, 64)
    tiles = [np.full((12, 12, 3), (37 * i % 256, 91 * i % 256, 53 * i % 256), np.uint8) for i in range(24)]
    (tmp_path / "tiles").mkdir()
    for i, t in enumerate(tiles):
        write_png(tmp_path / "tiles" / f"{i:03}.png", t)
    write_png(tmp_path / "target.png", target)
    m = tessera.mosaic.build(target, tiles, (4, 4), tile_px=8)
    assert m.image.shape == (32, 32, 3) and m.image.dtype == np.uint8
    assert len(set(m.assignment.tolist())) == 16
    f = tessera.mosaic.build(tmp_path / "target.png", tmp_path / "tiles", "4x4", tile_px=8)
    assert f.cost == pytest.approx(m.cost, rel=1e-6)
    want = cli(
        "mosaic", "build", "--target", tmp_path / "target.png", "--tiles", tmp_path / "tiles",
        "--grid", "4x4", "--tile-px", "8", "--method", "exact", "--no-cache", "--out", tmp_path / "m.png",
    )
    assert f.cost == want["cost"]
    with pytest.raises(tessera.InvalidInputError, match="repeat"):
        tessera.mosaic.build(target, tiles[:5], (4, 4))
