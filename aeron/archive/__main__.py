# SPDX-License-Identifier: Apache-2.0
"""``python -m aeron.archive [props-file ...] [key=value ...]``: a standalone archive (Aeron ``Archive.main``).

Settings are Aeron's ``aeron.archive.*`` properties (and ``aeron.dir``), from ``AERON_*`` environment variables,
from properties files and from ``key=value`` arguments, later ones winning. With ``--embedded-driver`` our media
driver is launched in the same process first (driver properties ``aeron.*`` then apply to it). Runs until SIGINT
or SIGTERM.
"""
from __future__ import annotations

import signal
import sys
import threading

from aeron.archive.archive import Archive, ArchivingMediaDriver
from aeron.archive.archive import Context as ArchiveContext
from aeron.common.errors import AeronError
from aeron.common.settings import read_properties
from aeron.common.version import VERSION_TEXT
from aeron.driver.media_driver import MediaDriver


def main(argv: list[str] | None = None) -> int:
    """Run an archive until a signal; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in args):
        print(__doc__)
        return 0
    if "--version" in args:
        print(VERSION_TEXT)
        return 0
    try:
        embedded = "--embedded-driver" in args
        props = read_properties(arg for arg in args if arg != "--embedded-driver")
    except OSError as ex:
        print(f"aeron.archive: {ex}", file=sys.stderr)
        return 2
    archive_props = {k: v for k, v in props.items() if k.startswith("aeron.archive.") or k == "aeron.dir"}
    driver_props = {k: v for k, v in props.items() if k not in archive_props or k == "aeron.dir"}
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        ctx = ArchiveContext(archive_props)
        if embedded:
            running = ArchivingMediaDriver.launch(MediaDriver.Context(driver_props), ctx)
        else:
            running = Archive.launch(ctx)
    except AeronError as ex:
        print(f"aeron.archive: {ex}", file=sys.stderr)
        return 1
    print(f"aeron.archive: running ({ctx!r})", file=sys.stderr, flush=True)
    try:
        stop.wait()
    finally:
        running.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
