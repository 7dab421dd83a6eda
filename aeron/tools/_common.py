# SPDX-License-Identifier: Apache-2.0
"""What the tools share: locating the Aeron directory and attaching to cnc.dat as the C tools do."""
from __future__ import annotations

import os
import time

from aeron._core.cnc import CncFile
from aeron.common.cnc_attach import cnc_open_error, no_driver_hint
from aeron.common.errors import CncNotInitialisedError, CorruptFileError, DriverTimeoutError
from aeron.common.paths import default_aeron_dir as platform_default

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
