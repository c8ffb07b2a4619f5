"""Storage conversion helpers: bf16 rounding, chunked row conversion, RoPE row permutation."""

from __future__ import annotations

import numpy as np
import pytest

from captionist.convert import tensor_data
from captionist.convert.safetensors_file import to_float32
from captionist.convert.tensor_map import rope_row_permutation
from tests.convert.synthetic_checkpoint import to_interleaved


def test_bf16_rounds_to_nearest_even() -> None:
    values = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -2.5, np.inf, np.nan], np.float32)
    bits = tensor_data.encode(values, "bf16")
    assert [hex(b) for b in bits] == ["0x3f80", "0x3f80", "0x3f82", "0x3f81", "0xc020", "0x7f80", "0x7fc0"]
    assert np.array_equal(to_float32(bits[:5]), np.array([1.0, 1.0, 1 + 2**-6, 1 + 2**-7, -2.5], np.float32))


@pytest.mark.parametrize("outtype", ["f32", "f16", "bf16"])
def test_chunked_conversion_with_row_order(outtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    source = rng.standard_normal((24, 5, 3)).astype(np.float32)
    order = rng.permutation(24)
    monkeypatch.setattr(tensor_data, "_CHUNK_BYTES", 4 * 15 * 2)  # two rows per chunk
    got = tensor_data.convert_rows(source, outtype, order)
    assert np.array_equal(got, tensor_data.encode(source[order], outtype))


def test_rope_permutation_undoes_interleaving() -> None:
    rng = np.random.default_rng(2)
    neox = rng.standard_normal((3 * 8, 4)).astype(np.float32)  # 3 heads of head_dim 8
    interleaved = to_interleaved(neox, 3)
    assert not np.array_equal(interleaved, neox)
    assert np.array_equal(interleaved[rope_row_permutation(24, 3)], neox)
    # head 0, NeoX rows 0..3 are the first elements of the pairs: interleaved rows 0, 2, 4, 6
    assert list(rope_row_permutation(8, 1)) == [0, 2, 4, 6, 1, 3, 5, 7]
