"""``captionist transcribe``: audio files -> transcripts (txt, json, srt, vtt or md).

Each file is decoded block by block straight into one engine stream (memory bounded by the block,
any length); an end of utterance is an event and decoding goes on to the end of the audio, so a
recording with pauses is transcribed whole. Outputs are written atomically (a temporary file in
the same folder, then ``os.replace``): a failure never leaves an empty or half-written file, and
a transcript that cannot be written is printed to stdout instead (exit status 2).

``-o``: with one input, a file (or an existing directory / a path ending in ``/``: the transcript
is named after the input); with several inputs, an existing directory or a path ending in ``/``.
Several JSON transcripts to stdout are JSON Lines (one object per line); other formats get a
``==> file <==`` header per input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from captionist.cli_errors import CliError, import_attr
from captionist.transcript import FORMATS, render, segment_tokens, with_utterance_ends

BACKEND_HELP = (
    "compute device: auto (default: the first GPU, else the CPU), cpu, or a backend or device "
    "name from 'captionist devices --compute' (vulkan, vulkan0, cuda0, metal, ...)"
)
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


def _note(message: str) -> None:
    print(f"captionist: {message}", file=sys.stderr)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "transcribe",
        help="transcribe audio files",
        description="Transcribe audio files (WAV, FLAC, OGG, MP3) with a Captionist GGUF model.",
    )
    p.add_argument("audio", nargs="+", type=Path, metavar="AUDIO", help="audio file(s) to transcribe")
    p.add_argument("--model", type=Path, help="model file (.gguf); default: the downloaded default model")
    add_model_options(p)
    p.add_argument("--backend", default="auto", help=BACKEND_HELP)
    p.add_argument("--threads", type=int, help="CPU threads (default: the engine's choice)")
    p.add_argument("--format", choices=FORMATS, help="output format (default: from -o's suffix, else txt)")
    p.add_argument("--timestamps", action="store_true", help="timestamps in txt and md output")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output file; a directory (existing, or ending in /) gets one file per input; "
        "with several inputs it must be a directory. Default: stdout (several JSON inputs: JSON Lines)",
    )
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


def _names_a_directory(output: str) -> bool:
    return output.endswith(("/", os.sep)) or Path(output).is_dir()


def choose_format(fmt: str | None, output: str | None, n_inputs: int) -> str:
    if fmt:
        return fmt
    if output is None or n_inputs != 1 or _names_a_directory(output):
        return "txt"
    suffix = Path(output).suffix.lower().lstrip(".")
    return suffix if suffix in FORMATS else "txt"


def output_paths(inputs: list[Path], output: str | None, fmt: str) -> list[Path | None]:
    """Where each input's transcript goes (``None``: stdout); ``CliError`` for an unusable ``-o``."""
    if output is None:
        return [None] * len(inputs)
    out = Path(output)
    if not _names_a_directory(output):
        if len(inputs) > 1:
            what = "is a file" if out.exists() else "does not exist"
            raise CliError(
                f"-o {output} {what}: with several inputs, -o must be an existing directory "
                f"(or end in / to create one)"
            )
        if out.exists() and not out.is_file():
            raise CliError(f"-o {output} is not a regular file; give a new path or a regular file")
        return [out]
    paths = [out / f"{src.stem}.{fmt}" for src in inputs]
    if len(set(paths)) != len(paths):
        raise CliError("two inputs share a file name, so their transcripts would overwrite each other")
    for dest in paths:
        if dest.exists() and not dest.is_file():
            raise CliError(f"{dest} exists and is not a regular file")
    return paths


@dataclass(frozen=True)
class FileTranscript:
    """One file's transcription: the engine ``Transcript``, the audio length and how many reports
    on damaged data the decoder made."""

    transcript: Any
    samples: int
    decoder_messages: int


def transcribe_file(model: Any, src: Path, latency_ms: int, language: str | None) -> FileTranscript:
    """``src`` decoded block by block into one stream of ``model`` and decoded to the end.

    Ends of utterance are placed with ``utterance_ends``, at the token where the engine reported
    them. Raises ``AudioFileError`` (a ``ValueError``) or ``EngineError``."""
    from captionist.audio.files import open_audio
    from captionist.engine import StreamEvent, Transcript
    from captionist.pipeline.utterance import utterance_ends

    stream = model.stream(latency_ms=latency_ms, language=language)
    tokens: list[Any] = []
    events: list[tuple[int, StreamEvent]] = []

    def add(update: Any) -> None:
        ends = utterance_ends(update)
        events.extend((len(tokens) + at, StreamEvent.END_OF_UTTERANCE) for at in ends)
        tokens.extend(update.new_tokens)

    with open_audio(src) as audio:
        for block in audio.blocks():
            add(stream.feed(block))
    last = stream.finish()
    add(last)
    events.append((len(tokens), StreamEvent.FINISHED))
    transcript = Transcript(
        text=last.text, token_ids=[t.id for t in tokens], tokens=list(tokens), events=events
    )
    return FileTranscript(transcript, audio.samples, audio.decoder_messages)


def render_transcript(
    fmt: str, transcript: Any, meta: dict[str, Any], timestamps: bool, token_ms: int
) -> str:
    """``transcript`` (an engine ``Transcript``) as a document in ``fmt``; each end of utterance
    starts a new caption; ``token_ms`` is the model's token duration. JSON's ``text`` is stripped."""
    from captionist.engine import StreamEvent

    ends = [at for at, event in transcript.events if event == StreamEvent.END_OF_UTTERANCE]
    captions = segment_tokens(with_utterance_ends(transcript.tokens, ends), token_ms=token_ms)
    if fmt != "json":
        return render(fmt, captions, timestamps=timestamps, meta={"title": meta["file"], **meta})
    doc = {
        **meta,
        "text": transcript.text.strip(),
        "token_ids": list(transcript.token_ids),
        "tokens": [
            {"id": t.id, "piece": t.piece, "time_ms": t.time_ms, "is_control": t.is_control}
            for t in transcript.tokens
        ],
    }
    return render("json", captions, meta=doc)


def _print(out: TextIO, text: str) -> None:
    out.write(text if text.endswith("\n") else text + "\n")
    out.flush()


def write_output(dest: Path, text: str) -> None:
    """``text`` written atomically to ``dest`` (its folder created); ``CliError`` if it cannot be."""
    from captionist.transcript import TranscriptWriteError
    from captionist.transcript.session import write_atomic

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dest, text)
    except TranscriptWriteError as exc:  # "cannot write transcript file <dest>: <reason>"
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot write {dest}: {exc.strerror or exc}") from None


def cmd_transcribe(args: argparse.Namespace) -> int:
    from captionist import engine, paths
    from captionist.audio.files import check_audio_path

    if args.threads is not None and args.threads < 1:
        raise CliError(f"--threads must be >= 1; got {args.threads}")
    wanted_latency = latency_option(args)
    inputs: list[Path] = list(args.audio)
    for src in inputs:  # fail before the (slow) model load
        try:
            check_audio_path(src)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    fmt = choose_format(args.format, args.output, len(inputs))
    destinations = output_paths(inputs, args.output, fmt)
    json_lines = fmt == "json" and args.output is None and len(inputs) > 1
    model_path = resolve_model(args.model)
    guarded = import_attr("captionist.pipeline.guarded_loader", "guarded_loader", "the GPU crash guard")
    user_guard = import_attr("captionist.backend_guard", "user_guard", "the GPU crash guard")

    def load(path: Path, backend: str) -> Any:
        cache = paths.repack_cache_dir()
        return engine.Model(str(path), backend=backend, n_threads=args.threads, repack_cache=cache)

    # a model bound for a GPU runs its first second inside a crash trial, as in the app
    model = guarded(user_guard(), load, notice=_note)(model_path, args.backend)
    latency_ms = model.resolve_latency(wanted_latency)  # ValueError naming the model's choices
    language = None if args.language is None else model.resolve_language(args.language) or None

    failures = 0
    for src, dest in zip(inputs, destinations, strict=True):
        try:
            done = transcribe_file(model, src, latency_ms, language)
        except (ValueError, engine.EngineError) as exc:
            print(f"captionist: error: {' '.join(str(exc).split())}", file=sys.stderr)
            failures += 1
            continue
        if done.decoder_messages:
            print(
                f"captionist: warning: {src}: the decoder skipped damaged data "
                f"({done.decoder_messages} reports); the transcript may have gaps",
                file=sys.stderr,
            )
        meta = {
            "file": str(src),
            "model": str(model_path),
            "latency_ms": latency_ms,
            "language": language or model.default_language,
            **({"delay_ms": latency_ms} if model.architecture == VOXTRAL_ARCHITECTURE else {}),
            "duration_ms": done.samples * 1000 // engine.SAMPLE_RATE,
        }
        text = render_transcript(fmt, done.transcript, meta, args.timestamps, model.token_ms)
        if dest is None:
            if json_lines:
                text = json.dumps(json.loads(text), ensure_ascii=False)
            elif len(inputs) > 1:
                text = f"==> {src} <==\n{text}"
            _print(sys.stdout, text)
            continue
        try:
            write_output(dest, text)
        except CliError as exc:  # keep the work: the transcript goes to stdout instead
            print(f"captionist: error: {exc}; the transcript follows on stdout", file=sys.stderr)
            _print(sys.stdout, text)
            failures += 1
    return 2 if failures else 0
