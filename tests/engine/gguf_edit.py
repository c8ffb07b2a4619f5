"""Write a modified copy of a GGUF (for bad-input tests and model variants): change keys, drop or
replace tensors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter


def rewrite_gguf(
    src: Path,
    dst: Path,
    *,
    set_kv: dict[str, Any] | None = None,
    drop: tuple[str, ...] = (),
    replace: dict[str, np.ndarray] | None = None,
) -> Path:
    """`replace`: tensor name -> new data (numpy order, ggml's shape reversed; F32 or F16 kept as given)."""
    set_kv = set_kv or {}
    replace = replace or {}
    reader = GGUFReader(src)
    writer = GGUFWriter(dst, arch="voxtral_realtime")
    writer.kv_data[0].clear()  # the constructor's general.architecture is replaced below
    for name, field in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        value = set_kv.get(name, field.contents())
        sub = field.types[-1] if vtype == GGUFValueType.ARRAY else None
        writer.add_key_value(name, value, vtype, sub_type=sub)
    for t in reader.tensors:
        if t.name in drop:
            continue
        if t.name in replace:
            writer.add_tensor(t.name, np.ascontiguousarray(replace[t.name]))
            continue
        writer.add_tensor(t.name, np.array(t.data), raw_shape=list(t.data.shape), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dst
