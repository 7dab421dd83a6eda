# SPDX-License-Identifier: Apache-2.0
"""Where the Aeron directory is by default (one rule for the client, the driver and the tools), and how a
driver checks and removes it."""
from __future__ import annotations

import errno
import getpass
import os
import shutil
import stat
import sys
import tempfile
from typing import Any

from aeron.common.errors import AeronDirError

__all__ = ["default_aeron_dir", "check_aeron_dir_is_safe", "delete_aeron_dir", "describe_failures"]


def default_aeron_dir() -> str:
    """aeron_default_path on Linux: ``/dev/shm/aeron-<user>`` (the temp dir when there is no /dev/shm)."""
    try:
        user = os.environ.get("USER") or getpass.getuser()
    except Exception:       # noqa: BLE001 - no passwd entry: C falls back to "default"
        user = "default"
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"aeron-{user}")


def check_aeron_dir_is_safe(path: str) -> bool:
    """Refuse an Aeron directory a driver must not delete or write into: a symbolic link (deleting would act
    on, or recreating would write into, wherever it points) or a directory owned by another user.

    Returns False when nothing is at ``path``, True for a directory of ours; raises AeronDirError naming the
    path otherwise.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise AeronDirError(f"aeron dir {path} is a symbolic link (to {os.readlink(path)}); refusing to use it",
                            path)
    if not stat.S_ISDIR(st.st_mode):
        raise AeronDirError(f"aeron dir {path} exists and is not a directory", path)
    if st.st_uid != os.geteuid():
        raise AeronDirError(f"aeron dir {path} is owned by uid {st.st_uid}, not by this user "
                            f"(uid {os.geteuid()}); refusing to use it", path)
    return True


def delete_aeron_dir(path: str) -> list[tuple[str, OSError]]:
    """Remove an Aeron directory and everything in it, after check_aeron_dir_is_safe.

    Symbolic links inside it are removed, never followed. Returns what could not be removed as
    ``(path, OSError)`` pairs (empty when all went); the caller raises or logs them as fits.
    """
    if not check_aeron_dir_is_safe(path):
        return []
    failures: list[tuple[str, OSError]] = []

    def collect(_function: Any, failed_path: str, exc: Any) -> None:
        error = exc if isinstance(exc, OSError) else exc[1]
        # a directory left non-empty by an entry already reported adds nothing
        if error.errno == errno.ENOTEMPTY and any(p.startswith(failed_path + os.sep) for p, _ in failures):
            return
        failures.append((failed_path, error))

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=collect)
    else:
        shutil.rmtree(path, onerror=collect)
    return failures


def describe_failures(failures: list[tuple[str, OSError]]) -> str:
    """One line per entry left behind: ``path: reason``."""
    return "; ".join(f"{p}: {exc.strerror or exc}" for p, exc in failures)
