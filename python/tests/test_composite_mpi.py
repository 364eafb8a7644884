"""tessera.composite.Compositor across MPI ranks: the example renderer
(examples/python/composite_mpi.py) under mpirun, checked on the root against an
independent composite of every rank's buffers, and bad arguments raising on every rank."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tessera

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "composite_mpi.py"

pytestmark = pytest.mark.skipif(
    shutil.which("mpirun") is None or importlib.util.find_spec("mpi4py") is None,
    reason="needs mpirun and mpi4py",
)


def mpirun(n, *args, timeout=240):
    env = dict(os.environ)
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_btl="self,vader",
        OMPI_MCA_plm_rsh_agent="",
    )
    cmd = ["mpirun", "-n", str(n), "--oversubscribe", sys.executable, str(EXAMPLE), *map(str, args)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout}\n{out.stderr}"
    assert "validation" not in out.stderr.lower(), out.stderr
    return out.stdout


@pytest.mark.parametrize(
    "ranks, extra",
    [
        (3, ["--mode", "zbuffer", "--empty-rank", "1"]),
        (3, ["--mode", "over", "--order", "reverse", "--empty-rank", "2", "--root", "1"]),
        (2, ["--mode", "over", "--float"]),
        (3, ["--mode", "zbuffer", "--float", "--empty-rank", "1"]),
        (4, ["--mode", "zbuffer", "--float", "--backend", "cpu"]),
        (3, ["--mode", "zbuffer", "--backend", "cpu"]),
        (4, ["--mode", "over", "--spheres", "200"]),
    ],
)
def test_example_equals_independent_composite(tmp_path, ranks, extra):
    out = mpirun(ranks, "--size", "97x61", "--out", tmp_path / "frame.png", "--check", *extra)
    assert "check passed" in out, out
    assert (tmp_path / "frame.png").stat().st_size > 100
    assert '"exchange"' in out and '"bytes_sent"' in out, out


def test_bad_arguments_raise_on_every_rank(tmp_path):
    out = mpirun(3, "--size", "40x30", "--out", tmp_path / "frame.png", "--check-errors", "--check")
    assert out.count("refused as expected") == 8, out
    assert "rank 2" in out  # the NaN depth on the last rank names it on the others
    assert "check passed" in out


def test_not_a_communicator():
    with pytest.raises(tessera.InvalidInputError, match="mpi4py communicator"):
        tessera.composite.Compositor(object(), 4, 4)
