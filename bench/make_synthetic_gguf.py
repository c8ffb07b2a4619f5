"""Write model files of the real Voxtral Realtime architecture with random weights, for speed tests.

    python bench/make_synthetic_gguf.py --dims full --out /tmp/voxtral-synth [--types f16,q8_0,q4_k]

Writes ``DIR/voxtral-synth-<dims>-<type>.gguf``. The F16 file is written tensor by tensor
(GGUFWriter: all tensor infos first, then one tensor's data at a time), with the converter's own
metadata writer, tensor list and frontend tables and a synthetic vocabulary; Q8_0 / Q4_K files are
made from it with ``captionist.engine.quantize``. Files that already exist are kept. Weights are
N(0, 0.02) values (norm weights 1) cut from one random pool: speed does not depend on values.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from dims import ADA_DIM, DIMS_CHOICES, model_params
from gguf import GGUFWriter, LlamaFileType
from synthetic_tekken import write_tekken

from captionist.convert.frontend import hann_window_periodic, mel_filterbank
from captionist.convert.hparams import ModelParams
from captionist.convert.metadata import add_metadata, resolve_streaming
from captionist.convert.tekken import read_tekken
from captionist.convert.tensor_map import tensor_specs
from captionist.convert.voxtral import ARCH
from captionist.engine import quantize

TYPES = {"f16": "F16", "q8_0": "Q8_0", "q4_k": "Q4_K", "q5_k": "Q5_K", "q4_k_m": "Q4_K_M"}
_POOL = 1 << 24  # random float16 values every tensor is cut from


def file_path(out_dir: Path, dims: str, type_key: str) -> Path:
    return out_dir / f"voxtral-synth-{dims}-{type_key}.gguf"


class _Pool:
    """Cheap random data: tensors are windows (at rotating offsets) of one N(0, 0.02) pool."""

    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.values = (0.02 * rng.standard_normal(_POOL, dtype=np.float32)).astype(np.float16)
        self.offset = 0

    def take(self, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        n = int(np.prod(shape, dtype=np.int64))
        out = np.empty(n, dtype=dtype)
        done = 0
        while done < n:
            start = self.offset % _POOL
            k = min(n - done, _POOL - start)
            out[done : done + k] = self.values[start : start + k]
            done += k
            self.offset += k + 7919  # shift so consecutive tensors differ
        return out.reshape(shape)


def _vocab_params(p: ModelParams):  # noqa: ANN202 - converter types
    with tempfile.TemporaryDirectory() as tmp:
        tekken = Path(tmp) / "tekken.json"
        write_tekken(tekken, p.dec_n_vocab)
        vocab = read_tekken(tekken, p.dec_n_vocab)
    return vocab, resolve_streaming(p, vocab)


def write_f16(path: Path, dims: str) -> None:
    """The F16 file (matrices F16; norms, biases, ada and frontend tables F32), streamed to disk."""
    p = model_params(dims)
    specs = tensor_specs(p, ADA_DIM, "hf")
    vocab, streaming = _vocab_params(p)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    writer = GGUFWriter(tmp, ARCH)
    try:
        add_metadata(writer, p, ADA_DIM, vocab, streaming, LlamaFileType.MOSTLY_F16)
        frontend = {
            "audio.mel_filters": mel_filterbank(p.sample_rate, p.n_fft, p.n_mel, 0.0, 8000.0),
            "audio.window": hann_window_periodic(p.n_fft),
        }
        for name, values in frontend.items():
            writer.add_tensor_info(name, values.shape, values.dtype, values.nbytes)
        for s in specs:
            dtype = np.dtype(np.float16 if s.matrix else np.float32)
            writer.add_tensor_info(s.name, s.shape, dtype, int(np.prod(s.shape)) * dtype.itemsize)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for values in frontend.values():
            writer.write_tensor_data(values)
        pool = _Pool()
        for i, s in enumerate(specs):
            if s.matrix:
                data = pool.take(s.shape, np.float16)
            elif s.name.endswith("norm.weight"):
                data = np.ones(s.shape, dtype=np.float32)
            else:
                data = pool.take(s.shape, np.float32)
            writer.write_tensor_data(data)
            del data
            if i % 50 == 0:
                print(f"  {i}/{len(specs)} tensors", flush=True)
        writer.close()
        os.replace(tmp, path)
    except BaseException:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", choices=DIMS_CHOICES, required=True)
    ap.add_argument("--out", type=Path, required=True, help="output folder (created)")
    ap.add_argument("--types", default="f16,q8_0,q4_k", help=f"comma list of {', '.join(TYPES)}")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="threads for quantize")
    args = ap.parse_args(argv)
    types = [t.strip().lower() for t in args.types.split(",") if t.strip()]
    bad = [t for t in types if t not in TYPES]
    if bad:
        print(f"error: unknown type {bad[0]!r}; choose from {', '.join(TYPES)}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    f16 = file_path(args.out, args.dims, "f16")
    if f16.exists():
        print(f"keep  {f16}")
    else:
        t0 = time.perf_counter()
        write_f16(f16, args.dims)
        print(f"wrote {f16} ({f16.stat().st_size / 1e9:.2f} GB, {time.perf_counter() - t0:.0f} s)")
    for t in types:
        path = file_path(args.out, args.dims, t)
        if t == "f16":
            continue
        if path.exists():
            print(f"keep  {path}")
            continue
        t0 = time.perf_counter()
        quantize(f16, path, TYPES[t], args.threads)
        print(f"wrote {path} ({path.stat().st_size / 1e9:.2f} GB, {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
