"""The bundled MiniLM as an ONNX file, exported from its own weights once and cached.

Nothing is downloaded: PyTorch traces the packaged weights, ONNX Runtime's transformer
optimizer fuses attention, layer norms and GELU (the same arithmetic in fewer kernels), and
the int8 variant quantises the weight matrix multiplies of the plain graph. The file is keyed
by the weights and by the versions of everything that shaped it, so an upgrade exports anew
instead of loading a stale graph.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Bumped when the recipe below changes what a file holds.
RECIPE = 1
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def cache_dir() -> Path:
    """Where exported models are kept: the user's cache, $XDG_CACHE_HOME/contextwm (by
    default ~/.cache/contextwm)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contextwm"


def exported_model(model_path: Path, *, quantized: bool = False, cache: Path | None = None) -> Path:
    """The ONNX file for the sentence-transformers model at model_path, exported on first use.

    Concurrent callers (a server and its indexer process, or test workers) wait for one
    export under a file lock; the file appears whole or not at all.
    """
    folder = (cache or cache_dir()) / "onnx"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{model_path.name}-{_key(model_path)}{'-int8' if quantized else ''}.onnx"
    target = folder / name
    if target.exists():
        return target
    with _locked(folder / ".lock"):
        if target.exists():
            return target
        log.info("exporting %s to ONNX in %s (once per model and version)", model_path, folder)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            traced = Path(tmp) / "traced.onnx"
            _trace(model_path, traced)
            done = Path(tmp) / "done.onnx"
            # The quantiser knows the plain graph's matrix multiplies, not the fused operators.
            if quantized:
                _quantize(traced, done)
            else:
                _fuse(model_path, traced, done)
            os.replace(done, target)
    return target


def _key(model_path: Path) -> str:
    digest = hashlib.sha256(f"recipe {RECIPE}".encode())
    for package in ("torch", "transformers", "onnxruntime", "onnx"):
        digest.update(f"{package} {metadata.version(package)}".encode())
    for file in sorted(model_path.glob("*.json")):
        digest.update(file.read_bytes())
    # The weights by name, size and time: hashing 90 MB at every start took longer than
    # loading them, and a package installed again only costs one more export.
    for file in sorted(model_path.glob("*.safetensors")):
        stat = file.stat()
        digest.update(f"{file.name} {stat.st_size} {stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _trace(model_path: Path, out: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel, AutoTokenizer

    # Eager attention traces to the plain matmul-softmax pattern the optimizer fuses.
    model: Any = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
    tokenizer: Any = AutoTokenizer.from_pretrained(str(model_path))

    class LastHidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    # Two texts of different lengths: the trace keeps the padding mask's path.
    sample = tokenizer(
        ["a short one", "a somewhat longer sample text"], padding=True, return_tensors="pt"
    )
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    # The TorchScript exporter (deprecated, not gone; the torch.export one needs onnxscript).
    # Its tracer warnings are about control flow this model does not take: the padding mask's
    # path is in the trace.
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHidden(model),
            tuple(sample[name] for name in INPUTS),
            str(out),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def _fuse(model_path: Path, traced: Path, out: Path) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    config = json.loads((model_path / "config.json").read_text())
    model = optimize_model(
        str(traced),
        model_type="bert",
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        opt_level=1,
    )
    model.save_model_to_file(str(out))


def _quantize(model: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(model),
        str(out),
        op_types_to_quantize=["MatMul"],
        weight_type=QuantType.QInt8,
        per_channel=True,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT, "MatMulConstBOnly": True},
    )
