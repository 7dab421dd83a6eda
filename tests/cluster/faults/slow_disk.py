# SPDX-License-Identifier: Apache-2.0
"""The campaign's slow disk: ``slow_disk.c`` built with the machine's C compiler into an LD_PRELOAD library that
delays each fsync, fdatasync and msync of a member's processes while the member's control file says so. Without a
compiler the campaign leaves the ``slowdisk`` kind out (``build`` says why)."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

SOURCE = pathlib.Path(__file__).with_name("slow_disk.c")


def build(out_dir: pathlib.Path) -> tuple[pathlib.Path | None, str]:
    """(the library built in ``out_dir``, "") or (None, why: the machine has no C compiler). A missing source
    (FileNotFoundError) or a failed build (RuntimeError) is a broken set-up and raises."""
    if not SOURCE.is_file():
        raise FileNotFoundError(f"the slow disk library's source is missing: {SOURCE}")
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None, "no C compiler (cc) to build the slow disk library"
    library = out_dir / "slow_disk.so"
    done = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(library), str(SOURCE), "-ldl"],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:        # a compiler that cannot build our source is a broken set-up, not a machine without cc
        raise RuntimeError(f"{compiler} could not build {SOURCE.name}: {done.stderr.strip()[:500]}")
    return library, ""


def set_delay(path: str | os.PathLike[str], delay_ms: int) -> None:
    """Delay each force of the processes reading ``path`` by ``delay_ms`` (0: none), atomically."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(str(int(delay_ms)))
    os.replace(tmp, path)


def delayed_forces(path: str | os.PathLike[str]) -> int:
    """How many forces the library has delayed for ``path`` so far."""
    try:
        return os.path.getsize(f"{path}.count")
    except OSError:
        return 0
