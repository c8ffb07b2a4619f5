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

import sys
from typing import Any

import numpy as np
import transcribe_cpp as tc
from vs_tcpp_job import (
    Job,
    blocks,
    ids_from_text,
    job_from_argv,
    run_job,
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

    def load() -> tuple[Any, Any]:
        model = tc.Model(job.model, backend="cpu")
        return model, model.session(n_threads=job.threads, kv_type=job.their_kv_type)

    def run(loaded: tuple[Any, Any], pcm: np.ndarray, timed: bool) -> dict[str, Any]:
        session = loaded[1]
        if job.mode == "stream":
            ids, steps, n_feeds = _stream(session, job, pcm, record=timed and job.record_steps)
            return {"ids": ids, "n_feeds": n_feeds, "steps": steps, "notes": notes}
        return {"ids": ids_from_text(session.run(pcm).text), "n_feeds": 1, "notes": notes}

    run_job(job, "transcribe.cpp", load, run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
