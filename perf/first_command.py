# SPDX-License-Identifier: Apache-2.0
"""How long the first command of a client that does not signal (as an official client) waits on an idle driver of
ours whose every other client is ours, so that its parks have grown to the long quiet bound (docs/wakeup.md).

    .venv/bin/python perf/first_command.py [--tries 5] [--idle-seconds 2]

An embedded SHARED driver (``wakeup``) with one client of ours; each try waits idle, connects a client without the
wake-up board (it neither registers nor signals) or, first, one of ours, and times its first command (an IPC
subscription: no log to create).
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from aeron import Aeron, Context, MediaDriver  # noqa: E402
from aeron.client import client_conductor  # noqa: E402


def _connect(aeron_dir: str, ours: bool) -> Aeron:
    if ours:
        return Aeron.connect(Context(aeron_dir))
    original = client_conductor.open_board
    client_conductor.open_board = lambda aeron_dir: None
    try:
        return Aeron.connect(Context(aeron_dir))
    finally:
        client_conductor.open_board = original


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--idle-seconds", type=float, default=2.0)
    args = parser.parse_args(argv)
    root = tempfile.mkdtemp(prefix="aeron-first-command-", dir="/dev/shm")
    ctx = MediaDriver.Context(aeron_dir=f"{root}/d", threading_mode="SHARED", shared_idle_strategy="wakeup",
                              dir_delete_on_start=True, dir_delete_on_shutdown=True)
    try:
        with MediaDriver.launch(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as ours:
            ours.add_subscription("aeron:ipc", 1)
            for attempt in range(args.tries + 1):
                time.sleep(args.idle_seconds)
                kind = "ours" if attempt == 0 else "not signalling"
                client = _connect(driver.aeron_dir, attempt == 0)
                try:
                    start = time.perf_counter()
                    client.add_subscription("aeron:ipc", 2)
                    print(f"{kind:15s} first command answered in {(time.perf_counter() - start) * 1e3:6.1f} ms",
                          flush=True)
                finally:
                    client.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
