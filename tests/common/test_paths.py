# SPDX-License-Identifier: Apache-2.0
"""Removing an Aeron directory: a symlinked or foreign directory is refused with AeronDirError naming it, links
inside are removed and not followed, and entries that cannot be removed are reported, not ignored."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from aeron.common.errors import AeronDirError, ConfigurationError
from aeron.common.paths import check_aeron_dir_is_safe, delete_aeron_dir, describe_failures
from tests import procs


def can_mount_in_user_namespace() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-Urm", "true"], capture_output=True).returncode == 0


needs_userns = pytest.mark.skipif(not can_mount_in_user_namespace(),
                                  reason="no user and mount namespaces (unshare -Urm) on this machine")


def in_mount_namespace(script: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``script`` in a child Python inside a new user and mount namespace (mounts made there vanish with it)."""
    return subprocess.run(["unshare", "-Urm", sys.executable, "-c", textwrap.dedent(script), *args],
                          capture_output=True, text=True, env=procs.client_env(), timeout=60)


def test_missing_dir_is_nothing_to_do(shm_dir):
    assert check_aeron_dir_is_safe(str(shm_dir / "absent")) is False
    assert delete_aeron_dir(str(shm_dir / "absent")) == []


def test_symlinked_dir_is_refused_and_its_target_kept(shm_dir):
    target = shm_dir / "precious"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    link = shm_dir / "aeron"
    link.symlink_to(target, target_is_directory=True)
    with pytest.raises(AeronDirError, match="symbolic link") as info:
        delete_aeron_dir(str(link))
    assert info.value.path == str(link) and str(link) in str(info.value)
    assert isinstance(info.value, ConfigurationError)
    assert (target / "keep.txt").read_text() == "keep" and link.is_symlink()
    dangling = shm_dir / "dangling"
    dangling.symlink_to(shm_dir / "nowhere")
    with pytest.raises(AeronDirError, match="symbolic link"):
        delete_aeron_dir(str(dangling))


def test_dir_of_another_user_is_refused(shm_dir, monkeypatch):
    aeron_dir = shm_dir / "aeron"
    aeron_dir.mkdir()
    (aeron_dir / "cnc.dat").write_bytes(b"x")
    owner = os.stat(aeron_dir).st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)        # as if another user ran the driver
    with pytest.raises(AeronDirError, match=f"owned by uid {owner}, not by this user") as info:
        delete_aeron_dir(str(aeron_dir))
    assert info.value.path == str(aeron_dir)
    assert (aeron_dir / "cnc.dat").exists()


def test_a_file_is_refused(shm_dir):
    path = shm_dir / "file"
    path.write_bytes(b"")
    with pytest.raises(AeronDirError, match="not a directory"):
        delete_aeron_dir(str(path))


def test_links_inside_are_removed_not_followed(shm_dir):
    outside = shm_dir / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    aeron_dir = shm_dir / "aeron"
    (aeron_dir / "publications").mkdir(parents=True)
    (aeron_dir / "publications" / "to-outside").symlink_to(outside, target_is_directory=True)
    (aeron_dir / "cnc.dat").write_bytes(b"x")
    assert delete_aeron_dir(str(aeron_dir)) == []
    assert not aeron_dir.exists()
    assert (outside / "keep.txt").read_text() == "keep"


@needs_userns
def test_what_cannot_be_removed_is_reported(shm_dir):
    aeron_dir = shm_dir / "aeron"
    (aeron_dir / "images").mkdir(parents=True)
    (aeron_dir / "cnc.dat").write_bytes(b"x")
    out = in_mount_namespace("""
        import subprocess, sys
        from aeron.common.paths import delete_aeron_dir, describe_failures
        busy = sys.argv[1] + "/images"
        subprocess.run(["mount", "-t", "tmpfs", "none", busy], check=True)   # a mount point: rmdir gives EBUSY
        failures = delete_aeron_dir(sys.argv[1])
        print([p for p, _ in failures] == [busy], describe_failures(failures))
        """, str(aeron_dir))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True "), out.stdout
    assert f"{aeron_dir}/images: Device or resource busy" in out.stdout
    assert not (aeron_dir / "cnc.dat").exists()          # the rest went


def test_describe_failures():
    assert describe_failures([("/a/b", PermissionError(13, "Permission denied"))]) == "/a/b: Permission denied"
