"""A live session killed with SIGKILL loses none of the tokens it had committed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import captionist
from captionist.transcript import parse, read_journal
from captionist.transcript.recovery import recover_sessions

CHILD = r"""
import itertools, sys
from datetime import datetime
from pathlib import Path
from captionist.engine import Token
from captionist.transcript import SessionWriter

w = SessionWriter(Path(sys.argv[1]), sys.argv[2], started=datetime(2026, 11, 29, 9, 30, 0), token_ms=80)
for i in itertools.count():
    t = i * 80 + (i // 7) * 1000  # a one-second pause after every seventh word
    w.add_tokens([Token(1000 + i, f" w{i}", t), Token(32, "", t + 80, True)])
    print(i + 1, flush=True)  # reported only after add_tokens returned: committed
"""


def run_and_kill(folder: Path, fmt: str, n_committed: int) -> int:
    """Start a writer in a child process, SIGKILL it once it reports ``n_committed`` tokens."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(captionist.__file__).parent.parent), env.get("PYTHONPATH", "")]
    )
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(folder), fmt], stdout=subprocess.PIPE, env=env, text=True
    )
    assert child.stdout is not None
    reported = 0
    try:
        while reported < n_committed:
            line = child.stdout.readline()
            assert line, f"writer process ended early with status {child.wait()}"
            reported = int(line)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return reported


@pytest.mark.parametrize(("fmt", "n"), [("srt", 25), ("vtt", 60), ("json", 40)])
def test_kill_9_loses_no_committed_token(tmp_path: Path, fmt: str, n: int) -> None:
    reported = run_and_kill(tmp_path, fmt, n)
    journal = next(tmp_path.glob("*.journal.jsonl"))
    tokens = read_journal(journal).tokens
    assert len(tokens) >= reported
    assert [t.piece for t in tokens] == [f" w{i}" for i in range(len(tokens))]

    human = journal.with_name(f"2026-11-29 09-30-00.{fmt}")
    before = " ".join(c.text for c in parse(fmt, human.read_text(encoding="utf-8"))).split()
    assert before == [f"w{i}" for i in range(len(before))]
    assert len(before) >= reported - 7  # every finished caption; the open one holds at most 7 words

    rebuilt = recover_sessions(tmp_path).transcripts
    assert rebuilt == [journal.with_name(f"2026-11-29 09-30-00.{fmt}")]
    words = " ".join(c.text for c in parse(fmt, rebuilt[0].read_text(encoding="utf-8"))).split()
    assert words == [f"w{i}" for i in range(len(tokens))]
