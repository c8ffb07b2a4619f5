"""Windows' ``msvcrt.locking`` for tests on other systems: byte-range locks per open file.

As on Windows, a byte locked through one open file cannot be locked through another (in this
process too): ``LK_NBLCK`` then raises ``OSError(EACCES)``; ``LK_UNLCK`` frees a byte its file
holds; closing the file frees its bytes (``closed(fd)``, which the test calls from ``os.close``: a
descriptor number may come back for the same file). The lock starts at the descriptor's position,
as ``msvcrt.locking`` does. ``locked(path)`` lists the byte offsets held on ``path``'s file, so a test
can check that no byte of a journal's data is locked (Windows' locks are mandatory: a reader would
fail on a locked byte).
"""

from __future__ import annotations

import errno
import os

LK_UNLCK, LK_LOCK, LK_NLCK, LK_RLCK, LK_NBRLCK = 0, 1, 2, 3, 4
LK_NBLCK = LK_NLCK


class FakeMsvcrt:
    LK_UNLCK, LK_LOCK, LK_NBLCK, LK_RLCK, LK_NBRLCK = LK_UNLCK, LK_LOCK, LK_NBLCK, LK_RLCK, LK_NBRLCK

    def __init__(self) -> None:
        self._held: dict[tuple[int, int, int], tuple[int, tuple[int, int]]] = {}  # byte -> (fd, file)
        self.calls: list[tuple[int, int, int]] = []  # (mode, offset, nbytes)

    @staticmethod
    def _file(fd: int) -> tuple[int, int] | None:
        try:
            st = os.fstat(fd)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def closed(self, fd: int) -> None:
        self._held = {b: (holder, f) for b, (holder, f) in self._held.items() if holder != fd}

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        file = self._file(fd)
        if file is None:
            raise OSError(errno.EBADF, "Bad file descriptor")
        start = os.lseek(fd, 0, os.SEEK_CUR)
        self.calls.append((mode, start, nbytes))
        wanted = [(*file, start + i) for i in range(nbytes)]
        if mode == LK_UNLCK:
            if any(self._held.get(b, (None,))[0] != fd for b in wanted):
                raise OSError(errno.EACCES, "Permission denied")
            for b in wanted:
                del self._held[b]
            return
        if any(b in self._held for b in wanted):
            raise OSError(errno.EACCES, "Permission denied")
        for b in wanted:
            self._held[b] = (fd, file)

    def locked(self, path: os.PathLike[str] | str) -> list[int]:
        st = os.stat(path)
        return sorted(b[2] for b in self._held if b[:2] == (st.st_dev, st.st_ino))
