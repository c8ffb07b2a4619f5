"""`convert_checkpoint`: a supported checkpoint -> one GGUF model file (layouts in engine/GGUF.md).

What `src` may be, and who plans it:

* a folder with ``config.json`` ``model_type`` ``voxtral_realtime`` (or Mistral's ``params.json``):
  Voxtral Realtime (``voxtral.py``);
* a folder with ``config.json`` ``model_type`` ``nemotron_asr_streaming`` or ``nemotron3_5_asr``:
  FastConformer RNN-T from Hugging Face (``fastconformer_hf.py``);
* a NeMo ``.nemo`` archive, or the folder it extracts to (``model_config.yaml``): FastConformer RNN-T
  (``fastconformer_nemo.py``).

Writing is shared: all tensor infos are declared first, then each tensor is loaded (memory-mapped),
converted and written in turn, so peak memory is about one tensor. Output goes to a temporary file
next to `out` that is renamed on success and removed on any failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFValueType, GGUFWriter
from tqdm import tqdm

from .checkpoint import read_json
from .errors import ConversionError
from .fastconformer_hf import HF_MODEL_TYPES, plan_fastconformer_hf
from .fastconformer_nemo import plan_fastconformer_nemo
from .plan import ConversionPlan
from .tensor_data import OUTTYPES, convert_rows, storage_type
from .voxtral import plan_voxtral

_VOXTRAL_MODEL_TYPE = "voxtral_realtime"


def convert_checkpoint(src: Path, out: Path, outtype: str = "f16", progress: bool = True) -> None:
    """Convert the checkpoint `src` (folder or ``.nemo`` file) into the GGUF file `out`.

    `outtype` ("f32", "f16" or "bf16") applies to the 2-D weight matrices the layout lists as following
    the file type; norms, biases, small kernels and the frontend tables are always F32. Raises
    ConversionError (one line) on bad input; `out` is then left untouched and no partial file remains.
    """
    if outtype not in OUTTYPES:
        raise ConversionError(f"unknown outtype {outtype!r}; choose one of {', '.join(OUTTYPES)}")
    src, out = Path(src), Path(out)
    _check_output(out)

    plan = _plan_for(src, outtype, out.parent)
    try:
        _write(out, plan, progress)
    finally:
        plan.close()


def _check_output(out: Path) -> None:
    """`out` must be a new path or a regular file: the result is renamed over it, which would replace
    a device node (``-o /dev/full``), a FIFO or a symlink's target type."""
    if not out.parent.is_dir():
        raise ConversionError(f"output folder {out.parent} does not exist")
    if out.is_dir():
        raise ConversionError(f"output path {out} is a directory")
    if out.exists() and not out.is_file():
        raise ConversionError(f"output path {out} exists and is not a regular file (a device or FIFO?)")


def _check_metadata(out: Path, writer: GGUFWriter) -> None:
    """The engine's own load-time rules on the hyper-parameters and vocabulary about to be written."""
    try:
        from captionist import _engine
    except ImportError as exc:  # pragma: no cover - only without a built extension
        raise ConversionError(f"cannot check the model for the engine (engine not built: {exc})") from exc
    items = []
    for key, v in writer.kv_data[0].items():
        sub = v.sub_type
        if v.type == GGUFValueType.ARRAY and sub is None:  # as GGUFWriter infers it when writing
            sub = GGUFValueType.get_type(v.value[0]) if len(v.value) else GGUFValueType.UINT8
        items.append((key, int(v.type), v.value, None if sub is None else int(sub)))
    try:
        _engine.check_metadata(items)
    except RuntimeError as exc:
        raise ConversionError(f"the converted model would not load ({out} not written): {exc}") from None


def _plan_for(src: Path, outtype: str, workdir: Path) -> ConversionPlan:
    if src.is_file():
        return plan_fastconformer_nemo(src, outtype, workdir)
    if not src.is_dir():
        raise ConversionError(f"{src} is not a directory or a .nemo file")
    if (src / "model_config.yaml").is_file():
        return plan_fastconformer_nemo(src, outtype, workdir)
    if (src / "config.json").is_file():
        model_type = read_json(src / "config.json").get("model_type")
        if model_type in HF_MODEL_TYPES:
            return plan_fastconformer_hf(src, outtype)
        if model_type != _VOXTRAL_MODEL_TYPE and not (src / "params.json").is_file():
            supported = ", ".join(repr(t) for t in (_VOXTRAL_MODEL_TYPE, *HF_MODEL_TYPES))
            raise ConversionError(
                f"config.json has model_type {model_type!r}; supported: {supported} (or a NeMo .nemo archive)"
            )
    return plan_voxtral(src, outtype)


def _write(out: Path, plan: ConversionPlan, progress: bool) -> None:
    tmp = out.with_name(f".{out.name}.{os.getpid()}.part")
    writer = GGUFWriter(tmp, plan.arch)  # opens nothing until write_header_to_file
    plan.add_metadata(writer)
    _check_metadata(out, writer)
    try:
        total = 0
        for t in plan.tensors:
            dtype, ggml_type = storage_type(t.outtype)
            nbytes = int(np.prod(t.shape, dtype=np.int64)) * dtype.itemsize
            raw = ggml_type if ggml_type == GGMLQuantizationType.BF16 else None
            writer.add_tensor_info(t.name, t.shape, dtype, nbytes, raw_dtype=raw)
            total += nbytes
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        with tqdm(total=total, unit="B", unit_scale=True, desc="convert", disable=not progress) as bar:
            for t in plan.tensors:
                data = convert_rows(t.load(), t.outtype, t.row_order)
                if data.shape != t.shape:  # a planner bug, never bad input
                    raise AssertionError(f"{t.name}: planned shape {t.shape}, got {data.shape}")
                writer.write_tensor_data(data)
                bar.update(data.nbytes)
                del data
        writer.close()
        os.replace(tmp, out)
    except BaseException as exc:
        try:
            writer.close()
        except Exception:  # noqa: BLE001 - already failing; the original error matters
            pass
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ConversionError(f"cannot write {out}: {exc.strerror or exc}") from exc
        raise
