# SPDX-License-Identifier: Apache-2.0
"""Where the Aeron directory is by default: one rule for the client, the driver and the tools."""
from __future__ import annotations

import getpass
import os
import tempfile

__all__ = ["default_aeron_dir"]


def default_aeron_dir() -> str:
    """aeron_default_path on Linux: ``/dev/shm/aeron-<user>`` (the temp dir when there is no /dev/shm)."""
    try:
        user = os.environ.get("USER") or getpass.getuser()
    except Exception:       # noqa: BLE001 - no passwd entry: C falls back to "default"
        user = "default"
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"aeron-{user}")
