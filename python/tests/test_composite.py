import numpy as np
import pytest

import tessera


def layers(n=3, h=37, w=53, seed=4):
    rng = np.random.default_rng(seed)
    colors, depths = [], []
    for i in range(n):
        a = rng.integers(0, 256, (h, w, 1), dtype=np.uint8)
        rgb = (rng.integers(0, 256, (h, w, 3)) * a // 255).astype(np.uint8)  # premultiplied
        colors.append(np.concatenate([rgb, a], axis=2))
        d = rng.random((h, w)).astype(np.float32)
        d[rng.random((h, w)) < 0.4] = 1.0  # background
        depths.append(d)
    return colors, depths


@pytest.mark.parametrize("op", ["zbuffer", "over"])
def test_gpu_equals_cpu_exactly(op):
    colors, depths = layers()
    g = tessera.composite.blend(colors, depths, op=op)
    c = tessera.composite.blend(colors, depths, op=op, backend="cpu")
    assert g[0].shape == (37, 53, 4) and g[1].shape == (37, 53)
    np.testing.assert_array_equal(g[0], c[0])
    np.testing.assert_array_equal(g[1], c[1])


def test_zbuffer_keeps_the_nearest_active_pixel():
    colors, depths = layers()
    rgba, depth = tessera.composite.blend(np.stack(colors), np.stack(depths), backend="cpu")
    stack = np.stack(depths)
    nearest = stack.argmin(axis=0)
    active = stack.min(axis=0) < 1.0
    np.testing.assert_array_equal(depth[active], stack.min(axis=0)[active])
    picked = np.take_along_axis(np.stack(colors), nearest[None, ..., None], axis=0)[0]
    np.testing.assert_array_equal(rgba[active], picked[active])


def test_bad_inputs():
    colors, depths = layers()
    with pytest.raises(tessera.InvalidInputError, match="one depth per colour"):
        tessera.composite.blend(colors, depths[:2])
    with pytest.raises(tessera.InvalidInputError, match="depths\\[1\\]"):
        tessera.composite.blend(colors, [depths[0], depths[1][:-1], depths[2]])
    bad = [d.copy() for d in depths]
    bad[2][3, 4] = np.inf
    with pytest.raises(tessera.InvalidInputError, match="row 3, column 4"):
        tessera.composite.blend(colors, bad)
    with pytest.raises(tessera.InvalidInputError, match="op"):
        tessera.composite.blend(colors, depths, op="add")
