"""The real ``ScreenCaptureKitApi``: ScreenCaptureKit and CoreMedia through pyobjc (macOS 13+).

Usage::

    api = PyObjCScreenCaptureKit()          # raises ScreenCaptureDenied without pyobjc's wrappers
    handle = api.open_audio_stream(48000, 2, on_audio, on_stopped)
    api.start(handle); ...; api.stop(handle)

The stream captures the main display's audio mix (every app but Captionist itself:
``excludesCurrentProcessAudio``) with the smallest video the configuration allows and no video
output attached. ScreenCaptureKit's completion handlers run on its own queues; each call here
waits for its handler with a timeout. The SCStream holds its delegate weakly, so the handle keeps
the output object alive. Only a Mac runs this file (tests/platform/test_macos_overlay.py); the
stream logic above it is tested with a fake of this API.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from captionist.audio.screencapturekit_stream import ScreenCaptureDenied

TIMEOUT_S = 10.0
AUDIO_FORMAT_FLAG_NON_INTERLEAVED = 1 << 5  # kAudioFormatFlagIsNonInterleaved
_output_class: Any = None  # the Objective-C class, defined once per process


def _import() -> tuple[Any, Any, Any, Any]:
    try:
        import CoreMedia
        import Foundation
        import objc
        import ScreenCaptureKit
    except Exception as exc:  # off macOS, before 12.3, or without pyobjc-framework-ScreenCaptureKit
        raise ScreenCaptureDenied(f"ScreenCaptureKit is unavailable ({exc})") from exc
    return objc, Foundation, ScreenCaptureKit, CoreMedia


def _wait(call: Callable[[Callable[..., None]], Any], what: str) -> tuple:
    done, result = threading.Event(), []

    def handler(*args: Any) -> None:
        result.append(args)
        done.set()

    call(handler)
    if not done.wait(TIMEOUT_S):
        raise ScreenCaptureDenied(f"ScreenCaptureKit did not answer ({what}) within {TIMEOUT_S:g} s")
    return result[0]


def _describe(error: Any) -> str:
    return str(error.localizedDescription()) if error is not None else "unknown error"


def _audio_output_class(objc: Any, foundation: Any) -> Any:
    global _output_class
    if _output_class is None:
        protocols = [objc.protocolNamed("SCStreamOutput"), objc.protocolNamed("SCStreamDelegate")]

        class CaptionistAudioOutput(foundation.NSObject, protocols=protocols):
            def stream_didOutputSampleBuffer_ofType_(self, stream: Any, sample: Any, kind: int) -> None:  # noqa: N802
                if kind == self.audio_type:
                    self.on_audio(sample)

            def stream_didStopWithError_(self, stream: Any, error: Any) -> None:  # noqa: N802
                self.on_stopped(_describe(error))

        _output_class = CaptionistAudioOutput
    return _output_class


@dataclass
class _Handle:
    stream: Any  # SCStream
    output: Any  # CaptionistAudioOutput: the stream's delegate and audio output, kept alive here


class PyObjCScreenCaptureKit:
    def __init__(self) -> None:
        self._objc, self._foundation, self._sck, self._cm = _import()

    def open_audio_stream(
        self,
        samplerate: int,
        channels: int,
        on_audio: Callable[[Any], None],
        on_stopped: Callable[[str], None],
    ) -> _Handle:
        sck, cm = self._sck, self._cm
        content, error = _wait(sck.SCShareableContent.getShareableContentWithCompletionHandler_, "content")
        if content is None:  # the user has not allowed Screen & System Audio Recording
            raise ScreenCaptureDenied(
                f"macOS refused screen and system audio recording ({_describe(error)}); allow Captionist "
                "in System Settings > Privacy & Security > Screen & System Audio Recording, then restart it"
            )
        displays = content.displays()
        if not displays:
            raise ScreenCaptureDenied("there is no display to capture the audio of")
        content_filter = sck.SCContentFilter.alloc().initWithDisplay_excludingWindows_(displays[0], [])
        config = sck.SCStreamConfiguration.alloc().init()
        config.setCapturesAudio_(True)
        config.setExcludesCurrentProcessAudio_(True)
        config.setSampleRate_(samplerate)
        config.setChannelCount_(channels)
        config.setWidth_(2)
        config.setHeight_(2)
        config.setMinimumFrameInterval_(cm.CMTimeMake(1, 1))
        output = _audio_output_class(self._objc, self._foundation).alloc().init()
        output.audio_type, output.on_audio, output.on_stopped = (
            sck.SCStreamOutputTypeAudio,
            on_audio,
            on_stopped,
        )
        stream = sck.SCStream.alloc().initWithFilter_configuration_delegate_(content_filter, config, output)
        ok, error = stream.addStreamOutput_type_sampleHandlerQueue_error_(
            output, sck.SCStreamOutputTypeAudio, None, None
        )
        if not ok:
            raise ScreenCaptureDenied(f"cannot add an audio output to the stream: {_describe(error)}")
        return _Handle(stream, output)

    def start(self, handle: _Handle) -> None:
        (error,) = _wait(handle.stream.startCaptureWithCompletionHandler_, "start")
        if error is not None:
            raise ScreenCaptureDenied(f"macOS did not start the capture: {_describe(error)}")

    def stop(self, handle: _Handle) -> None:
        try:
            _wait(handle.stream.stopCaptureWithCompletionHandler_, "stop")
        except ScreenCaptureDenied:  # no answer: the stream is gone either way
            pass

    def sample_pcm(self, sample: Any) -> tuple[bytes, int, bool]:
        cm = self._cm
        if not cm.CMSampleBufferIsValid(sample):
            return b"", 0, False
        frames = int(cm.CMSampleBufferGetNumSamples(sample))
        planar = True  # ScreenCaptureKit's documented format: float32, one plane per channel
        try:
            asbd = cm.CMAudioFormatDescriptionGetStreamBasicDescription(
                cm.CMSampleBufferGetFormatDescription(sample)
            )
            planar = bool(asbd.mFormatFlags & AUDIO_FORMAT_FLAG_NON_INTERLEAVED)
        except Exception:  # pyobjc without the struct pointer's metadata: keep the documented format
            pass
        block = cm.CMSampleBufferGetDataBuffer(sample)
        length = int(cm.CMBlockBufferGetDataLength(block))
        status, data = cm.CMBlockBufferCopyDataBytes(block, 0, length, None)
        return (bytes(data) if status == 0 and data is not None else b""), frames, planar
