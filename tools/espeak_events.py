"""espeak-ng sentences with word timings from espeak-ng's own events (dev-only; no torch).

The command line (``espeak-ng --stdout``) gives audio only. Its library, ``libespeak-ng.so.1``
(what the command line is built on; Debian's ``espeak-ng`` package depends on it), calls back
with the audio and an event list: a WORD event carries the character position of the word in
the text and the audio position, in milliseconds, where its sound starts. So a whole sentence is
synthesized at once, with all the coarticulation and pauses of connected speech, and every word
still has its place in the audio::

    synth = EspeakSynth()                                   # one per process (the library is global)
    s = synth.sentence(["hello", "world"], voice="en-us+m3", speed=175, pitch=50, seps=[", "])
    s.audio, s.rate, s.word_starts_ms                        # int16 -> float32, 22050 Hz, [0, 312]

``seps`` are what goes between the words (" " joins them; ", " or ". " makes espeak-ng pause as
at a comma or a full stop). ``word_gap`` is espeak-ng's ``-g`` (extra gap in 10 ms units, 0 =
connected). Voices with random variants live in private data directories (``tools.demo_voices``);
``EspeakSynth(data_path)`` reads one. The library cannot be re-initialised in a process
(espeak_Terminate followed by espeak_Initialize hangs in 1.51), so ``EspeakPool`` keeps one child
process per data directory and sends each sentence to the right one::

    with EspeakPool() as pool:
        s = pool.sentence(["go"], "en-us+cx0003", 160, 40, data_path="/tmp/variants/ab12...")

The synthesizer carries state from one text to the next (the phase of its voice source, its
noise), so the samples of a sentence depend on what the same process spoke before it: the same
requests in the same order to a fresh pool give the same samples (which is what makes training
and the held-out sets reproducible), and the first text a fresh process speaks is bit for bit
what ``espeak-ng --stdout`` gives.

Only the library's calling convention is used here; nothing of espeak-ng is copied.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

_ROOT = Path(__file__).resolve().parent.parent

# speak_lib.h
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_EVENT_LIST_TERMINATED = 0
_EVENT_WORD = 1
_EVENT_END = 5
_EVENT_MSG_TERMINATED = 6
_EVENT_SAMPLERATE = 8
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_PARAM_RATE = 1
_PARAM_PITCH = 3
_PARAM_WORDGAP = 7
_INIT_DONT_EXIT = 0x8000


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class _Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


class EspeakError(RuntimeError):
    """libespeak-ng is missing, refused a voice, or its events did not match the text."""


@dataclass(frozen=True)
class SpokenSentence:
    """One synthesized sentence: float32 mono audio at ``rate`` and where each word starts."""

    audio: np.ndarray
    rate: int
    text: str
    word_starts_ms: tuple[int, ...]


def _load_library() -> ctypes.CDLL:
    name = ctypes.util.find_library("espeak-ng") or "libespeak-ng.so.1"
    try:
        return ctypes.CDLL(name)
    except OSError as e:
        raise EspeakError(f"libespeak-ng is not installed (apt-get install espeak-ng): {e}") from e


class EspeakSynth:
    """The espeak-ng library in this process, set up for synchronous synthesis with events."""

    def __init__(self, data_path: str = "") -> None:
        self._lib = _load_library()
        self._lib.espeak_Initialize.restype = ctypes.c_int
        self._lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        self._lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        self._lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self._lib.espeak_Synth.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint, ctypes.c_uint,
            ctypes.POINTER(ctypes.c_uint), ctypes.c_void_p,
        ]  # fmt: skip
        self._chunks: list[np.ndarray] = []
        self._events: list[tuple[int, int, int, int]] = []  # (type, text_position, audio_position, length)
        self._callback = _CALLBACK(self._on_audio)  # kept alive: the library holds the pointer
        self.data_path = data_path
        path = data_path.encode() if data_path else None
        rate = self._lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, path, _INIT_DONT_EXIT)
        if rate <= 0:
            raise EspeakError(f"espeak_Initialize failed (data path {data_path or 'system'!r})")
        self._lib.espeak_SetSynthCallback(self._callback)
        self.rate = int(rate)

    def _on_audio(self, wav, n: int, events) -> int:
        if n > 0 and wav:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).astype(np.float32) / 32768.0)
        i = 0
        while events[i].type != _EVENT_LIST_TERMINATED:
            e = events[i]
            self._events.append((e.type, e.text_position, e.audio_position, e.length))
            i += 1
        return 0

    def sentence(
        self,
        words: list[str],
        voice: str,
        speed: int,
        pitch: int,
        seps: list[str] | None = None,
        word_gap: int = 0,
        data_path: str = "",
    ) -> SpokenSentence:
        """``words`` spoken as one text (``seps[i]`` between word i and i + 1, default " ")."""
        if not words:
            raise ValueError("a sentence needs at least one word")
        seps = [" "] * (len(words) - 1) if seps is None else list(seps)
        if len(seps) != len(words) - 1:
            raise ValueError(f"{len(words)} words need {len(words) - 1} separators; got {len(seps)}")
        if data_path != self.data_path:
            raise ValueError(f"this synthesizer reads {self.data_path or 'system'!r}, not {data_path!r}")
        text, starts = "", []
        for i, w in enumerate(words):
            if not w.isalpha():
                raise ValueError(f"words must be letters only; got {w!r}")
            starts.append(len(text) + 1)  # espeak-ng counts characters from 1
            text += w + (seps[i] if i < len(seps) else "")
        if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise EspeakError(f"espeak-ng has no voice {voice!r} (data path {data_path or 'system'!r})")
        for param, value in ((_PARAM_RATE, speed), (_PARAM_PITCH, pitch), (_PARAM_WORDGAP, word_gap)):
            self._lib.espeak_SetParameter(param, int(value), 0)
        self._chunks, self._events = [], []
        raw = text.encode() + b"\0"
        err = self._lib.espeak_Synth(raw, len(raw), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
        if err != 0:
            raise EspeakError(f"espeak_Synth failed ({err}) for {text!r}")
        audio = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.float32)
        # WORD events in order, one per word. Their character positions are checked against the
        # words' (after a full stop espeak-ng counts one character short, so a word's event may
        # point into the separator before it).
        found = [(pos, ms) for kind, pos, ms, n in self._events if kind == _EVENT_WORD and n > 0]
        ok = len(found) == len(words) and all(
            s - len(sep) <= pos < s + len(w)
            for (pos, _), s, w, sep in zip(found, starts, words, [" "] + seps, strict=True)
        )
        if not ok:
            got = [pos for pos, _ in found]
            raise EspeakError(f"espeak-ng's word events at {got} do not match the words of {text!r}")
        return SpokenSentence(audio, self.rate, text, tuple(ms for _, ms in found))


def _serve(data_path: str) -> None:
    """Child process (``python -m tools.espeak_events DATA_PATH``): one EspeakSynth answering
    pickled sentence requests on stdin, pickled ``(ok, result)`` on the original stdout, until
    stdin closes. Anything the library prints goes to stderr."""
    proto = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    try:
        synth: EspeakSynth | Exception = EspeakSynth(data_path)
    except Exception as e:  # reported with the first request
        synth = e
    while True:
        try:
            args = pickle.load(requests)
        except EOFError:
            return
        try:
            if isinstance(synth, Exception):
                raise synth
            reply: tuple[bool, Any] = (True, synth.sentence(*args, data_path=data_path))
        except Exception as e:
            reply = (False, f"{type(e).__name__}: {e}")
        pickle.dump(reply, proto)
        proto.flush()


class EspeakPool:
    """``EspeakSynth.sentence`` for any data directory, each served by its own child process
    (``python -m tools.espeak_events``, so the children import nothing of their parent's: a
    training run's torch stays out of them). Started on first use; ``close`` or the end of the
    ``with`` block stops them."""

    def __init__(self) -> None:
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    def sentence(
        self,
        words: list[str],
        voice: str,
        speed: int,
        pitch: int,
        seps: list[str] | None = None,
        word_gap: int = 0,
        data_path: str = "",
    ) -> SpokenSentence:
        child = self._children.get(data_path)
        if child is None:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")]))
            cmd = [sys.executable, "-m", "tools.espeak_events", data_path]
            child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
            self._children[data_path] = child
        assert child.stdin is not None and child.stdout is not None
        try:
            pickle.dump((list(words), voice, int(speed), int(pitch), seps, int(word_gap)), child.stdin)
            child.stdin.flush()
            ok, result = pickle.load(child.stdout)
        except (EOFError, BrokenPipeError):
            raise EspeakError(f"the espeak-ng process for {data_path or 'system'!r} died") from None
        if not ok:
            raise EspeakError(result)
        return result

    def close(self) -> None:
        for child in self._children.values():
            assert child.stdin is not None
            try:
                child.stdin.close()
            except OSError:  # the child is gone already
                pass
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            if child.stdout is not None:
                child.stdout.close()
        self._children.clear()

    def __enter__(self) -> EspeakPool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


if __name__ == "__main__":
    from tools import espeak_events  # the replies' classes must be this module's, not __main__'s

    espeak_events._serve(sys.argv[1] if len(sys.argv) > 1 else "")
