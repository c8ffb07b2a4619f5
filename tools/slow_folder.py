"""A folder whose disk is slow or dead on demand: a FUSE passthrough for trying Captionist's
transcript writing by hand (the window, ``captionist live -o``, crash recovery at start-up).

    sudo apt-get install -y python3-fusepy fuse3
    mkdir -p /tmp/slow/root /tmp/slow/mnt && echo 0 > /tmp/slow/delay && echo 0 > /tmp/slow/delay_all
    /usr/bin/python3 tools/slow_folder.py /tmp/slow/root /tmp/slow/mnt /tmp/slow/delay &
    echo 0.3 > /tmp/slow/delay       # each create, write-sync, rename, unlink, mkdir waits 0.3 s
    echo 60 > /tmp/slow/delay        # a share whose server went away
    echo 10 > /tmp/slow/delay_all    # lookups and listings wait too (a share that is fully down)
    umount /tmp/slow/mnt

The delays are read again on every call, so they can change while the app runs. Files live in the
first folder; the second shows them. Measured with it (see the commits and bench/README.md):
writes on the window's thread froze it for 10 s at 0.3 s per operation; start-up took 21 s with
``delay_all`` at 10 s before crash recovery moved to its own thread.
"""

from __future__ import annotations

import errno
import os
import sys
import time

from fusepy import FUSE, FuseOSError, Operations  # Debian: python3-fusepy

STAT_FIELDS = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")
STATVFS_FIELDS = (
    "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag", "f_frsize",
    "f_namemax",
)  # fmt: skip


class SlowFolder(Operations):
    def __init__(self, root: str, delay_file: str) -> None:
        self.root, self.delay_file = root, delay_file

    def _real(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _wait(self, suffix: str = "") -> None:
        try:
            with open(self.delay_file + suffix) as f:
                seconds = float(f.read().strip() or 0)
        except (OSError, ValueError):
            seconds = 0.0
        if seconds > 0:
            time.sleep(seconds)

    # lookups and listings: delay_all
    def access(self, path: str, mode: int) -> None:
        self._wait("_all")
        if not os.access(self._real(path), mode):
            raise FuseOSError(errno.EACCES)

    def getattr(self, path: str, fh: int | None = None) -> dict:
        if path != "/":
            self._wait("_all")
        try:
            st = os.lstat(self._real(path))
        except OSError as exc:
            raise FuseOSError(exc.errno) from exc
        return {k: getattr(st, k) for k in STAT_FIELDS}

    def readdir(self, path: str, fh: int) -> list[str]:
        self._wait("_all")
        return [".", "..", *os.listdir(self._real(path))]

    def statfs(self, path: str) -> dict:
        st = os.statvfs(self._real(path))
        return {k: getattr(st, k) for k in STATVFS_FIELDS}

    # changes and syncs: delay
    def mkdir(self, path: str, mode: int) -> None:
        self._wait()
        os.mkdir(self._real(path), mode)

    def rmdir(self, path: str) -> None:
        os.rmdir(self._real(path))

    def unlink(self, path: str) -> None:
        self._wait()
        os.unlink(self._real(path))

    def rename(self, old: str, new: str) -> None:
        self._wait()
        os.rename(self._real(old), self._real(new))

    def create(self, path: str, mode: int, fi: object = None) -> int:
        self._wait()
        return os.open(self._real(path), os.O_WRONLY | os.O_CREAT, mode)

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        self._wait()
        os.fsync(fh)
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        self._wait()
        return 0

    # the rest passes through
    def chmod(self, path: str, mode: int) -> None:
        os.chmod(self._real(path), mode)

    def utimens(self, path: str, times: tuple[float, float] | None = None) -> None:
        os.utime(self._real(path), times)

    def truncate(self, path: str, length: int, fh: int | None = None) -> None:
        with open(self._real(path), "r+b") as f:
            f.truncate(length)

    def open(self, path: str, flags: int) -> int:
        return os.open(self._real(path), flags)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        os.lseek(fh, offset, os.SEEK_SET)
        return os.read(fh, size)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        os.lseek(fh, offset, os.SEEK_SET)
        return os.write(fh, data)

    def flush(self, path: str, fh: int) -> int:
        return 0

    def release(self, path: str, fh: int) -> None:
        os.close(fh)


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    root, mount_point, delay_file = sys.argv[1:]
    FUSE(SlowFolder(root, delay_file), mount_point, foreground=True, nothreads=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
