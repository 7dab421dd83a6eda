# SPDX-License-Identifier: Apache-2.0
"""The official Java AeronArchive client meets our archive's refusals: a recording refused for low storage space
and a request refused by the authorisation service arrive as ArchiveExceptions with Aeron's error codes
(STORAGE_SPACE 11, UNAUTHORISED_ACTION 13) and our messages. A small Java program is compiled with javac; needs
AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from aeron._core.codecs import archive as codecs
from aeron.archive.archive import ArchivingMediaDriver
from aeron.archive.errors import ArchiveErrorCode
from tests.archive.test_server import archive_context
from tests.procs import client_env
from tests.support import driver_context

JAVA_SOURCE = r"""
import io.aeron.*;
import io.aeron.archive.client.*;
import io.aeron.archive.codecs.*;

public class ArchiveOps {
    public static void main(String[] args) throws Exception {
        Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(args[0]));
        AeronArchive.Context ctx = new AeronArchive.Context().aeron(aeron)
            .controlRequestChannel(args[1]).controlRequestStreamId(10)
            .controlResponseChannel(args[1]).controlResponseStreamId(20)
            .messageTimeoutNs(10_000_000_000L);
        try (AeronArchive archive = AeronArchive.connect(ctx)) {
            System.out.println("ARCHIVE_ID " + archive.archiveId());
            try {
                archive.startRecording("aeron:ipc", 1001, SourceLocation.LOCAL);
                System.out.println("START NO_ERROR");
            } catch (ArchiveException ex) {
                boolean ours = ex.getMessage().contains("low storage threshold=");
                System.out.println("START " + ex.errorCode() + " " + ours);
            }
            try {
                archive.getStopPosition(0);
                System.out.println("STOP_POSITION NO_ERROR");
            } catch (ArchiveException ex) {
                boolean ours = ex.getMessage().contains("unauthorised action");
                System.out.println("STOP_POSITION " + ex.errorCode() + " " + ours);
            }
        }
        aeron.close();
    }
}
"""


@pytest.fixture
def java_cp():
    value = os.environ.get("AERON_JAVA_CP")
    if not value:
        pytest.skip("AERON_JAVA_CP is not set: the official Java archive client is not available")
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not installed")
    return value


def test_java_client_sees_storage_space_and_unauthorised_action(java_cp, shm_dir):
    src_dir = shm_dir / "java"
    src_dir.mkdir()
    (src_dir / "ArchiveOps.java").write_text(JAVA_SOURCE)
    subprocess.run(["javac", "-cp", java_cp, "-d", str(src_dir), str(src_dir / "ArchiveOps.java")], check=True,
                   timeout=120, capture_output=True)
    denied = codecs.StopPositionRequestDecoder.TEMPLATE_ID
    actx = archive_context(shm_dir / "archive", usable_space_probe=lambda: 4096,
                           authorisation_service=lambda protocol, action, kind, principal: action != denied)
    channel = "aeron:ipc?term-length=64k"
    with ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")), actx) as amd:
        out = subprocess.run(
            ["java", "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED", "-cp", f"{java_cp}:{src_dir}",
             "ArchiveOps", amd.driver.aeron_dir, channel], env=client_env(), capture_output=True, text=True,
            timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
        assert int(lines["ARCHIVE_ID"]) == amd.archive.archive_id
        assert lines["START"] == f"{int(ArchiveErrorCode.STORAGE_SPACE)} true"
        assert lines["STOP_POSITION"] == f"{int(ArchiveErrorCode.UNAUTHORISED_ACTION)} true"
