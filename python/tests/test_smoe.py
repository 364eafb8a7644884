import numpy as np
import pytest
from conftest import cli, scene, write_png

import tessera


@pytest.fixture(scope="module")
def image():
    return scene(24, 32)


def test_fit_render_save_load_and_the_cli_renders_the_same(tmp_path, image):
    model = tessera.smoe.fit(image, kernels=12, iterations=5, refine_steps=5)
    assert model.kernels == 12 and model.extent == [32, 24] and model.psnr_db > 10
    assert model.means.shape == (12, 5) and model.covariances.shape == (12, 5, 5) and model.priors.shape == (12,)
    out = model.render()
    assert out.shape == (24, 32, 3) and out.dtype == np.float32
    model.save(tmp_path / "m.json")
    loaded = tessera.smoe.load(tmp_path / "m.json")
    assert loaded.kernels == 12
    # The GPU render adds each tile's kernels in the order binning listed them (atomic
    # cursors, so the order of a run), hence renders agree to f32 rounding, not bit for bit.
    np.testing.assert_allclose(loaded.render(), tessera.smoe.load(tmp_path / "m.json").render(), rtol=0, atol=1e-6)
    cli("smoe", "render", tmp_path / "m.json", "--out", tmp_path / "r.npy")
    np.testing.assert_allclose(np.load(tmp_path / "r.npy"), loaded.render(), rtol=0, atol=1e-6)
    cpu = loaded.render(backend="cpu")
    np.testing.assert_allclose(cpu, loaded.render(), atol=1e-4)
    assert loaded.render(size=(64, 48)).shape == (48, 64, 3)
    # The compact format: quantised, so close to the model, not equal.
    model.save(tmp_path / "m.smc")
    compact = tessera.smoe.load(tmp_path / "m.smc")
    assert 0 < compact.kernels <= 12
    assert np.abs(compact.render(backend="cpu") - cpu).mean() < 0.05


def test_fit_equals_the_cli_fit_of_the_same_file(tmp_path, image):
    write_png(tmp_path / "in.png", image)
    cli("smoe", "fit", tmp_path / "in.png", "--kernels", "8", "--iterations", "4", "--refine-steps", "0",
        "--backend", "cpu", "--out", tmp_path / "cli.json")
    model = tessera.smoe.fit(image, kernels=8, iterations=4, refine_steps=0, backend="cpu")
    cli_model = tessera.smoe.load(tmp_path / "cli.json")
    assert model.kernels == cli_model.kernels
    # The same stages on the same samples; rayon's reductions may group sums differently.
    np.testing.assert_allclose(model.render(backend="cpu"), cli_model.render(backend="cpu"), atol=1e-4)


def test_light_field_fit_renders_views(image):
    lf = np.stack([np.stack([np.roll(image, u + v, axis=1) for v in range(2)]) for u in range(2)])
    model = tessera.smoe.fit(lf.astype(np.float32) / 255, kernels=10, iterations=3, refine_steps=0)
    assert model.coord_dims == 4 and model.extent == [32, 24, 2, 2]
    assert model.render(view=(1, 0)).shape == (24, 32, 3)
    with pytest.raises(tessera.InvalidInputError, match="outside the captured views"):
        model.render(view=(3, 0))


def test_bad_inputs(tmp_path, image):
    with pytest.raises(tessera.InvalidInputError, match="kernels=K, psnr=DB"):
        tessera.smoe.fit(image)
    with pytest.raises(tessera.InvalidInputError, match="more than the"):
        tessera.smoe.fit(image[:4, :4], kernels=100)
    with pytest.raises(tessera.InvalidInputError, match="NaN"):
        tessera.smoe.fit(np.full((8, 8, 3), np.nan, np.float32), kernels=2)
    with pytest.raises(tessera.InvalidInputError, match="missing.json"):
        tessera.smoe.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(tessera.InvalidInputError):
        tessera.smoe.load(tmp_path / "bad.json")
    model = tessera.smoe.fit(image, kernels=4, iterations=2, refine_steps=0, backend="cpu")
    with pytest.raises(tessera.InvalidInputError, match="view applies"):
        model.render(view=(0, 0))
    with pytest.raises(tessera.InvalidInputError):
        model.save(tmp_path / "m.txt")
