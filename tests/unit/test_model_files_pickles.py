"""Pickles (engines.model_files.pickles): a torch.save or pickle file is refused before anything reads it, and
the marker its unpickling would create never appears."""

import pickle

import pytest
import torch
from model_file_samples import Marker, sample_files, spec_for

from engines import model_files
from engines.model_files import UnsafeModelFile


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return sample_files(tmp_path_factory)


def test_torch_save_of_a_module_is_refused_unread(files):
    saved = files["root"] / "saved_module.pt"
    torch.save(files["model"], saved)
    legacy = files["root"] / "legacy.pt"
    torch.save(files["model"].state_dict(), legacy, _use_new_zipfile_serialization=False)
    for path in (saved, legacy):
        with pytest.raises(UnsafeModelFile) as err:
            model_files.load_torch(spec_for(path, inputs={"x": [1, 8]}), "cpu")
        message = str(err.value)
        assert path.name in message and "is a pickled Python object (torch.save), not TorchScript" in message
        assert "never unpickles" in message and "torch.jit.script(model).save(path)" in message


def test_raw_pickle_is_refused_and_never_runs(files):
    marker = files["root"] / "pickle_ran"
    evil = files["root"] / "evil.pt"
    evil.write_bytes(pickle.dumps(Marker(marker)))
    old = files["root"] / "evil_p0.jit"
    old.write_bytes(pickle.dumps(Marker(marker), protocol=0))
    for path in (evil, old):
        with pytest.raises(UnsafeModelFile, match="pickled Python object"):
            model_files.load_torch(spec_for(path, inputs={"x": [1, 8]}), "cpu")
        with pytest.raises(UnsafeModelFile):
            model_files.inspect(path)
    assert not marker.exists()
