"""engines.loaders: batches made by loader threads (or on the caller's thread) hold the right samples, count what
they read, hand a loader's error to the consumer, and stop without hanging."""

import numpy as np
import pytest

from engines import loaders
from engines.datafiles import DataError, InputLayout
from engines.sample_writer import write_samples

LAYOUT = InputLayout("features", (4,), "float32")


@pytest.fixture
def files(tmp_path):
    for index in range(5):  # sample i is all i: a batch's content says which files it took
        np.save(tmp_path / f"s{index}.npy", np.full(4, index, dtype=np.float32))
    return sorted(tmp_path.glob("*.npy"))


def test_load_batch_stacks_consecutive_files_and_counts_bytes(files):
    batch = loaders.load_batch(files, 1, 3, LAYOUT, cold=False)
    assert batch.array.shape == (3, 4) and batch.array.dtype == np.float32
    assert batch.array[:, 0].tolist() == [3, 4, 0]  # files 3, 4 and, wrapping round, 0
    assert batch.bytes_read == sum(files[i].stat().st_size for i in (3, 4, 0))
    assert batch.read_ns >= 0 and batch.decode_ns >= 0


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_every_batch_is_whole_and_the_totals_add_up(files, workers):
    with loaders.BatchLoader(files, LAYOUT, 2, workers, cold=False) as loader:
        got = [loader.get() for _ in range(10)]
        totals = loader.totals
    assert all(b.array.shape == (2, 4) for b in got)
    for b in got:  # each batch is the two files after index*2, whichever thread made it
        assert b.array[:, 0].tolist() == [(2 * b.index) % 5, (2 * b.index + 1) % 5]
    assert totals.batches >= 10 and totals.files == 2 * totals.batches
    assert loader.prefetch == (2 if workers == 0 else max(2, 2 * workers))


def test_reset_totals_counts_from_now_on(files):
    loader = loaders.BatchLoader(files, LAYOUT, 2, 0, cold=False)
    loader.get()
    loader.reset_totals()
    loader.get()
    assert loader.totals.batches == 1


def test_a_file_that_does_not_decode_fails_the_consumer_with_its_name(files):
    files[2].write_bytes(b"garbage")
    with loaders.BatchLoader(files, LAYOUT, 5, 2, cold=False) as loader, \
            pytest.raises(DataError, match=f"{files[2]} is not an .npy file"):
        loader.get()


def test_close_returns_while_threads_are_blocked_on_a_full_queue(files):
    loader = loaders.BatchLoader(files, LAYOUT, 1, 4, cold=False, prefetch=1).start()
    loader.get()
    loader.close()
    assert not any(thread.is_alive() for thread in loader._threads)


def test_samples_written_by_make_data_feed_the_loader(tmp_path):
    layout = InputLayout("pixels", (3, 8, 8), "float32")
    write_samples(tmp_path, layout, 4, "f32")
    files = sorted(tmp_path.iterdir())
    batch = loaders.load_batch(files, 0, 4, layout, cold=True)
    assert batch.array.shape == (4, 3, 8, 8) and np.isfinite(batch.array).all()
