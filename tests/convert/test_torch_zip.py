"""The torch-free torch.save reader: tensors round-trip, and anything but tensor data is refused."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from captionist.convert import ConversionError
from captionist.convert.torch_zip import read_torch_zip
from tests.convert.torch_checkpoint import state_dict_pickle, torch_zip_bytes


@pytest.mark.parametrize("deflate", [False, True])
def test_tensors_round_trip(deflate: bool, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    tensors = {
        "w": rng.standard_normal((3, 4, 5)).astype(np.float32),
        "h": rng.standard_normal(7).astype(np.float16),
        "n": np.array(3, dtype=np.int64),
    }
    path = tmp_path / "c.ckpt"
    path.write_bytes(b"prefix" + torch_zip_bytes(tensors, deflate=deflate) + b"suffix")
    got = read_torch_zip(path, offset=6, size=path.stat().st_size - 12)
    assert sorted(got) == ["h", "n", "w"]
    assert got["w"].shape == (3, 4, 5) and got["n"].dtype == "I64"
    for name in ("w", "h"):
        assert np.array_equal(got[name].array(), tensors[name])
        assert got[name].array().dtype == tensors[name].dtype
    assert not got["w"].array().flags.writeable
    with pytest.raises(ConversionError, match="only float tensors"):
        got["n"].array()


def _zip(pickle_bytes: bytes, records: dict[str, bytes] | None = None, byteorder: str = "little") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pickle_bytes)
        zf.writestr("archive/byteorder", byteorder)
        for key, blob in (records or {}).items():
            zf.writestr(f"archive/data/{key}", blob)
    return buf.getvalue()


HOSTILE = {
    "os.system": b"\x80\x02cos\nsystem\n(X\x04\x00\x00\x00truetR.",
    "subprocess.Popen": b"\x80\x02csubprocess\nPopen\n.",
    # BUILD on a resolved global
    "object state": b"\x80\x02ccollections\nOrderedDict\n}X\x01\x00\x00\x00a\x8a\x01\x01sb.",
    "copyreg": b"\x80\x02ccopyreg\n_reconstructor\n.",
    "bad storage id": state_dict_pickle([]).replace(b"u.", b"X\x01\x00\x00\x00x(X\x03\x00\x00\x00badtQu."),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_pickles_are_refused(case: str, tmp_path: Path) -> None:
    path = tmp_path / "evil.ckpt"
    path.write_bytes(_zip(HOSTILE[case]))
    with pytest.raises(ConversionError, match="refusing to load it") as info:
        read_torch_zip(path)
    assert "\n" not in str(info.value)


def test_tensor_past_its_storage_is_refused(tmp_path: Path) -> None:
    pickled = state_dict_pickle([("w", "FloatStorage", "0", 5, (2, 3), 0)])
    path = tmp_path / "c.ckpt"
    path.write_bytes(_zip(pickled, {"0": b"\0" * 20}))
    with pytest.raises(ConversionError, match="reaches element 5 of a 5-element storage"):
        read_torch_zip(path)


def test_short_and_missing_records_fail_when_read(tmp_path: Path) -> None:
    pickled = state_dict_pickle(
        [("w", "FloatStorage", "0", 6, (2, 3), 0), ("v", "FloatStorage", "1", 2, (2,), 0)]
    )
    path = tmp_path / "c.ckpt"
    path.write_bytes(_zip(pickled, {"0": b"\0" * 20}))
    got = read_torch_zip(path)
    with pytest.raises(ConversionError, match="truncated"):
        got["w"].array()
    with pytest.raises(ConversionError, match="record '1' is missing"):
        got["v"].array()


def test_big_endian_and_non_checkpoints_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.ckpt"
    path.write_bytes(_zip(state_dict_pickle([]), byteorder="big"))
    with pytest.raises(ConversionError, match="big-endian"):
        read_torch_zip(path)
    path.write_bytes(b"not a zip at all")
    with pytest.raises(ConversionError, match="not a readable torch checkpoint"):
        read_torch_zip(path)
