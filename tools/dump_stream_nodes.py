"""Run a short stream of a model on one backend and dump every computed node (CAPTIONIST_DUMP_NODES).

    python tools/dump_stream_nodes.py MODEL.gguf --backend cpu  --out /tmp/cpu.nodes
    python tools/dump_stream_nodes.py MODEL.gguf --backend cuda --out /tmp/cuda.nodes
    python tools/compare_node_dumps.py /tmp/cpu.nodes /tmp/cuda.nodes

The engine reads the dump settings when the process starts, so this script starts a child process
with them. Both runs build the same graphs: flash attention off and F32 attention caches unless
--flash / --kv-type say otherwise (the engine would otherwise choose per backend), the same audio
(tests/data/audio/speech_short.wav, or --audio) fed in the same pieces, and the backends' own node
reordering off (Vulkan's, and CUDA's where it is on).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIP = ROOT / "tests" / "data" / "audio" / "speech_short.wav"

CHILD = """
import sys
import soundfile
from captionist import engine
path, backend, audio, seconds, piece = sys.argv[1:6]
m = engine.Model(path, backend=backend, n_threads=1)
pcm, rate = soundfile.read(audio, dtype="float32")
if pcm.ndim > 1:
    pcm = pcm.mean(axis=1)
if rate != engine.SAMPLE_RATE:
    raise SystemExit(f"{audio}: {rate} Hz; a {engine.SAMPLE_RATE} Hz clip is needed")
pcm = pcm[: int(float(seconds) * rate)]
s = m.stream()
for i in range(0, len(pcm), int(piece)):
    s.feed(pcm[i : i + int(piece)])
s.finish()
"""


def dump_stream(
    model: Path,
    out: Path,
    backend: str = "cpu",
    computes: int = 4,
    audio: Path = CLIP,
    seconds: float = 1.0,
    piece: int = 1280,
    flash: str = "0",
    kv_type: str = "f32",
    timeout: float | None = None,
) -> int:
    """Runs the stream in a child process with the dump settings; its exit status (1 when it wrote
    no dump). subprocess.TimeoutExpired past `timeout` seconds."""
    env = {
        **os.environ,
        "CAPTIONIST_DUMP_NODES": str(out),
        "CAPTIONIST_DUMP_COMPUTES": str(computes),
        "CAPTIONIST_FLASH_ATTN": flash,
        "CAPTIONIST_KV_TYPE": kv_type,
        # the nodes in the order the graph has them: ggml's Vulkan backend otherwise regroups
        # independent nodes, and products of one shape would be paired crosswise
        "GGML_VK_DISABLE_GRAPH_OPTIMIZE": "1",
        "GGML_CUDA_GRAPH_OPT": "0",
    }
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-c", CHILD, str(model), backend, str(audio), str(seconds), str(piece)]
    rc = subprocess.run(cmd, env=env, timeout=timeout).returncode
    if rc == 0 and not out.is_file():
        print(f"error: the engine wrote no dump to {out} (cannot create it?)", file=sys.stderr)
        return 1
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path, help="a GGUF model file (Voxtral or FastConformer)")
    ap.add_argument("--backend", default="cpu", help="cpu, cuda, vulkan, metal or a device name")
    ap.add_argument("--out", type=Path, required=True, help="the dump file (replaced)")
    ap.add_argument("--computes", type=int, default=4, help="graph computes dumped (default 4)")
    ap.add_argument("--audio", type=Path, default=CLIP, help="a 16 kHz clip (default speech_short.wav)")
    ap.add_argument("--seconds", type=float, default=1.0, help="audio fed (default 1 s)")
    ap.add_argument("--piece", type=int, default=1280, help="samples per feed (default 1280: 80 ms)")
    ap.add_argument("--flash", default="0", help="CAPTIONIST_FLASH_ATTN for the run (default 0)")
    ap.add_argument("--kv-type", default="f32", help="CAPTIONIST_KV_TYPE for the run (default f32)")
    args = ap.parse_args(argv)
    if args.computes < 1 or args.piece < 1 or args.seconds <= 0:
        ap.error("--computes, --piece and --seconds must be positive")
    return dump_stream(
        args.model,
        args.out,
        args.backend,
        args.computes,
        args.audio,
        args.seconds,
        args.piece,
        args.flash,
        args.kv_type,
    )


if __name__ == "__main__":
    sys.exit(main())
