"""``captionist transcribe``: audio files -> transcripts (txt, json, srt, vtt or md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from captionist.cli_errors import CliError, import_attr
from captionist.transcript import FORMATS, render, segment_tokens

BACKENDS = ("auto", "cpu", "metal", "cuda")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "transcribe",
        help="transcribe audio files",
        description="Transcribe audio files (WAV, FLAC, OGG, MP3) with a Captionist GGUF model.",
    )
    p.add_argument("audio", nargs="+", type=Path, metavar="AUDIO", help="audio file(s) to transcribe")
    p.add_argument("--model", type=Path, help="model file (.gguf); default: the downloaded default model")
    p.add_argument("--delay-ms", type=int, help="transcription delay: 80..1200 in steps of 80, or 2400")
    p.add_argument("--backend", choices=BACKENDS, default="auto", help="compute backend (default: auto)")
    p.add_argument("--threads", type=int, help="CPU threads (default: the engine's choice)")
    p.add_argument("--format", choices=FORMATS, help="output format (default: from -o's suffix, else txt)")
    p.add_argument("--timestamps", action="store_true", help="timestamps in txt and md output")
    p.add_argument("-o", "--output", type=Path, help="output file; with several inputs, a directory")
    p.set_defaults(func=cmd_transcribe)


def resolve_model(model: Path | None) -> Path:
    """The ``--model`` path, or the default model if one is installed; ``CliError`` otherwise."""
    if model is not None:
        if not model.is_file():
            raise CliError(f"model file not found: {model}")
        return model
    try:
        default_model_path = import_attr("captionist.models", "default_model_path", "a default model")
        found = default_model_path()
    except (CliError, OSError, ValueError, RuntimeError) as exc:
        raise CliError(f"no model given: pass --model PATH.gguf ({exc})") from None
    if found is None or not Path(found).is_file():
        where = f" ({found} does not exist)" if found is not None else ""
        raise CliError(f"no model given: pass --model PATH.gguf or download the default model{where}")
    return Path(found)


def choose_format(fmt: str | None, output: Path | None, n_inputs: int) -> str:
    if fmt:
        return fmt
    suffix = output.suffix.lower().lstrip(".") if output is not None and n_inputs == 1 else ""
    return suffix if suffix in FORMATS else "txt"


def output_paths(inputs: list[Path], output: Path | None, fmt: str) -> list[Path | None]:
    """Where each input's transcript goes (``None``: stdout)."""
    if output is None:
        return [None] * len(inputs)
    if len(inputs) == 1 and not output.is_dir():
        return [output]
    if output.exists() and not output.is_dir():
        raise CliError(f"-o {output} must be a directory when transcribing several files")
    paths = [output / f"{src.stem}.{fmt}" for src in inputs]
    if len(set(paths)) != len(paths):
        raise CliError("two inputs share a file name, so their transcripts would overwrite each other")
    return paths


def render_transcript(fmt: str, transcript: Any, meta: dict[str, Any], timestamps: bool) -> str:
    """``transcript`` (an engine ``Transcript``) as a document in ``fmt``."""
    captions = segment_tokens(transcript.tokens)
    if fmt != "json":
        return render(fmt, captions, timestamps=timestamps, meta={"title": meta["file"], **meta})
    doc = {
        **meta,
        "text": transcript.text,
        "token_ids": list(transcript.token_ids),
        "tokens": [
            {"id": t.id, "piece": t.piece, "time_ms": t.time_ms, "is_control": t.is_control}
            for t in transcript.tokens
        ],
    }
    return render("json", captions, meta=doc)


def cmd_transcribe(args: argparse.Namespace) -> int:
    from captionist import engine
    from captionist.audio.files import load_audio

    if args.threads is not None and args.threads < 1:
        raise CliError(f"--threads must be >= 1; got {args.threads}")
    if args.delay_ms is not None:
        engine.delay_ms_to_tokens(args.delay_ms)  # ValueError with the allowed values
    inputs: list[Path] = list(args.audio)
    for src in inputs:  # fail before the (slow) model load
        if not src.is_file():
            raise CliError(f"audio file not found: {src}")
    fmt = choose_format(args.format, args.output, len(inputs))
    destinations = output_paths(inputs, args.output, fmt)
    model_path = resolve_model(args.model)
    model = engine.Model(str(model_path), backend=args.backend, n_threads=args.threads)
    kwargs = {} if args.delay_ms is None else {"delay_ms": args.delay_ms}
    delay_ms = args.delay_ms if args.delay_ms is not None else getattr(model, "default_delay_ms", None)

    failures = 0
    for src, dest in zip(inputs, destinations, strict=True):
        try:
            pcm = load_audio(src)
            transcript = model.transcribe(pcm, **kwargs)
        except (ValueError, engine.EngineError) as exc:
            print(f"captionist: error: {exc}", file=sys.stderr)
            failures += 1
            continue
        meta = {
            "file": str(src),
            "model": str(model_path),
            "delay_ms": delay_ms,
            "duration_ms": len(pcm) * 1000 // engine.SAMPLE_RATE,
        }
        text = render_transcript(fmt, transcript, meta, args.timestamps)
        if dest is None:
            if len(inputs) > 1:
                text = f"==> {src} <==\n{text}"
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            continue
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {dest}: {exc.strerror or exc}") from None
    return 2 if failures else 0
