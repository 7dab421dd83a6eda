# SPDX-License-Identifier: Apache-2.0
"""Standalone media driver, the counterpart of ``aeronmd``: ``aeron-driver``, or ``python -m aeron.driver``.

    aeron-driver [-d DIR | --dir DIR] [key=value ...] [-Dkey=value ...]

Settings come from the ``AERON_*`` environment variables aeronmd reads, then from the arguments
(``aeron.dir=/dev/shm/x``, ``aeron.threading.mode=SHARED``, ``AERON_DIR=/dev/shm/x``); ``-d``/``--dir DIR`` is
``aeron.dir=DIR``, as the tools and samples take it. The driver logs its
settings at start and stops cleanly on SIGINT, SIGTERM, or an accepted TERMINATE_DRIVER command
(``aeron.driver.termination.validator=allow``). Exit status: 0 after a clean stop, 1 when it cannot start.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

from aeron.driver.media_driver import Context, MediaDriver
from aeron.common.cli import program_name
from aeron.common.errors import AeronError
from aeron.common.version import VERSION_TEXT


def _dir_option(args: list[str]) -> list[str]:
    """``-d DIR``, ``--dir DIR`` and ``--dir=DIR`` become ``aeron.dir=DIR``; every other argument stays."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-d", "--dir"):
            if i + 1 == len(args):
                raise SystemExit(f"aeron.driver: {arg} needs a directory")
            out.append(f"aeron.dir={args[i + 1]}")
            i += 2
            continue
        out.append(f"aeron.dir={arg[len('--dir='):]}" if arg.startswith("--dir=") else arg)
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    args = _dir_option(sys.argv[1:] if argv is None else argv)
    if any(arg in ("-h", "--help") for arg in args):
        # the usage line under the name it was started by, then every property from the settings table
        print(__doc__.replace("    aeron-driver [", f"    {program_name('aeron-driver', 'aeron.driver')} [", 1))
        print(Context.usage())
        return 0
    if "--version" in args:
        print(VERSION_TEXT)
        return 0
    stop = threading.Event()

    def on_signal(signum, _frame):
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            ctx = Context(args)
            ctx.termination_hook = stop.set
            driver = MediaDriver.launch(ctx)
        except (AeronError, OSError) as exc:
            print(f"aeron.driver: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return 1
        with driver:
            print(f"aeron.driver: started in {driver.aeron_dir}, pid {os.getpid()}, settings:", flush=True)
            for key, value in ctx.as_properties().items():
                print(f"  {key}={value}", flush=True)
            # a signal interrupts the wait (its handler runs on this thread) and the termination hook sets it: the
            # timeout only bounds a missed wake-up, and this thread wakes once a second of an idle driver's life
            while not stop.wait(1.0):
                pass
            print("aeron.driver: shutting down", flush=True)
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
