"""What every model-file format shares (engines.model_files.common): the fingerprint."""

import hashlib
import os

from engines import model_files


def test_sha256_streams(tmp_path):
    path = tmp_path / "blob"
    data = os.urandom(3 * (1 << 20) + 5)
    path.write_bytes(data)
    assert model_files.sha256(path) == hashlib.sha256(data).hexdigest()
