"""Caption segmentation cost per token, for English and for Chinese (written without spaces).

    python bench/bench_segment.py            # 20,000 tokens each, best of 3

Segmentation runs on the GUI thread for every committed update (``SessionWriter.add_tokens``) and
over a whole journal when a crashed session is recovered or exported, so it must stay far below the
time a token lasts. Printed per script: microseconds per token through ``segment_tokens`` (the
whole-text path of recovery and export) and through ``split_finished`` fed a few tokens at a time
(the live path), and their ratio to one 80 ms token of audio (the bound; target below 0.001).
"""

from __future__ import annotations

import os
import random
import time

from captionist.engine import Token
from captionist.transcript import segment_tokens, split_finished

TOKEN_MS = 80
N_TOKENS = 20_000
TARGET_FRACTION = 0.001  # of a token's duration

ENGLISH = "so the numbers for this quarter look good and sales grew by four percent. next item".split()
CHINESE = list("今天我们来讨论一下这个季度的销售数据，总体来说增长了百分之四。接下来请市场部介绍计划。")


def tokens(script: str) -> list[Token]:
    rng = random.Random(0)
    out, t = [], 0
    for i in range(N_TOKENS):
        if rng.random() < 0.03:
            t += 1000  # a pause
        piece = " " + rng.choice(ENGLISH) if script == "English" else rng.choice(CHINESE)
        out.append(Token(1000 + i, piece, t))
        t += TOKEN_MS
    return out


def whole(toks: list[Token]) -> None:
    segment_tokens(toks, token_ms=TOKEN_MS)


def live(toks: list[Token]) -> None:
    pending: list = []
    for i in range(0, len(toks), 3):
        pending += toks[i : i + 3]
        _, pending = split_finished(pending, toks[min(i + 2, len(toks) - 1)].time_ms, token_ms=TOKEN_MS)


def best_us_per_token(fn, toks: list[Token]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        fn(toks)
        best = min(best, time.perf_counter() - start)
    return best / len(toks) * 1e6


def main() -> int:
    print(f"load average {os.getloadavg()[0]:.2f} (run on a quiet machine)")
    ok = True
    for script in ("English", "Chinese"):
        toks = tokens(script)
        for name, fn in (("segment_tokens", whole), ("split_finished", live)):
            us = best_us_per_token(fn, toks)
            fraction = us / (TOKEN_MS * 1000)
            ok &= fraction < TARGET_FRACTION
            print(f"{script:8s} {name:15s} {us:7.2f} us/token  {fraction:.6f} of a token's 80 ms")
    print("PASS" if ok else f"FAIL: above {TARGET_FRACTION} of a token's duration")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
