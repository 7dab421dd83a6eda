# SPDX-License-Identifier: Apache-2.0
"""Issue 15 defect 1: the aeron dir on a full file system. A user and mount namespace gives the test a 6 MiB tmpfs
(skipped where the machine does not allow it); an embedded driver and a client in it see adds that do not fit refused
with STORAGE_SPACE (StorageSpaceError) instead of a SIGBUS, and the driver goes on serving."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _namespace_tmpfs_works(mount_dir: str) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-Urm", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {mount_dir}"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def test_full_file_system_answers_storage_space_and_the_driver_goes_on(tmp_path):
    mount_dir = tmp_path / "small"
    mount_dir.mkdir()
    if not _namespace_tmpfs_works(str(mount_dir)):
        pytest.skip("no unprivileged user and mount namespaces with tmpfs here")
    script = f"mount -t tmpfs -o size=6m tmpfs {mount_dir} && exec {sys.executable} {HERE}/disk_full_child.py " \
             f"{mount_dir}"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(["unshare", "-Urm", "sh", "-c", script], capture_output=True, text=True, timeout=90,
                          env=env, cwd=ROOT)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["big"] != "created", "a 12 MiB log was made on a 6 MiB file system"
    name, is_storage_space, text = out["big"]
    assert (name, is_storage_space) == ("StorageSpaceError", True)
    assert "insufficient usable storage" in text
    assert out["full"] == ["StorageSpaceError", True]
    assert out["flowed"] is True
    assert out["after"] == 3
    assert len(out["leftover_logs"]) == 2          # the two that were made: nothing left of the refused ones
