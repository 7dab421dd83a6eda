# SPDX-License-Identifier: Apache-2.0
"""The slow disk library: each fsync, fdatasync and msync of a process that preloads it is delayed (and counted)
while its control file holds a delay, and only then."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cluster.faults import slow_disk

FORCES = """
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
os.write(fd, b"x" * 4096)
os.fsync(fd)
os.fdatasync(fd)
with mmap.mmap(fd, 4096) as m:
    m.flush()
os.close(fd)
"""


def test_forces_are_delayed_only_while_the_control_file_says_so(tmp_path):
    library, why = slow_disk.build(tmp_path)
    if library is None:
        pytest.skip(why)
    control = tmp_path / "control"
    env = {"LD_PRELOAD": str(library), "FAULTS_SLOW_DISK_FILE": str(control)}

    def forces() -> None:
        subprocess.run([sys.executable, "-c", FORCES, str(tmp_path / "data")], env=env, check=True, timeout=60)

    forces()                                          # no control file: no delay
    assert slow_disk.delayed_forces(control) == 0
    slow_disk.set_delay(control, 0)
    forces()
    assert slow_disk.delayed_forces(control) == 0
    slow_disk.set_delay(control, 20)
    forces()
    assert slow_disk.delayed_forces(control) == 3     # fsync, fdatasync and msync, each once
    slow_disk.set_delay(control, 0)
    forces()
    assert slow_disk.delayed_forces(control) == 3
