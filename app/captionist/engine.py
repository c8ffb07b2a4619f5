"""Pythonic API over the C++ engine (``captionist._engine``), the same for every model family.

Usage::

    from captionist.engine import Model, EngineError
    m = Model("model.gguf", backend="auto", n_threads=None)
    m.latencies_ms, m.languages, m.punctuation     # what this model supports (from m.info)
    t = m.transcribe(pcm)                          # pcm: 1-D float32, 16 kHz mono
    print(t.text, t.token_ids)

    s = m.stream(latency_ms=560, language=None)    # per-stream state; the Model stays shared and read-only
    u = s.feed(chunk)                              # any length; returns a StreamUpdate
    u = s.finish()                                 # end of input: decode to the end (== offline result)

Thread safety: a ``Model`` is immutable after load and may be shared by any number of threads.
A ``Stream`` is owned by one thread at a time (concurrent use raises ``EngineError``). The engine
releases the GIL while it computes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from captionist import engine_backends

SAMPLE_RATE = 16000
# Voxtral Realtime's token slot and delay choices. Code that handles any model reads
# Model.token_ms / Model.latencies_ms instead; these stay for Voxtral-specific tools and tests.
TOKEN_MS = 80
DELAY_CHOICES_MS: tuple[int, ...] = tuple(range(80, 1201, 80)) + (2400,)
MAX_THREADS = 256  # the engine's bound on compute threads (engine/src/gguf_file.h)


class EngineError(RuntimeError):
    """A model file, backend or input the engine cannot use; the message says which and why."""


class StreamEvent(str, enum.Enum):
    """What a stream reports besides tokens. A ``str`` enum: ``"end_of_utterance" in events`` works."""

    END_OF_UTTERANCE = "end_of_utterance"  # the model marked the end of an utterance; the stream goes on
    REANCHOR = "reanchor"  # Voxtral restarted its decoder from a fresh prompt (no text lost)
    SEGMENT_END = "segment_end"  # set_latency()/set_language() closed the current segment
    FINISHED = "finished"  # finish(): everything fed has been decoded


@dataclass(frozen=True)
class Token:
    """One emitted token: the model's vocabulary id, its text piece ('' for control tokens) and its
    audio time."""

    id: int
    piece: str
    time_ms: int
    is_control: bool = False


@dataclass(frozen=True)
class Transcript:
    text: str
    token_ids: list[int]
    tokens: list[Token]
    events: list[tuple[int, StreamEvent]] = field(default_factory=list)  # (tokens before it, event)


@dataclass(frozen=True)
class StreamUpdate:
    """What one ``feed``/``finish`` call changed.

    ``revision`` increments whenever committed text grows; ``text`` is all committed text so far;
    ``new_tokens`` are the tokens committed by this call; ``events`` holds ``StreamEvent`` values
    in the order they happened, and ``event_at[i]`` says how many of ``new_tokens`` came before
    ``events[i]`` (exact: the engine reports where each event happened).
    """

    revision: int
    text: str
    new_tokens: list[Token]
    token_ids: list[int]
    audio_ms_received: int
    audio_ms_decoded: int
    events: list[StreamEvent] = field(default_factory=list)
    event_at: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.event_at) != len(self.events):
            raise ValueError(f"{len(self.events)} events but {len(self.event_at)} positions")
        if any(not 0 <= at <= len(self.new_tokens) for at in self.event_at) or self.event_at != sorted(
            self.event_at
        ):
            raise ValueError(f"event positions {self.event_at} do not fit {len(self.new_tokens)} new tokens")

    @property
    def lag_ms(self) -> int:
        return max(0, self.audio_ms_received - self.audio_ms_decoded)

    def placed_events(self) -> list[tuple[int, StreamEvent]]:
        """``(event_at[i], events[i])`` pairs: each event with how many new tokens came before it."""
        return list(zip(self.event_at, self.events, strict=True))


def delay_ms_to_tokens(delay_ms: int) -> int:
    """Voxtral: map a delay in ms (80..1200 in steps of 80, or 2400) to ``num_delay_tokens``."""
    if delay_ms not in DELAY_CHOICES_MS:
        raise ValueError(f"delay_ms must be 80..1200 in steps of 80, or 2400; got {delay_ms}")
    return delay_ms // TOKEN_MS


def _engine_module() -> Any:
    try:
        from captionist import _engine
    except ImportError as exc:  # pragma: no cover - only without a built extension
        raise EngineError(f"the compiled engine is not available: {exc}") from exc
    engine_backends.ensure_loaded(_engine)  # once: ggml's backend modules, as the app's policy says
    return _engine


def _check_pcm(pcm: Any, *, allow_empty: bool) -> np.ndarray:
    """Validate audio for the engine: a 1-D float32 array of finite samples."""
    if not isinstance(pcm, np.ndarray):
        raise ValueError(f"audio must be a numpy array, got {type(pcm).__name__}")
    if pcm.ndim != 1:
        raise ValueError(f"audio must be 1-D mono samples, got an array of shape {pcm.shape}")
    if pcm.dtype != np.float32:
        raise ValueError(f"audio must be float32 samples at {SAMPLE_RATE} Hz, got dtype {pcm.dtype}")
    if not allow_empty and pcm.size == 0:
        raise ValueError("audio is empty")
    if pcm.size and not np.isfinite(pcm).all():
        bad = int(np.flatnonzero(~np.isfinite(pcm))[0])
        raise ValueError(f"audio sample {bad} is not a finite number (NaN or Inf)")
    return np.ascontiguousarray(pcm)


def _events(result: dict[str, Any]) -> list[tuple[int, StreamEvent]]:
    return [(int(at), StreamEvent(name)) for name, at in result["events"]]


def resolve_latency(
    latencies_ms: tuple[int, ...], default_latency_ms: int, latency_ms: int | None, delay_ms: int | None
) -> int:
    """``latency_ms`` (or Voxtral's ``delay_ms``) if the model offers it, else ``default_latency_ms``
    when neither is given; a ValueError names the supported choices. (Model.resolve_latency.)"""
    if latency_ms is not None and delay_ms is not None and latency_ms != delay_ms:
        raise ValueError("give latency_ms or delay_ms, not both")
    chosen = latency_ms if latency_ms is not None else delay_ms
    if chosen is None:
        return default_latency_ms
    if chosen not in latencies_ms:
        allowed = ", ".join(str(x) for x in latencies_ms)
        raise ValueError(f"latency {chosen} ms is not supported by this model; choose one of {allowed} ms")
    return int(chosen)


def resolve_language(languages: tuple[str, ...], language: str | None) -> str:
    """'' for the model's default; a ValueError for a language the model does not offer
    (Model.resolve_language)."""
    if language is None:
        return ""
    if not languages:
        raise ValueError("this model recognises the language itself; it takes no language choice")
    if language not in languages:
        raise ValueError(f"unknown language {language!r}; choose one of {', '.join(languages)}")
    return language


def repack_cache_files(folder: str | Path, model_path: str | Path) -> list[Path]:
    """The repack caches in ``folder`` (``Model(repack_cache=folder)``) made from the model file at
    ``model_path``, for any CPU or ggml build, with any unfinished temporary files: what to delete
    with the model. Call it before the model file goes (the name derives from its absolute path)."""
    prefix = _engine_module().repack_cache_prefix(str(model_path))
    try:
        names = sorted(p for p in Path(folder).iterdir() if p.name.startswith(prefix))
    except OSError:  # no folder yet
        return []
    return [p for p in names if p.name.endswith(".repack") or ".repack.tmp-" in p.name]


class Model:
    """A loaded model file of any supported family. Immutable and shareable across threads.

    ``info`` says what the file is: ``architecture``, ``variant``, ``latencies_ms`` (ascending),
    ``default_latency_ms``, ``languages`` (empty when the model picks the language itself),
    ``default_language``, ``punctuation``, ``end_of_utterance``, ``sample_rate``, ``backend`` and
    the architecture's sizes.

    ``repack_cache`` is a folder where the CPU backend's re-laid-out weights (Q4_0/Q4_K/IQ4_NL
    matrices, ``info["repacked_tensors"]``) are kept after the first load, so that later loads map
    them instead of repacking; ``info["repack_cache"]`` says what happened: ``"none"``, ``"used"``,
    ``"written"`` or ``"failed"`` (then ``info["repack_cache_error"]`` says why; the model works
    all the same). Every load with a folder also removes the caches there whose model file is gone
    (its folder still there) and half-written ones an hour old: ``info["repack_cache_removed"]``.
    """

    def __init__(
        self,
        path: str | Path,
        backend: str = "auto",
        n_threads: int | None = None,
        mmap: bool = True,
        repack_cache: str | Path | None = None,
    ) -> None:
        if not isinstance(path, (str, Path)):
            raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
        if not isinstance(backend, str):
            raise TypeError(f"backend must be a str, got {type(backend).__name__}")
        if n_threads is not None and (isinstance(n_threads, bool) or not isinstance(n_threads, int)):
            raise TypeError(f"n_threads must be an int or None, got {type(n_threads).__name__}")
        if n_threads is not None and not 1 <= n_threads <= MAX_THREADS:
            raise ValueError(
                f"n_threads must be 1 to {MAX_THREADS} (or None: one per physical core), got {n_threads}"
            )
        if not isinstance(mmap, bool):
            raise TypeError(f"mmap must be a bool, got {type(mmap).__name__}")
        if repack_cache is not None and not isinstance(repack_cache, (str, Path)):
            raise TypeError(f"repack_cache must be a str, Path or None, got {type(repack_cache).__name__}")
        self.path = Path(path)
        try:
            self._m = _engine_module().Model(
                str(path), backend, n_threads or 0, mmap, str(repack_cache) if repack_cache else ""
            )
        except EngineError as exc:
            why = engine_backends.why_not_loaded(backend)
            if why is None and not _engine_module().compute_devices():
                why = engine_backends.load_error()  # no backend at all: the modules' folder is why
            if why is None:
                raise
            raise EngineError(f"{exc}; {why}") from exc
        self.info: dict[str, Any] = self._m.info()

    @property
    def architecture(self) -> str:
        return str(self.info["architecture"])

    @property
    def latencies_ms(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.info["latencies_ms"])

    @property
    def default_latency_ms(self) -> int:
        return int(self.info["default_latency_ms"])

    @property
    def default_delay_ms(self) -> int:
        """Voxtral's name for ``default_latency_ms``."""
        return self.default_latency_ms

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.info["languages"])

    @property
    def default_language(self) -> str | None:
        return self.info["default_language"] or None

    @property
    def punctuation(self) -> bool:
        return bool(self.info["punctuation"])

    @property
    def token_ms(self) -> int:
        return int(self.info["token_ms"])

    def token_bytes(self, token_id: int) -> bytes:
        return bytes(self._m.token_bytes(token_id))

    def is_control(self, token_id: int) -> bool:
        return bool(self._m.is_control(token_id))

    def resolve_latency(self, latency_ms: int | None = None, delay_ms: int | None = None) -> int:
        """The latency to use: ``latency_ms`` (or Voxtral's ``delay_ms``), else the default; a
        ValueError names the supported choices."""
        return resolve_latency(self.latencies_ms, self.default_latency_ms, latency_ms, delay_ms)

    def resolve_language(self, language: str | None) -> str:
        """'' for the model's default; a ValueError for a language the model does not offer."""
        return resolve_language(self.languages, language)

    def stream(
        self, latency_ms: int | None = None, language: str | None = None, *, delay_ms: int | None = None
    ) -> Stream:
        """A new live stream (its own caches); None = the model's defaults."""
        return Stream(self, latency_ms, language, delay_ms=delay_ms)

    def transcribe(
        self,
        pcm: np.ndarray,
        latency_ms: int | None = None,
        language: str | None = None,
        *,
        delay_ms: int | None = None,
        stop_at_end_of_utterance: bool = False,
    ) -> Transcript:
        """All of ``pcm`` transcribed. An end of utterance is an event and decoding goes on to the
        end of the audio, as in a live stream; ``stop_at_end_of_utterance=True`` is Voxtral's
        reference offline rule (decoding ends at the first EOS), kept for golden tests."""
        pcm = _check_pcm(pcm, allow_empty=False)
        s = _engine_module().Stream(
            self._m,
            self.resolve_latency(latency_ms, delay_ms),
            self.resolve_language(language),
            stop_at_end_of_utterance,
            False,
        )
        tokens: list[Token] = []
        events: list[tuple[int, StreamEvent]] = []
        text = ""
        for r in (s.feed(pcm), s.finish()):
            new = self._tokens(r)
            events += [(len(tokens) + at, e) for at, e in _events(r)]
            tokens += new
            text += "".join(t.piece for t in new) + r["text_tail"]
        return Transcript(text=text, token_ids=[t.id for t in tokens], tokens=tokens, events=events)

    def _tokens(self, result: dict[str, Any]) -> list[Token]:
        return [Token(i, piece, t, control) for i, piece, t, control in result["new_tokens"]]


class Stream:
    """Incremental transcription of one audio stream. Owned by one thread at a time.

    ``feed`` accepts any number of samples (1 sample or a minute); ``finish`` decodes to the end,
    after which the result equals ``Model.transcribe`` of the same audio. Live rules:

    - An end of utterance never ends the stream: it is an ``END_OF_UTTERANCE`` event and decoding
      continues.
    - Voxtral, unbounded length: before the decoder reaches its position limit, preferably at a
      pause, it starts over from a fresh prompt (``REANCHOR``); no text is lost or repeated.
    - ``set_latency`` / ``set_language`` change the setting mid-session: the current segment is
      finished (all audio fed so far is transcribed), and decoding continues in a new segment.
      Text and token times continue across segments.
    """

    def __init__(
        self,
        model: Model,
        latency_ms: int | None = None,
        language: str | None = None,
        *,
        delay_ms: int | None = None,
    ) -> None:
        self.model = model
        self._latency = model.resolve_latency(latency_ms, delay_ms)
        self._language = model.resolve_language(language)
        self._s = _engine_module().Stream(model._m, self._latency, self._language, False, False)
        self._clear()

    def _clear(self) -> None:
        self.revision = 0
        self.text = ""
        self.token_ids: list[int] = []
        self._samples_before = 0  # samples fed in earlier segments
        self._samples = 0  # samples fed in this segment

    @property
    def latency_ms(self) -> int:
        return self._latency

    @property
    def delay_ms(self) -> int:
        """Voxtral's name for ``latency_ms``."""
        return self._latency

    @property
    def language(self) -> str | None:
        return self._s.language or None

    def feed(self, pcm: np.ndarray) -> StreamUpdate:
        pcm = _check_pcm(pcm, allow_empty=True)
        update = self._update(self._s.feed(pcm))
        self._samples += pcm.size
        return update

    def set_latency(self, latency_ms: int) -> StreamUpdate:
        """Finish the current segment and continue at ``latency_ms``; committed text is kept."""
        return self._new_segment(self.model.resolve_latency(latency_ms), self._language)

    def set_delay(self, delay_ms: int) -> StreamUpdate:
        """Voxtral's name for ``set_latency``."""
        return self.set_latency(delay_ms)

    def set_language(self, language: str | None) -> StreamUpdate:
        """Finish the current segment and continue in ``language``; committed text is kept."""
        return self._new_segment(self._latency, self.model.resolve_language(language))

    def _new_segment(self, latency_ms: int, language: str) -> StreamUpdate:
        result = self._s.finish()
        result["events"] = [("segment_end" if e == "finished" else e, at) for e, at in result["events"]]
        update = self._update(result)
        self._s.reset(latency_ms, language)
        self._latency, self._language = latency_ms, language
        self._samples_before += self._samples
        self._samples = 0
        return update

    def finish(self) -> StreamUpdate:
        return self._update(self._s.finish())

    def timings(self) -> dict[str, float]:
        """Cumulative engine time of this stream (ms) and counts, by stage; the keys depend on the
        architecture (Voxtral: mel_ms, audio_ms (conv stem + encoder), decoder_ms, ...; FastConformer: mel_ms,
        encoder_ms, decoder_ms, ...)."""
        return dict(self._s.timings())

    def reset(self, latency_ms: int | None = None, *, delay_ms: int | None = None) -> None:
        """Start over (optionally with another latency); allocations are kept."""
        if latency_ms is not None or delay_ms is not None:
            self._latency = self.model.resolve_latency(latency_ms, delay_ms)
        self._s.reset(self._latency, self._language)
        self._clear()

    def _update(self, result: dict[str, Any]) -> StreamUpdate:
        offset = self._samples_before * 1000 // SAMPLE_RATE
        new = self.model._tokens(result)
        if offset:
            new = [Token(t.id, t.piece, t.time_ms + offset, t.is_control) for t in new]
        added = "".join(t.piece for t in new) + result["text_tail"]
        if added:
            self.text += added
            self.revision += 1
        self.token_ids += [t.id for t in new]
        events = _events(result)
        return StreamUpdate(
            revision=self.revision,
            text=self.text,
            new_tokens=new,
            token_ids=list(self.token_ids),
            audio_ms_received=offset + int(result["audio_ms_received"]),
            audio_ms_decoded=offset + int(result["audio_ms_decoded"]),
            events=[e for _, e in events],
            event_at=[at for at, _ in events],
        )


def quantize(
    src: str | Path, dst: str | Path, type_name: str, n_threads: int | None = None, progress: Any = None
) -> None:
    """Write ``dst``: ``src`` with its matrices quantized (Q8_0, Q5_K, Q4_K, Q6_K, F16, Q4_K_M, Q5_K_M).

    Which tensors keep their type is the architecture's rule (engine/GGUF.md).
    ``progress(done_bytes, total_bytes)`` is called as tensors are written. Nothing is left at
    ``dst`` on failure.
    """
    _engine_module().quantize(str(src), str(dst), type_name, n_threads or 0, progress)


class DeviceType(str, enum.Enum):
    """What kind of device a ``ComputeDevice`` is."""

    CPU = "cpu"
    GPU = "gpu"  # a discrete GPU
    INTEGRATED_GPU = "igpu"  # a GPU sharing host memory
    ACCELERATOR = "accelerator"


@dataclass(frozen=True)
class ComputeDevice:
    """A device this build of the engine can run models on (its ggml backend loaded and its driver
    found). ``name`` is what ``Model(backend=...)`` takes; ``is_default`` is what ``"auto"`` picks."""

    backend: str  # "CPU", "Vulkan", "CUDA", "Metal", ...
    name: str  # "CPU", "Vulkan0", "CUDA0", ...
    description: str
    type: DeviceType
    memory_total: int  # bytes, 0 when unknown
    memory_free: int
    cpu_features: str  # CPU: the ggml variant loaded and its instruction sets
    is_default: bool

    @property
    def label(self) -> str:
        """How the app shows it: "Vulkan0 — llvmpipe (LLVM 15.0.6, 256 bits)"."""
        return (
            f"{self.name} — {self.description}"
            if self.description and self.description != self.name
            else self.name
        )


def compute_devices() -> list[ComputeDevice]:
    """Every device models can run on here, in ggml's order (the CPU included); an ``EngineError``
    saying why when there is none (ggml's modules not found)."""
    found = _engine_module().compute_devices()
    if not found:
        why = engine_backends.load_error() or "ggml has no backend loaded"
        raise EngineError(f"no compute device: {why}")
    return [
        ComputeDevice(
            backend=str(d["backend"]),
            name=str(d["name"]),
            description=str(d["description"]),
            type=DeviceType(d["type"]),
            memory_total=int(d["memory_total"]),
            memory_free=int(d["memory_free"]),
            cpu_features=str(d["cpu_features"]),
            is_default=bool(d["is_default"]),
        )
        for d in found
    ]


def default_n_threads() -> int:
    """The compute threads ``n_threads=None`` gives a new stream now: the physical cores, no more
    than the CPUs this process may use and the CPUs idle at this moment, at least 1."""
    return int(_engine_module().default_n_threads())
