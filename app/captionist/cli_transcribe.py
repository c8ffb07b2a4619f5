"""``captionist transcribe``: audio files -> transcripts (txt, json, srt, vtt or md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from captionist.cli_errors import CliError, import_attr
from captionist.transcript import FORMATS, render, segment_tokens, with_utterance_ends

BACKENDS = ("auto", "cpu", "metal", "cuda")
VOXTRAL_ARCHITECTURE = "voxtral_realtime"  # its latency is called a delay (--delay-ms, JSON delay_ms)


def add_model_options(p: argparse.ArgumentParser) -> None:
    """``--latency-ms``, ``--delay-ms`` (Voxtral's name for it) and ``--language``."""
    p.add_argument(
        "--latency-ms",
        type=int,
        metavar="MS",
        help="latency: the model's choices; default: the model's default",
    )
    p.add_argument("--delay-ms", type=int, metavar="MS", help="Voxtral's name for --latency-ms")
    p.add_argument(
        "--language",
        metavar="LANG",
        help="language, for models that offer a choice (e.g. de-DE or auto); default: the model's default",
    )


def latency_option(args: argparse.Namespace) -> int | None:
    """The latency asked for with ``--latency-ms`` or ``--delay-ms`` (None: the default)."""
    if args.latency_ms is not None and args.delay_ms is not None and args.latency_ms != args.delay_ms:
        raise CliError(
            f"--latency-ms {args.latency_ms} and --delay-ms {args.delay_ms} differ; "
            "give one (--delay-ms is Voxtral's name for --latency-ms)"
        )
    return args.latency_ms if args.latency_ms is not None else args.delay_ms


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "transcribe",
        help="transcribe audio files",
        description="Transcribe audio files (WAV, FLAC, OGG, MP3) with a Captionist GGUF model.",
    )
    p.add_argument("audio", nargs="+", type=Path, metavar="AUDIO", help="audio file(s) to transcribe")
    p.add_argument("--model", type=Path, help="model file (.gguf); default: the downloaded default model")
    add_model_options(p)
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


def render_transcript(
    fmt: str, transcript: Any, meta: dict[str, Any], timestamps: bool, token_ms: int
) -> str:
    """``transcript`` (an engine ``Transcript``) as a document in ``fmt``; each end of utterance
    starts a new caption; ``token_ms`` is the model's token duration."""
    from captionist.engine import StreamEvent

    ends = [at for at, event in transcript.events if event == StreamEvent.END_OF_UTTERANCE]
    captions = segment_tokens(with_utterance_ends(transcript.tokens, ends), token_ms=token_ms)
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
    wanted_latency = latency_option(args)
    inputs: list[Path] = list(args.audio)
    for src in inputs:  # fail before the (slow) model load
        if not src.is_file():
            raise CliError(f"audio file not found: {src}")
    fmt = choose_format(args.format, args.output, len(inputs))
    destinations = output_paths(inputs, args.output, fmt)
    model_path = resolve_model(args.model)
    model = engine.Model(str(model_path), backend=args.backend, n_threads=args.threads)
    latency_ms = model.resolve_latency(wanted_latency)  # ValueError naming the model's choices
    language = None if args.language is None else model.resolve_language(args.language) or None

    failures = 0
    for src, dest in zip(inputs, destinations, strict=True):
        try:
            pcm = load_audio(src)
            transcript = model.transcribe(pcm, latency_ms=latency_ms, language=language)
        except (ValueError, engine.EngineError) as exc:
            print(f"captionist: error: {exc}", file=sys.stderr)
            failures += 1
            continue
        meta = {
            "file": str(src),
            "model": str(model_path),
            "latency_ms": latency_ms,
            "language": language or model.default_language,
            **({"delay_ms": latency_ms} if model.architecture == VOXTRAL_ARCHITECTURE else {}),
            "duration_ms": len(pcm) * 1000 // engine.SAMPLE_RATE,
        }
        text = render_transcript(fmt, transcript, meta, args.timestamps, model.token_ms)
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
