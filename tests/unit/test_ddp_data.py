"""A rank's batches: in memory each rank's inputs are its own (seeded by rank) and the same every step; from
files each rank reads only its shard files[rank::world] through the loader, and a shard with no file is refused
with the fix. In-process (torch, no rank processes)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from engines.backends.torch_backend import prepare_training  # noqa: E402
from engines.datafiles import DataError  # noqa: E402
from engines.ddp.data import source_for  # noqa: E402
from engines.spec import RunSpec  # noqa: E402

PARAMS = {"in_features": 8, "hidden": 16, "layers": 1, "out_features": 4}


def spec_of(**extra):
    return RunSpec.from_dict({"model": "mlp", "mode": "training", "batch": 2, "model_params": PARAMS, **extra})


def test_in_memory_inputs_are_seeded_by_rank_and_copied_into_the_model_input():
    spec = spec_of()
    training = prepare_training(spec, torch.device("cpu"))
    first, wait = source_for(spec, 0, 2, training).next()
    rank0 = first[0].clone()
    assert first[0] is training.inputs[0] and wait >= 0
    again, _ = source_for(spec, 0, 2, training).next()
    assert torch.equal(again[0], rank0)
    other, _ = source_for(spec, 1, 2, training).next()
    assert not torch.equal(other[0], rank0)


def test_files_are_sharded_by_rank_and_read_through_the_loader(tmp_path):
    for index in range(4):
        np.save(tmp_path / f"s{index}.npy", np.full((8,), float(index), dtype=np.float32))
    spec = spec_of(scenario="input-pipeline",
                   scenario_options={"data_dir": str(tmp_path), "loader_workers": 1, "cache": "warm"})
    training = prepare_training(spec, torch.device("cpu"))
    source = source_for(spec, 1, 2, training)
    try:
        seen = {float(v) for _ in range(3) for v in source.next()[0][0][:, 0]}
    finally:
        source.close()
    assert seen == {1.0, 3.0}  # rank 1 of 2: files 1 and 3 only
    assert "files[r::2]" in source.method


def test_a_rank_without_a_file_is_refused_with_the_fix(tmp_path):
    np.save(tmp_path / "only.npy", np.zeros((8,), dtype=np.float32))
    spec = spec_of(scenario="input-pipeline", scenario_options={"data_dir": str(tmp_path), "cache": "warm"})
    training = prepare_training(spec, torch.device("cpu"))
    with pytest.raises(DataError, match="rank 1 has none: give at least 2 files"):
        source_for(spec, 1, 2, training)
