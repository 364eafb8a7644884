import numpy as np
import pytest

import tessera
from conftest import cli


def light_field(u=4, v=4, h=20, w=24, seed=2):
    """Views of a textured plane shifted by one pixel per view (real parallax)."""
    rng = np.random.default_rng(seed)
    base = rng.random((h + u, w + v, 3)).astype(np.float32)
    base = (base + np.roll(base, 1, 0) + np.roll(base, 1, 1)) / 3
    return np.stack([np.stack([base[i:i + h, j:j + w] for j in range(v)]) for i in range(u)])


@pytest.fixture(scope="module")
def ensemble():
    return tessera.lightfield.train([light_field()], 2, patch="4x4x4x4", iterations=1, max_patches=2000)


def test_train_encode_decode_round_trip(tmp_path, ensemble):
    lf = light_field(seed=3)
    assert ensemble.dictionaries == 2 and ensemble.patch == "4x4x3x4x4"  # rows x columns x colours x view rows x view columns
    # Every coefficient allowed (768 a patch): each patch reaches epsilon.
    data = tessera.lightfield.encode(lf, ensemble, sparsity=768, epsilon=0.02)
    assert isinstance(data, bytes) and 0 < len(data) < lf.nbytes
    out = tessera.lightfield.decode(data)
    assert out.shape == lf.shape and out.dtype == np.float32
    rmse = np.sqrt(np.mean((out - lf) ** 2))
    assert rmse <= 0.02 * 1.001, rmse
    cpu = tessera.lightfield.decode(data, backend="cpu")
    np.testing.assert_allclose(cpu, out, atol=1e-4)
    # A quarter of them: this noise-like texture stays above epsilon, as the CLI says.
    capped = tessera.lightfield.encode(lf, ensemble, sparsity=192, epsilon=0.02)
    assert 0.02 < np.sqrt(np.mean((tessera.lightfield.decode(capped) - lf) ** 2)) < 0.1
    ensemble.save(tmp_path / "d.lfd")
    again = tessera.lightfield.load_ensemble(tmp_path / "d.lfd")
    assert tessera.lightfield.encode(lf, again, sparsity=192, epsilon=0.02) == capped
    # The CLI writes the same bytes from the same array and ensemble.
    np.save(tmp_path / "lf.npy", lf)
    cli("lightfield", "encode", "--input", tmp_path / "lf.npy", "--dict", tmp_path / "d.lfd", "--sparsity", 192,
        "--epsilon", 0.02, "--out", tmp_path / "cli.lfc")
    assert (tmp_path / "cli.lfc").read_bytes() == capped


def test_render_views(ensemble):
    lf = light_field()
    centre = tessera.lightfield.render(lf)
    assert centre.shape == (20, 24, 3) and centre.dtype == np.uint8
    corner = tessera.lightfield.render(lf, view=(0, 0))
    np.testing.assert_allclose(corner.astype(int), (lf[0, 0] * 255).round(), atol=1)
    cpu = tessera.lightfield.render(lf, view=(1.5, 2.0), focus=1.0, aperture=2.0, backend="cpu")
    gpu = tessera.lightfield.render(lf, view=(1.5, 2.0), focus=1.0, aperture=2.0)
    assert np.abs(cpu.astype(int) - gpu.astype(int)).max() <= 1
    with pytest.raises(tessera.InvalidInputError):
        tessera.lightfield.render(lf, view=(9, 0))


def test_bad_inputs(ensemble):
    with pytest.raises(tessera.InvalidInputError, match=r"\(U, V, H, W, 3\)"):
        tessera.lightfield.encode(np.zeros((4, 4, 3), np.float32), ensemble, 8)
    with pytest.raises(tessera.InvalidInputError):
        tessera.lightfield.decode(b"not an lfc file")
    bad = light_field()
    bad[1, 2, 3, 4, 0] = np.nan
    with pytest.raises(tessera.InvalidInputError):
        tessera.lightfield.encode(bad, ensemble, 8)
