"""Child process: one measured run of transcribe.cpp 0.4.1 (the Job in vs_tcpp_job.py).

    /work/tcppenv/bin/python bench/vs_tcpp_theirs.py '{"model": ..., "audio": ..., "mode": "stream", ...}'

Runs in transcribe.cpp's own virtual environment (``pip install transcribe-cpp==0.4.1 numpy``).
``Model(path, backend="cpu")``, ``session(n_threads=)``. Stream:
``session.stream(family=VoxtralRealtimeStreamOptions(num_delay_tokens=d, min_decode_interval_ms=N))``
fed in ``feed_ms`` blocks, then ``finalize()``; N = the job's ``their_min_decode_ms`` (0: process
every feed as our stream does; the library's default is 1000, i.e. one pass per second of audio).
Offline: ``session.run(pcm)``, which 0.4.1 always runs at delay 30 tokens (2400 ms) whatever the
file's default delay. The model's text spells the emitted ids (``--id-vocab`` export).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np
import transcribe_cpp as tc
from vs_tcpp_job import (
    Job,
    blocks,
    emit_timed,
    ids_from_text,
    job_from_argv,
    load_audio,
)

OFFLINE_DELAY_TOKENS = 30  # transcribe.cpp 0.4.1's run() (checked against the reference ids)


def _stream(session: Any, job: Job, pcm: np.ndarray, record: bool) -> tuple[list[int], list[int], int]:
    opts = tc.VoxtralRealtimeStreamOptions(
        num_delay_tokens=job.delay_tokens, min_decode_interval_ms=job.their_min_decode_ms
    )
    steps: list[int] = []
    parts = blocks(pcm, job.feed_ms)
    st = session.stream(family=opts)
    try:
        for b in parts:
            st.feed(b)
            if record:
                steps.append(len(ids_from_text(st.snapshot().text)))
        st.finalize()
        ids = ids_from_text(st.snapshot().text)
    finally:
        st.reset()
    return ids, steps, len(parts)


def main(argv: list[str]) -> int:
    job = job_from_argv(argv)
    notes = []
    if job.mode == "offline" and job.delay_tokens != OFFLINE_DELAY_TOKENS:
        notes.append(f"run() ignores delay {job.delay_tokens}: it always decodes at {OFFLINE_DELAY_TOKENS}")
    warm, pcm = load_audio(job)
    t0 = time.perf_counter()
    model = tc.Model(job.model, backend="cpu")
    session = model.session(n_threads=job.threads, kv_type=job.their_kv_type)
    load_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    if job.mode == "stream":
        _stream(session, job, warm, record=False)
    else:
        session.run(warm)
    warmup_s = time.perf_counter() - t0

    load1 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    n_feeds, steps = 1, []
    if job.mode == "stream":
        ids, steps, n_feeds = _stream(session, job, pcm, record=job.record_steps)
    else:
        ids = ids_from_text(session.run(pcm).text)
    emit_timed(
        "transcribe.cpp",
        load_s=load_s,
        warmup_s=warmup_s,
        t0=t0,
        c0=c0,
        load1=load1,
        ids=ids,
        n_feeds=n_feeds,
        steps=steps,
        notes=notes,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
