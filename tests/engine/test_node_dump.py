"""CAPTIONIST_DUMP_NODES (engine/src/node_dump.h) and tools/compare_node_dumps.py: the way to find
the op where a backend parts from the CPU. Each run is its own process (the dump is opened once per
process), on the CPU: two runs of one stream must dump the same nodes, and an F16 attention cache
must be found where it enters the graph, the first cache write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tools.compare_node_dumps import DumpError, compare, main, read_dump
from tools.dump_stream_nodes import dump_stream


@pytest.fixture(scope="module")
def dump(
    gguf_path: Callable[[str, str], Path], tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Path]:
    """dump(name, computes=4, kv_type="f32") -> the nodes of a 1 s stream of tiny_small on the CPU
    (its first four graphs: the delay's conditioning, the silent tokens' audio batch, the copy of
    their caches for later streams, the next audio batch)"""
    model = gguf_path("tiny_small", "f32")
    root = tmp_path_factory.mktemp("nodes")

    def run(name: str, computes: int = 4, kv_type: str = "f32") -> Path:
        out = root / f"{name}.nodes"
        assert dump_stream(model, out, "cpu", computes=computes, kv_type=kv_type, timeout=120) == 0
        return out

    return run


def test_two_runs_dump_the_same_nodes(dump: Callable[..., Path]) -> None:
    a, b = read_dump(dump("a")), read_dump(dump("b"))
    assert sorted({r.compute for r in a}) == [0, 1, 2, 3]  # CAPTIONIST_DUMP_COMPUTES=4
    assert [(r.compute, r.node, r.op, r.shape) for r in a] == [(r.compute, r.node, r.op, r.shape) for r in b]
    ops = {r.op for r in a}
    assert {"MUL_MAT", "SOFT_MAX", "RMS_NORM", "CPY"} <= ops, ops
    assert not any(r.op in ("VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE") for r in a)
    with_values = [r for r in a if r.values is not None]
    assert len(with_values) > 100
    assert all(r.values.size == r.shape[0] * r.shape[1] * r.shape[2] * r.shape[3] for r in with_values)
    result = compare(a, b, 0.0)
    assert result.over == {} and sum(result.unmatched.values()) == 0
    assert result.matched == len(with_values)


def test_an_f16_cache_is_found_at_its_first_write(dump: Callable[..., Path]) -> None:
    ref, f16 = read_dump(dump("f32", computes=2)), read_dump(dump("f16", computes=2, kv_type="f16"))
    result = compare(ref, f16, 1e-6)
    rows = result.over[1]
    first = next(d for d in rows if d.sources_agree)
    # the write into the cache's strided slots rounds to F16: its values are gathered and compared
    assert first.record.op == "CPY", first.record
    # the attention product that reads the cache is blamed on its input, through the cache view
    after = next(d for d in rows if d.record.op == "MUL_MAT" and d.record.node > first.record.node)
    assert not after.sources_agree


def test_nodes_only_one_graph_has_are_left_out_and_the_rest_aligned(dump: Callable[..., Path]) -> None:
    """As a device graph's extra copies are: the comparison still pairs every other node."""
    import dataclasses

    ref = read_dump(dump("c", computes=2))
    extra = dataclasses.replace(ref[5], op="CONT", name="extra")  # one more node in compute 0 or 1
    other = (
        ref[:5]
        + [extra]
        + [dataclasses.replace(r, node=r.node + 1) if r.compute == ref[5].compute else r for r in ref[5:]]
    )
    result = compare(ref, other, 0.0)
    assert result.over == {}
    assert sum(result.unmatched.values()) == 0
    assert result.matched == sum(1 for r in ref if r.values is not None)


def test_a_truncated_dump_is_an_error(
    dump: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = dump("d", computes=1).read_bytes()
    cut = tmp_path / "cut.nodes"
    cut.write_bytes(whole[: len(whole) - 7])
    with pytest.raises(DumpError):
        read_dump(cut)
    assert main([str(cut), str(cut)]) == 2
    assert "error:" in capsys.readouterr().err
