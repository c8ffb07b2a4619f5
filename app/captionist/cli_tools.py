"""``captionist convert | quantize | live | devices``: thin wrappers over the package's modules.

Each command imports its implementation on first use, so a missing optional part gives a clear
one-line error instead of breaking the whole CLI.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from captionist.cli_errors import CliError, import_attr
from captionist.cli_transcribe import BACKEND_HELP, add_model_options, latency_option

OUTTYPES = ("f32", "f16", "bf16")
QUANT_TYPES = ("Q8_0", "Q5_K", "Q4_K", "Q4_K_M", "Q5_K_M", "Q6_K", "F16")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "convert",
        help="convert a Voxtral Realtime or FastConformer RNN-T checkpoint to GGUF",
        description=(
            "Convert a checkpoint to a GGUF model: a Hugging Face or Mistral Voxtral Realtime folder, "
            "a Hugging Face Nemotron ASR Streaming / Nemotron 3.5 ASR folder, "
            "or a NeMo Parakeet Realtime EOU .nemo file."
        ),
    )
    p.add_argument("src", type=Path, metavar="SRC", help="checkpoint folder or .nemo file")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.gguf", help="GGUF file to write")
    p.add_argument("--outtype", choices=OUTTYPES, default="f16", help="weight type (default: f16)")
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("quantize", help="quantize a GGUF model", description="Quantize a GGUF model.")
    p.add_argument("src", type=Path, metavar="IN.gguf")
    p.add_argument("dst", type=Path, metavar="OUT.gguf")
    p.add_argument("type", type=str.upper, choices=QUANT_TYPES, metavar="TYPE", help=", ".join(QUANT_TYPES))
    p.set_defaults(func=cmd_quantize)

    p = sub.add_parser(
        "live",
        help="caption an audio device in the terminal",
        description=(
            "Live captions from an input device, printed to the terminal (no GUI). Latency and "
            "language default to the model's own defaults (the desktop app's saved choices are "
            "not used). Without -o the transcript goes to ~/Documents/Captionist as timestamped txt."
        ),
    )
    p.add_argument("--model", help="model file (.gguf); default: the downloaded default model")
    p.add_argument(
        "--device",
        action="append",
        help="input device name or index (see 'captionist devices'); repeat to mix several, "
        "e.g. a microphone and system audio",
    )
    add_model_options(p)
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        help="also write the transcript here, format from the suffix (e.g. transcript.srt); "
        "a new path or a regular file",
    )
    p.add_argument("--duration", type=float, help="stop after this many seconds (default: until Ctrl+C)")
    p.add_argument("--backend", default="auto", help=BACKEND_HELP)
    p.add_argument(
        "--serve",
        metavar="[HOST:]PORT",
        help="serve the caption page, events and text for OBS and browsers (port 0: a free one; "
        "host default 127.0.0.1, anything else needs the token shown in the URL)",
    )
    p.add_argument("--serve-token", metavar="TOKEN", help="the access token for --serve beyond this machine")
    p.add_argument("--captions-file", type=Path, metavar="FILE", help="keep the current lines in FILE")
    p.add_argument(
        "--keyword",
        action="append",
        default=[],
        metavar="WORD",
        help="announce when WORD (or a phrase) is spoken; repeat for more",
    )
    p.set_defaults(func=cmd_live)

    p = sub.add_parser(
        "devices",
        help="list audio input devices (--compute: the devices models run on)",
        description="List audio input devices, or with --compute the compute devices models can run on.",
    )
    p.add_argument("--compute", action="store_true", help="list compute devices (CPU, GPUs) instead")
    p.add_argument(
        "--turn-on",
        metavar="BACKEND",
        help="turn a GPU backend that crashed Captionist back on, from the next run (see --compute)",
    )
    p.set_defaults(func=cmd_devices)


def _require_file(path: Path, what: str) -> None:
    if not path.exists():
        raise CliError(f"{what} not found: {path}")


def cmd_convert(args: argparse.Namespace) -> int:
    convert_checkpoint = import_attr("captionist.convert", "convert_checkpoint", "checkpoint conversion")
    conversion_error = import_attr("captionist.convert", "ConversionError", "checkpoint conversion")
    _require_file(args.src, "checkpoint")
    try:
        convert_checkpoint(args.src, args.output, args.outtype, progress=True)
    except (conversion_error, OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {args.output}")
    return 0


def cmd_quantize(args: argparse.Namespace) -> int:
    from captionist import engine

    quantize = import_attr("captionist.engine", "quantize", "quantization")
    _require_file(args.src, "model file")
    if args.src.resolve() == args.dst.resolve():
        raise CliError("OUT.gguf must differ from IN.gguf")
    try:
        quantize(str(args.src), str(args.dst), args.type)
    except (engine.EngineError, OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {args.dst} ({args.type})")
    return 0


def cmd_live(args: argparse.Namespace) -> int:
    if args.duration is not None and args.duration <= 0:
        raise CliError(f"--duration must be > 0 seconds; got {args.duration}")
    latency_ms = latency_option(args)
    serve = None
    if args.serve is not None:
        parse_bind = import_attr("captionist.feed.access", "parse_bind", "the caption feed")
        try:
            serve = parse_bind(args.serve)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    if args.serve_token is not None and not re.fullmatch(r"[A-Za-z0-9_-]{8,128}", args.serve_token):
        raise CliError("--serve-token must be 8-128 letters, digits, '-' or '_'")
    run_live = import_attr("captionist.pipeline.headless", "run_live", "live captioning")
    return int(
        run_live(
            model=args.model,
            device=args.device,
            latency_ms=latency_ms,
            language=args.language,
            output=args.output,
            duration=args.duration,
            backend=args.backend,
            serve=serve,
            serve_token=args.serve_token,
            captions_file=args.captions_file,
            keywords=args.keyword,
        )
    )


def turn_backend_on(backend: str) -> int:
    """``devices --turn-on``: Preferences' "Turn … back on" for the command line."""
    guard = import_attr("captionist.backend_guard", "user_guard", "the GPU crash guard")()
    off = guard.disabled()
    if backend not in off:
        listed = ", ".join(sorted(off)) or "none"
        raise CliError(f"{backend!r} is not turned off (off since they crashed Captionist: {listed})")
    guard.enable(backend)  # OSError: reported as a user error
    print(f"{backend} is on again from the next run of Captionist")
    return 0


def format_compute_devices(devices: list[Any]) -> str:
    """One line per device: its name for --backend, what it is, memory, and the default mark."""
    lines = []
    for d in devices:
        memory = f", {d.memory_total / 2**30:.1f} GiB" if d.memory_total else ""
        extra = f" [{d.cpu_features}]" if d.cpu_features else ""
        mark = "  (auto)" if d.is_default else ""
        lines.append(f"{d.name.lower():<10} {d.backend} {d.type.value}: {d.description}{memory}{extra}{mark}")
    return "\n".join(lines)


def cmd_devices(args: argparse.Namespace) -> int:
    if args.turn_on is not None:
        return turn_backend_on(args.turn_on.lower())
    if args.compute:
        compute_devices = import_attr("captionist.engine", "compute_devices", "the engine")
        print(format_compute_devices(compute_devices()))
        user_guard = import_attr("captionist.backend_guard", "user_guard", "the GPU crash guard")
        for crash in user_guard().disabled().values():
            print(f"# {crash.describe()} To use it again: captionist devices --turn-on {crash.backend}")
        return 0
    format_device_list = import_attr("captionist.audio.devices", "format_device_list", "device listing")
    print(format_device_list())
    return 0
