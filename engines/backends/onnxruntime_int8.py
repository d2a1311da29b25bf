"""Dynamic int8 quantization for the ONNX Runtime backend, cached, on a staged view of the user's file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engines import model_files
from engines.backends.onnxruntime_session import OrtLoadError, first_line
from engines.quiet import quiet


def quantized(source: Path, external: list[str] | tuple[str, ...] = ()) -> tuple[Path, dict[str, Any]]:
    """Dynamic int8 quantization of `source`, cached by its sha256 and the onnxruntime version.

    The quantizer writes `<stem>-inferred.onnx` beside the file it is given, so it is given a staged view of the
    file in a temporary folder (the worker's own under the sandbox): the user's folder is only ever read.
    `external`: the file's external data locations (relative to its folder), staged with it."""
    import contextlib
    import os
    import tempfile

    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from engines import cache

    digest = model_files.sha256(source)
    target = cache.subdir("onnx/int8") / f"{source.stem}-{digest[:16]}-ort{ort.__version__}.onnx"
    info = {"method": "onnxruntime.quantization.quantize_dynamic", "weight_type": "QInt8", "source": str(source),
            "source_sha256": digest, "path": str(target)}
    if target.is_file():
        return target, {**info, "cached": True}
    tmp = cache.temp_path(target).with_suffix(".onnx")
    try:
        # quiet(""): the quantizer logs to the root logger
        with tempfile.TemporaryDirectory(prefix="labconsole-int8-") as staging, quiet(""):
            staged = _staged(source, Path(staging), external)
            quantize_dynamic(str(staged), str(tmp), weight_type=QuantType.QInt8)
        os.replace(tmp, target)
    except Exception as exc:  # noqa: BLE001
        raise OrtLoadError(f"precision: int8 quantization of {source.name} failed ({type(exc).__name__}: "
                           f"{first_line(exc)}). Fix: run it as fp32, or give a model quantized beforehand") from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return target, {**info, "cached": False}


def _staged(source: Path, folder: Path, external: list[str] | tuple[str, ...]) -> Path:
    """`source` as seen from `folder`: a symlink to the .onnx (a copy where symlinks are not allowed), and for each
    external data file a hard link, else a copy (onnx refuses symlinked external data). Nothing is written to
    `source`'s folder, and nothing opens the staged files for writing (a hard link shares the user's bytes)."""
    import os
    import shutil

    staged = folder / source.name
    try:
        os.symlink(source.resolve(), staged)
    except OSError:  # Windows without the symlink right
        shutil.copyfile(source, staged)
    for location in external:  # checked by inspect_onnx to lie inside source's folder
        data, link = source.parent / location, folder / location
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(data, link)
        except OSError:  # another filesystem, protected hard links, or a sandbox that denies linking: copy
            shutil.copyfile(data, link)
    return staged
