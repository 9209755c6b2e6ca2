"""Shared fixtures of the voxstream Python tests (host backend: numpy arrays)."""
import numpy as np
import pytest

import voxstream as vs

DTYPES = ["uint8", "uint16", "int16", "int32", "float32", "float64"]


@pytest.fixture(scope="session")
def streams():
    return vs.StreamSet(3)


def random_array(shape, dtype, seed=0):
    """Seeded random voxels covering a useful part of `dtype`'s range."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-100.0, 100.0, size=shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
