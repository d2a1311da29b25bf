"""The user's own model files (.onnx, .pt2, TorchScript .pt/.jit): identify, inspect and load them safely.

Lab Console never unpickles a model file: a pickle can run any code when it is loaded, and a lab machine
runs files that come from anywhere. The format is decided by the file's content, not its extension (`detect`);
each format has its reader, which says what it loads and what it refuses:

- `onnx_model`: a protobuf, parsed by onnx / ONNX Runtime; external data beside it checked before loading;
- `pt2`: torch.export archives, refused up front when they declare pickles or native code, then loaded with
  `torch.load` held to `weights_only=True` and `pickle.loads` refusing;
- `torchscript`: TorchScript's own C++ loader, which builds only TorchScript types;
- `pickles`: a torch.save / pickle file recognised by its bytes and refused before anything reads it.

`readers` puts them together (`inspect`, `load_torch`); `common` holds the errors and sha256. Nothing here
imports torch or onnx at import time: the console names `engines.model_files:inspect` for a worker to run.
Import from here; the modules' split is not part of the interface.
"""

from engines.model_files.common import ModelFileError, UnsafeModelFile, sha256
from engines.model_files.detect import detect_format
from engines.model_files.onnx_model import initializer_totals, inspect_onnx
from engines.model_files.readers import inspect, load_torch

__all__ = ["ModelFileError", "UnsafeModelFile", "detect_format", "initializer_totals", "inspect", "inspect_onnx",
           "load_torch", "sha256"]
