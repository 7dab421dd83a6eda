# SPDX-License-Identifier: Apache-2.0
"""What the tools share: their command line (its name, ``--version``, ``-d/--dir``, ``-t``, how an error is
reported), locating the Aeron directory and attaching to cnc.dat as the C tools do."""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

from aeron._core.cnc import CncFile
from aeron.common.cli import program_name
from aeron.common.cnc_attach import cnc_open_error, no_driver_hint
from aeron.common.errors import CncNotInitialisedError, CorruptFileError, DriverTimeoutError
from aeron.common.paths import default_aeron_dir as platform_default
from aeron.common.version import VERSION_TEXT

CNC_FILE = "cnc.dat"
DIR_HELP = "Aeron directory (default: $AERON_DIR, else /dev/shm/aeron-<user>)"
LOSS_REPORT_FILE = "loss-report.dat"


def default_aeron_dir() -> str:
    """$AERON_DIR, else /dev/shm/aeron-<user> (the C client's default on Linux)."""
    return os.environ.get("AERON_DIR") or platform_default()


def map_cnc(aeron_dir: str | None, timeout_ms: int = 1000) -> CncFile:
    """Map ``<aeron_dir>/cnc.dat``, waiting up to ``timeout_ms`` for a driver that is still starting
    (file missing, too short or version not yet written), as the C tools' ``-t`` option does. A cnc.dat that
    exists but cannot be opened raises its OSError at once (``cnc_open_error``: permission denied, ...)."""
    aeron_dir = aeron_dir or default_aeron_dir()
    path = os.path.join(aeron_dir, CNC_FILE)
    deadline = time.monotonic() + timeout_ms / 1000.0
    while True:
        try:
            return CncFile.map_existing(path)
        except (FileNotFoundError, CncNotInitialisedError, CorruptFileError) as e:
            if time.monotonic() >= deadline:
                if isinstance(e, FileNotFoundError):
                    raise DriverTimeoutError(f"CnC file not found: {path}; {no_driver_hint(aeron_dir)}") from None
                raise
            time.sleep(0.016)
        except OSError as e:
            raise cnc_open_error(path, e) from None


def tool_parser(script: str, module: str, description: str, *, cnc_timeout: bool = True) -> argparse.ArgumentParser:
    """The command line every tool starts from: its usage line under the name it was started by (``script``, its
    console script, or ``python -m <module>``), ``--version``, ``-d/--dir`` and, with ``cnc_timeout``, the C
    tools' ``-t`` (ms to wait for cnc.dat, default 1000)."""
    parser = argparse.ArgumentParser(prog=program_name(script, module), description=description)
    parser.add_argument("--version", action="version", version=VERSION_TEXT)
    parser.add_argument("-d", "--dir", dest="aeron_dir", default=None, help=DIR_HELP)
    if cnc_timeout:
        parser.add_argument("-t", dest="timeout_ms", type=int, default=1000,
                            help="ms to wait for the driver's cnc.dat (default 1000)")
    return parser


def print_report(tool: str, report: Callable[[], str]) -> int:
    """Write what ``report`` returns to stdout: exit status 0. Any error is one line on stderr instead,
    ``<tool>: <type>: <message>``, and exit status 1, as the official tools."""
    try:
        text = report()
    except Exception as e:  # noqa: BLE001 - a tool reports and exits non-zero, as the official tools do
        print(f"{tool}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
