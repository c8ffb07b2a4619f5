"""Open a NeMo ``.nemo`` archive (a tar, plain or gzip-compressed) or the folder it extracts to.

Members are found by base name, since NeMo stores them as ``./model_config.yaml``,
``./model_weights.ckpt`` and ``./<hash>_tokenizer.model`` (the config refers to the latter as
``nemo:<hash>_tokenizer.model``). A member of an uncompressed tar is used in place (its byte range is
memory-mapped later); a compressed archive's weights are copied once to a temporary folder next to the
output, removed by `close`. Nothing is ever extracted under a name taken from the archive.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import ConversionError

_MAX_SMALL_MEMBER = 64 * 1024 * 1024  # config and tokenizer files


@dataclass(frozen=True)
class MemberRange:
    """A member's bytes: [offset, offset + size) of the file at `path`."""

    path: Path
    offset: int
    size: int


@dataclass
class NemoArchive:
    source: Path
    config: dict[str, Any]
    _members: dict[str, Any]  # base name -> tarfile.TarInfo (archive) or Path (folder)
    _tar: tarfile.TarFile | None = None
    _compressed: bool = False
    _tmp: list[Path] = field(default_factory=list)

    def has(self, name: str) -> bool:
        return name in self._members

    def names(self) -> list[str]:
        return list(self._members)

    def read_small(self, name: str) -> bytes:
        """The whole member `name` (config or tokenizer sized)."""
        member = self._members[name]
        try:
            if isinstance(member, Path):
                if member.stat().st_size > _MAX_SMALL_MEMBER:
                    raise ConversionError(f"{name} is implausibly large")
                return member.read_bytes()
            if member.size > _MAX_SMALL_MEMBER:
                raise ConversionError(f"{name} in {self.source.name} is implausibly large")
            assert self._tar is not None
            f = self._tar.extractfile(member)
            data = f.read() if f is not None else b""
        except (OSError, tarfile.TarError, EOFError) as exc:
            raise ConversionError(f"cannot read {name} from {self.source.name}: {exc}") from exc
        if len(data) != member.size:
            raise ConversionError(f"{self.source.name} is truncated ({name} is incomplete)")
        return data

    def byte_range(self, name: str, workdir: Path) -> MemberRange:
        """Where the bytes of member `name` can be memory-mapped (copied to `workdir` if compressed)."""
        member = self._members[name]
        if isinstance(member, Path):
            return MemberRange(member, 0, member.stat().st_size)
        if not self._compressed:
            if member.offset_data + member.size > self.source.stat().st_size:
                raise ConversionError(f"{self.source.name} is truncated ({name} is incomplete)")
            return MemberRange(self.source, member.offset_data, member.size)
        tmp = Path(tempfile.mkdtemp(prefix=".captionist-nemo-", dir=workdir))
        self._tmp.append(tmp)
        target = tmp / "weights.bin"
        try:
            assert self._tar is not None
            with self._tar.extractfile(member) as f, target.open("wb") as out:  # type: ignore[union-attr]
                shutil.copyfileobj(f, out, 16 * 1024 * 1024)
        except (tarfile.TarError, EOFError, zlib.error) as exc:
            raise ConversionError(f"{self.source.name} is corrupt or truncated ({name}: {exc})") from None
        except OSError as exc:
            raise ConversionError(f"cannot unpack {name} into {workdir}: {exc.strerror or exc}") from exc
        return MemberRange(target, 0, target.stat().st_size)

    def close(self) -> None:
        if self._tar is not None:
            self._tar.close()
        for tmp in self._tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        self._tmp.clear()


def open_nemo(src: Path) -> NemoArchive:
    """Open `src` (a .nemo file or an extracted folder) and parse its model_config.yaml."""
    members: dict[str, Any] = {}
    tar = None
    compressed = False
    if src.is_dir():
        for path in sorted(src.iterdir()):
            if path.is_file():
                members[path.name] = path
    else:
        try:
            try:
                tar = tarfile.open(src, "r:")
            except tarfile.ReadError:
                try:
                    tar = tarfile.open(src, "r:*")
                except tarfile.ReadError:
                    raise ConversionError(f"{src.name} is not a readable .nemo archive (not a tar)") from None
                compressed = True
            for info in tar.getmembers():
                if info.isreg():
                    members[Path(info.name).name] = info
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            if tar is not None:
                tar.close()
            detail = " ".join(str(exc).split())
            raise ConversionError(f"{src.name} is not a readable .nemo archive ({detail})") from None
    archive = NemoArchive(src, {}, members, tar, compressed)
    if not archive.has("model_config.yaml"):
        archive.close()
        raise ConversionError(f"{src.name} has no model_config.yaml: not a NeMo model")
    try:
        config = yaml.safe_load(archive.read_small("model_config.yaml").decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        archive.close()
        detail = " ".join(str(exc).split())
        raise ConversionError(f"model_config.yaml in {src.name} is not valid YAML ({detail})") from None
    except ConversionError:
        archive.close()
        raise
    if not isinstance(config, dict):
        archive.close()
        raise ConversionError(f"model_config.yaml in {src.name} is not a mapping")
    archive.config = config
    return archive
