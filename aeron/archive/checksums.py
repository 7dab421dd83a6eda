# SPDX-License-Identifier: Apache-2.0
"""Checksums of recorded frames and catalog entries (Aeron ``io.aeron.archive.checksum.Checksums``).

A checksum is configured by name (``aeron.archive.record.checksum``, ArchiveTool ``-checksum <class>``): Java class
names and the ``CRC-32`` / ``CRC-32C`` aliases Aeron accepts. Values are signed int32, as Java's ``(int)`` of the
CRC, computed in the compiled kernel without the GIL.
"""
from __future__ import annotations

from typing import Any

from aeron._core.segment_scanner import CHECKSUM_CRC32, CHECKSUM_CRC32C, checksum
from aeron.common.errors import InvalidArgumentError


class Checksum:
    """A named checksum: ``compute(buffer, offset=0, length=-1) -> int`` (signed int32); also callable."""

    def __init__(self, name: str, kind: int) -> None:
        """``kind`` is the kernel's CHECKSUM_* constant."""
        self.name = name
        self.kind = kind

    def compute(self, buffer: Any, offset: int = 0, length: int = -1) -> int:
        """Checksum of ``buffer[offset:offset+length]`` (to the end with -1)."""
        return checksum(self.kind, buffer, offset, length)

    def __call__(self, buffer: Any) -> int:
        """Checksum of the whole ``buffer``."""
        return checksum(self.kind, buffer, 0, -1)

    def __repr__(self) -> str:
        """Its name."""
        return f"Checksum({self.name!r})"


CRC32 = Checksum("CRC-32", CHECKSUM_CRC32)
CRC32C = Checksum("CRC-32C", CHECKSUM_CRC32C)

_BY_NAME = {
    "CRC-32": CRC32, "io.aeron.archive.checksum.Crc32": CRC32, "org.agrona.checksum.Crc32": CRC32,
    "CRC-32C": CRC32C, "io.aeron.archive.checksum.Crc32c": CRC32C, "org.agrona.checksum.Crc32c": CRC32C,
}


def new_checksum(name: str) -> Checksum:
    """The checksum Aeron names ``name`` (``CRC-32``, ``io.aeron.archive.checksum.Crc32``, ``CRC-32C``, ...)."""
    name = (name or "").strip()
    if not name:
        raise InvalidArgumentError("Checksum class name must be specified!")
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InvalidArgumentError(f"failed to create Checksum instance for class: {name} (known: "
                                   f"{', '.join(sorted(_BY_NAME))})") from None
