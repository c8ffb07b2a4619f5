"""The repack cache: ggml's re-laid-out Q4_K matrices written on a model's first load and mapped on
the next ones. A model opened from its cache must compute exactly what a freshly repacked one does,
and a cache that is stale, damaged or cannot be written must never change the numbers or fail the
load."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import load_clip


def captured(m: engine.Model, clip: str = "speech_short.wav") -> dict[str, np.ndarray]:
    s = _engine.Stream(m._m, capture=True)
    s.feed(load_clip(clip))
    s.finish()
    return {k: np.asarray(v) for k, v in s.captured().items()}


def assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray], keys: tuple[str, ...]) -> None:
    for k in keys:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


STALE_TEMP_S = 3600  # repack_cache.h: a temporary file untouched this long is a dead write's
VOXTRAL_KEYS = ("enc_out", "logits")
FC_KEYS = ("encoder_out", "joint_enc")


def load(path: Path, cache: Path | None, **kw: object) -> engine.Model:
    return engine.Model(path, backend="cpu", n_threads=2, repack_cache=cache, **kw)  # type: ignore[arg-type]


def cache_entries(path: Path) -> list[tuple[str, int, int]]:
    """(name, offset, size) of every tensor in a cache file, from its header."""
    data = path.read_bytes()
    assert data[:8] == b"CAPTRPK1"
    n = int.from_bytes(data[8:16], "little")
    out = []
    for line in data[16 : 16 + n].decode().splitlines():
        if line.startswith("tensor "):
            f = line.split(" ")
            out.append((f[1], int(f[-2]), int(f[-1])))
    return out


@pytest.fixture
def q4k(gguf_path: Callable[[str, str], Path], tmp_path: Path) -> Path:
    """A private copy of the tiny Voxtral Q4_K file (tests here touch its date)."""
    dst = tmp_path / "model" / "tiny_wide.Q4_K.gguf"
    dst.parent.mkdir()
    dst.write_bytes(gguf_path("tiny_wide", "Q4_K").read_bytes())
    return dst


def test_first_load_writes_the_cache_and_later_loads_map_it(q4k: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fresh = load(q4k, None)
    assert fresh.info["repack_cache"] == "none" and fresh.info["repacked_tensors"] > 1
    first = load(q4k, cache)
    assert first.info["repack_cache"] == "written", first.info["repack_cache_error"]
    path = Path(first.info["repack_cache_path"])
    assert path.parent == cache and path.is_file()
    entries = cache_entries(path)
    assert len(entries) == first.info["repacked_tensors"]  # the tied head's twin included
    assert all(off % 4096 == 0 for _, off, _ in entries)
    assert path.stat().st_size == entries[-1][1] + entries[-1][2]
    second = load(q4k, cache)
    assert second.info["repack_cache"] == "used"
    assert second.info["repack_cache_path"] == str(path)
    assert second.info["repacked_tensors"] == first.info["repacked_tensors"]
    assert second.info["weights_mapped"] is True
    assert second.info["weight_bytes"] == pytest.approx(first.info["weight_bytes"], rel=0.01)
    want = captured(fresh)
    assert_same(captured(first), want, VOXTRAL_KEYS)
    assert_same(captured(second), want, VOXTRAL_KEYS)
    assert list(second.transcribe(load_clip("speech_mid.wav")).token_ids) == list(
        fresh.transcribe(load_clip("speech_mid.wav")).token_ids
    )
    assert [p.name for p in cache.iterdir()] == [path.name]  # no temporary file left


def test_fastconformer_q4_k_goes_through_the_cache_too(fc_f32: Callable[[str], Path], tmp_path: Path) -> None:
    path = tmp_path / "parakeet_eou_tiny.Q4_K.gguf"
    engine.quantize(fc_f32("parakeet_eou_tiny"), path, "Q4_K")  # its 256-wide rows take Q4_K
    cache = tmp_path / "cache"
    fresh, first, second = load(path, None), load(path, cache), load(path, cache)
    assert fresh.info["repacked_tensors"] > 1
    assert (first.info["repack_cache"], second.info["repack_cache"]) == ("written", "used")
    want = captured(fresh, "speech_mid.wav")
    assert_same(captured(second, "speech_mid.wav"), want, FC_KEYS)


def test_a_changed_model_file_rewrites_its_cache(q4k: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert load(q4k, cache).info["repack_cache"] == "written"
    st = q4k.stat()
    os.utime(q4k, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    again = load(q4k, cache)
    assert again.info["repack_cache"] == "written"
    assert len(list(cache.iterdir())) == 1  # the same name: replaced, not piled up
    assert load(q4k, cache).info["repack_cache"] == "used"


@pytest.mark.parametrize("damage", ["truncated", "header", "checked tensor", "empty", "directory"])
def test_a_damaged_cache_is_not_used_and_is_rewritten(q4k: Path, tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    path = Path(load(q4k, cache).info["repack_cache_path"])
    want = captured(load(q4k, None))
    if damage == "truncated":
        os.truncate(path, path.stat().st_size - 1)
    elif damage == "header":
        data = bytearray(path.read_bytes())
        data[40] ^= 1
        path.write_bytes(bytes(data))
    elif damage == "checked tensor":
        # the loader repacks the smallest tensor afresh and compares: a changed layout shows there
        _, off, size = min(cache_entries(path), key=lambda e: e[2])
        data = bytearray(path.read_bytes())
        data[off + size // 2] ^= 0x10
        path.write_bytes(bytes(data))
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()
        path.mkdir()
    m = load(q4k, cache)
    if damage == "directory":  # cannot be replaced by a file: repacked afresh, the failure said
        assert m.info["repack_cache"] == "failed" and m.info["repack_cache_error"]
    else:
        assert m.info["repack_cache"] == "written"
        assert load(q4k, cache).info["repack_cache"] == "used"
    assert_same(captured(m), want, VOXTRAL_KEYS)


def test_an_unwritable_cache_folder_fails_softly(q4k: Path, tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    m = load(q4k, not_a_folder)
    assert m.info["repack_cache"] == "failed"
    assert "cache folder" in m.info["repack_cache_error"]
    assert_same(captured(m), captured(load(q4k, None)), VOXTRAL_KEYS)


def test_nothing_is_cached_where_nothing_is_repacked(
    gguf_path: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    f32 = load(gguf_path("tiny_wide", "f32"), cache)
    assert f32.info["repack_cache"] == "none" and f32.info["repack_cache_path"] == ""
    monkeypatch.setenv("CAPTIONIST_NO_REPACK", "1")
    plain = load(gguf_path("tiny_wide", "Q4_K"), cache)
    assert plain.info["repack_cache"] == "none" and plain.info["repacked_tensors"] == 0
    assert not cache.exists()


def test_no_cache_without_mapping(q4k: Path, tmp_path: Path) -> None:
    """``mmap=False`` asks for weights read, not mapped; a cache is a mapping."""
    m = load(q4k, tmp_path / "cache", mmap=False)
    assert m.info["repack_cache"] == "none" and m.info["repacked_tensors"] > 1
    assert not (tmp_path / "cache").exists()


def test_loads_racing_on_one_cache_all_succeed(q4k: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    states: list[str] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            m = engine.Model(q4k, backend="cpu", n_threads=1, repack_cache=cache)
            states.append(m.info["repack_cache"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(states) == 4 and set(states) <= {"written", "used"}
    assert [p.suffix for p in cache.iterdir()] == [".repack"]
    assert load(q4k, cache).info["repack_cache"] == "used"


def test_repack_cache_argument_is_checked(q4k: Path) -> None:
    with pytest.raises(TypeError, match="repack_cache must be"):
        engine.Model(q4k, repack_cache=3)  # type: ignore[arg-type]


def test_the_caches_of_a_model_are_found_by_its_path(q4k: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = Path(load(q4k, cache).info["repack_cache_path"])
    other = tmp_path / "other" / q4k.name  # the same file name elsewhere: another model
    other.parent.mkdir()
    other.write_bytes(q4k.read_bytes())
    other_cache = Path(load(other, cache).info["repack_cache_path"])
    assert other_cache != path
    (cache / (path.name + ".tmp-0123456789abcdef")).write_bytes(b"unfinished")
    found = engine.repack_cache_files(cache, q4k)
    assert found == sorted([path, cache / (path.name + ".tmp-0123456789abcdef")])
    assert engine.repack_cache_files(cache, other) == [other_cache]
    assert engine.repack_cache_files(tmp_path / "none", q4k) == []


def test_the_app_loads_through_its_cache_and_deleting_a_model_deletes_its_cache(
    q4k: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from captionist import paths
    from captionist.models import ModelStore
    from captionist.pipeline.controller import load_engine_model

    monkeypatch.setenv(paths.HOME_ENV, str(tmp_path / "home"))
    store = ModelStore(paths.models_dir(), demo=tmp_path / "no-demo.gguf")
    entry = store.import_gguf(q4k)
    kept = store.import_gguf(q4k.rename(q4k.with_name("kept.gguf")))
    first = load_engine_model(entry.path, "cpu")
    assert first.info["repack_cache"] == "written"
    assert Path(first.info["repack_cache_path"]).parent == paths.repack_cache_dir()
    assert load_engine_model(entry.path, "cpu").info["repack_cache"] == "used"
    assert load_engine_model(kept.path, "cpu").info["repack_cache"] == "written"
    store.delete(entry)
    assert [p.name for p in paths.repack_cache_dir().iterdir()] == [
        Path(load_engine_model(kept.path, "cpu").info["repack_cache_path"]).name
    ]


def test_a_load_sweeps_what_no_load_can_use_again(q4k: Path, tmp_path: Path) -> None:
    """Caches of model files that are gone, files named as caches that are not, and temporary files
    of writes that died go; what a load may still use stays."""
    cache = tmp_path / "cache"
    own = Path(load(q4k, cache).info["repack_cache_path"])

    def cached_copy(folder: str) -> tuple[Path, Path]:
        model = tmp_path / folder / q4k.name
        model.parent.mkdir()
        model.write_bytes(q4k.read_bytes())
        return model, Path(load(model, cache).info["repack_cache_path"])

    deleted_model, orphan = cached_copy("deleted")
    unplugged_model, unplugged = cached_copy("drive")
    deleted_model.unlink()  # gone from a folder that is still there: its cache can never be used
    unplugged_model.unlink()
    unplugged_model.parent.rmdir()  # its folder is gone too, as on a drive not plugged in: kept
    not_a_cache = cache / "something-0123456789ab-0123456789ab.repack"
    header = b"captionist repack cache 1\nno model\n"
    not_a_cache.write_bytes(b"CAPTRPK1" + len(header).to_bytes(8, "little") + header)
    old_temp = cache / (own.name + ".tmp-00000000000000aa")
    old_temp.write_bytes(b"a write whose process died")
    hours_ago = own.stat().st_mtime - STALE_TEMP_S - 60
    os.utime(old_temp, (hours_ago, hours_ago))
    new_temp = cache / (own.name + ".tmp-00000000000000bb")
    new_temp.write_bytes(b"a write going on now")
    unrelated = cache / "notes.txt"
    unrelated.write_text("not the engine's")

    again = load(q4k, cache)
    assert again.info["repack_cache"] == "used"
    assert sorted(again.info["repack_cache_removed"]) == sorted(map(str, [orphan, not_a_cache, old_temp]))
    assert sorted(cache.iterdir()) == sorted([own, unplugged, new_temp, unrelated])
    assert load(q4k, cache).info["repack_cache_removed"] == []


def test_the_sweep_runs_for_models_that_cache_nothing(
    q4k: Path, gguf_path: Callable[[str, str], Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    orphan = Path(load(q4k, cache).info["repack_cache_path"])
    q4k.unlink()
    f32 = load(gguf_path("tiny_wide", "f32"), cache)
    assert f32.info["repack_cache"] == "none"
    assert f32.info["repack_cache_removed"] == [str(orphan)] and not orphan.exists()
