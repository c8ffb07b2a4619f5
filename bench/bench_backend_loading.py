"""What the GPU crash guard costs at start: ggml's backend modules loaded by the engine's own
``backend_init_once`` (ggml's loader, everything at once) against ``captionist.engine_backends``
loading them one by one, each GPU module inside a ``BackendGuard`` trial (a locked file written,
marked done and removed), as the app and the commands do.

    python bench/bench_backend_loading.py             # 9 fresh processes each, alternating
    python bench/bench_backend_loading.py --runs 15

Each run is a new Python process (the modules load once per process), timed from the first call
to the devices listed; the median, min and max are printed for both, with their ratio and the
load average. With Vulkan (Mesa's lavapipe here: GGML_VK_VISIBLE_DEVICES=0 shows it) most of the
time is the Vulkan driver's start, the same for both.

2026-12-06, this 2-vCPU AMD EPYC VM, load 0.6, 15 runs: ggml's loader 44.2 ms, guarded 39.2 ms
(ratio 0.89; min 38.4 vs 36.0 ms), both finding the CPU (zen4 variant) and lavapipe. The guard
costs nothing measurable; ggml's loader also searches the executable's and the working folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, tempfile, time
from pathlib import Path
if sys.argv[1] == "ggml":
    from captionist import _engine
    t = time.perf_counter(); devices = _engine.compute_devices(); dt = time.perf_counter() - t
    names = [d["name"] for d in devices]
else:
    from captionist import engine
    from captionist.backend_guard import BackendGuard
    guard = BackendGuard(Path(tempfile.mkdtemp()))
    t = time.perf_counter(); guard.install(); devices = engine.compute_devices(); dt = time.perf_counter() - t
    names = [d.name for d in devices]
print(dt * 1000, ",".join(sorted(names)))
"""


def one(mode: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "app"), os.environ.get("PYTHONPATH", "")])}
    env.setdefault("GGML_VK_VISIBLE_DEVICES", "0")
    command = [sys.executable, "-c", CHILD, mode]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    ms, names = out.stdout.split()
    return float(ms), names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print(f"load average before: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    times: dict[str, list[float]] = {"ggml": [], "guarded": []}
    found: dict[str, set[str]] = {"ggml": set(), "guarded": set()}
    for _ in range(args.runs):
        for mode in times:  # alternating, so drift in the machine's load hits both alike
            ms, names = one(mode)
            times[mode].append(ms)
            found[mode].add(names)
    for mode, label in (("ggml", "ggml's loader (backend_init_once)"), ("guarded", "one by one, guarded")):
        t = times[mode]
        print(f"{label:36s} median {statistics.median(t):6.1f} ms  min {min(t):6.1f}  max {max(t):6.1f}  "
              f"devices {' | '.join(sorted(found[mode]))}")  # fmt: skip
    ratio = statistics.median(times["guarded"]) / statistics.median(times["ggml"])
    print(f"guarded / ggml: {ratio:.2f}")
    print(f"load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0 if found["ggml"] == found["guarded"] else 1


if __name__ == "__main__":
    sys.exit(main())
