"""Where a captioning session is: what ``SessionController.state`` and its ``state_changed`` say."""

from __future__ import annotations

import enum


class SessionState(enum.Enum):
    IDLE = "idle"  # no session: Start is possible (once a model is ready)
    RUNNING = "running"  # capturing and captioning: Stop is possible
    STOPPING = "stopping"  # Stop was pressed: the last audio is being transcribed and saved
