# SPDX-License-Identifier: Apache-2.0
"""``python -m aeron.archive [--embedded-driver] [props-file ...] [key=value ...]``: a standalone archive (Aeron
``Archive.main``).

Settings are Aeron's ``aeron.archive.*`` properties (and ``aeron.dir``), from ``AERON_*`` environment variables,
from properties files and from ``key=value`` arguments, later ones winning. With ``--embedded-driver`` our media
driver is launched in the same process first (driver properties ``aeron.*`` then apply to it: see
``python -m aeron.driver --help``). The whole configuration is checked before anything starts; a launch that
fails removes the directories it made. Runs until SIGINT or SIGTERM. Exit status: 0 after a clean stop, 1 when it
cannot start, 2 for an unreadable properties file.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import threading

from aeron.archive.archive import Archive, ArchivingMediaDriver
from aeron.archive.archive import Context as ArchiveContext
from aeron.common.errors import AeronError
from aeron.common.settings import read_properties
from aeron.common.version import VERSION_TEXT
from aeron.driver.media_driver import MediaDriver


def usage() -> str:
    """The module's help, then every property the archive reads with its default and its variable."""
    return f"{__doc__ or ''}\n{ArchiveContext.usage()}"


def _made_by_launch(path: str | None, existed: bool) -> None:
    # a launch that failed leaves nothing it made behind (a directory that was there before is kept)
    if path and not existed and os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run an archive until a signal; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in args):
        print(usage())
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
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            # every setting is checked before anything starts: a bad one starts no driver and makes no directory
            ctx = ArchiveContext(archive_props)
            driver_ctx = MediaDriver.Context(driver_props) if embedded else None
            if driver_ctx is not None:
                driver_ctx.conclude()
                ctx.aeron_dir = driver_ctx.resolved_dir()
            ctx.validate()
        except AeronError as ex:
            print(f"aeron.archive: {type(ex).__name__}: {ex}", file=sys.stderr)
            return 1
        archive_dir = os.path.abspath(ctx.archive_dir)
        mark_file_dir = os.path.abspath(ctx.mark_file_dir) if ctx.mark_file_dir else None
        existed = {d: os.path.exists(d) for d in (archive_dir, mark_file_dir) if d}
        try:
            running: Archive | ArchivingMediaDriver = (
                ArchivingMediaDriver.launch(driver_ctx, ctx) if driver_ctx is not None else Archive.launch(ctx))
        except (AeronError, OSError) as ex:
            for directory, was_there in existed.items():
                _made_by_launch(directory, was_there)
            print(f"aeron.archive: {type(ex).__name__}: {ex}", file=sys.stderr)
            return 1
        print(f"aeron.archive: running ({ctx!r})", file=sys.stderr, flush=True)
        try:
            while not stop.wait(1.0):
                pass
        finally:
            running.close()
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
