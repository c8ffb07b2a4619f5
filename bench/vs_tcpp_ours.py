"""Child process: one measured run of OUR engine (the Job in vs_tcpp_job.py).

    PYTHONPATH=app python3 bench/vs_tcpp_ours.py '{"model": ..., "audio": ..., "mode": "stream", ...}'

Stream: ``Model.stream(delay_ms=80·d)``, fed in ``feed_ms`` blocks, then ``finish()``. Offline:
``Model.transcribe(pcm, delay_ms=80·d)`` (d = 30 for the comparison with transcribe.cpp's run()).
``CAPTIONIST_CPU_VARIANT`` in the environment (set by the bench's ``--cpu-variant``) picks the ggml
CPU variant where the engine supports it; the loaded one is reported either way. The job's
``repack_cache`` folder, when set, is passed to ``Model`` (the app's loads use one); the Result's
``info`` says what the load did with it.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from vs_tcpp_job import (
    Job,
    blocks,
    job_from_argv,
    run_job,
)

from captionist.engine import Model, Stream, StreamEvent

TOKEN_MS = 80


def _normal_ids(m: Model, ids: list[int]) -> list[int]:
    return [i for i in ids if not m.is_control(i)]


def _stream(
    m: Model, job: Job, pcm: np.ndarray, record: bool
) -> tuple[list[int], list[int], list[int] | None]:
    """(normal ids, ids so far after each feed, ids before the first end of utterance as [low, high])."""
    s: Stream = m.stream(delay_ms=job.delay_tokens * TOKEN_MS)
    steps: list[int] = []
    eos: list[int] | None = None
    n = 0
    for b in [*blocks(pcm, job.feed_ms), None]:
        u = s.feed(b) if b is not None else s.finish()
        if record or eos is None:
            added = len(_normal_ids(m, [t.id for t in u.new_tokens]))
            ends = [at for at, e in u.placed_events() if e is StreamEvent.END_OF_UTTERANCE]
            if eos is None and ends:
                before = n + len(_normal_ids(m, [t.id for t in u.new_tokens[: ends[0]]]))
                eos = [before, before]
            n += added
            if record and b is not None:
                steps.append(n)
    return _normal_ids(m, u.token_ids), steps, eos


def _offline(m: Model, job: Job, pcm: np.ndarray) -> tuple[list[int], list[int] | None]:
    t = m.transcribe(pcm, delay_ms=job.delay_tokens * TOKEN_MS, stop_at_end_of_utterance=job.stop_at_eos)
    eos = next((at for at, e in t.events if e == StreamEvent.END_OF_UTTERANCE), None)
    before = None if eos is None else len(_normal_ids(m, [x.id for x in t.tokens[:eos]]))
    return _normal_ids(m, t.token_ids), None if before is None else [before, before]


def main(argv: list[str]) -> int:
    job = job_from_argv(argv)

    def run(m: Model, pcm: np.ndarray, timed: bool) -> dict[str, Any]:
        if job.mode == "stream":
            ids, steps, eos = _stream(m, job, pcm, record=timed and job.record_steps)
            return {"ids": ids, "n_feeds": len(blocks(pcm, job.feed_ms)), "steps": steps, "eos_after": eos}
        ids, eos = _offline(m, job, pcm)
        return {"ids": ids, "n_feeds": 1, "eos_after": eos}

    def load() -> Model:
        return Model(job.model, backend="cpu", n_threads=job.threads, repack_cache=job.repack_cache or None)

    def run_and_describe(m: Model, pcm: np.ndarray, timed: bool) -> dict[str, Any]:
        fields = run(m, pcm, timed)
        if timed:
            keys = ("repack_cache", "repacked_tensors", "weights_mapped", "weight_bytes")
            fields["info"] = {k: m.info[k] for k in keys}
        return fields

    run_job(job, "ours", load, run_and_describe)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
