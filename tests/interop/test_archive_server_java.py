# SPDX-License-Identifier: Apache-2.0
"""The official Java AeronArchive client drives our archive on our driver: connect, archive id, start a recording,
publish (Java), stop, list, replay and compare byte for byte, positions, truncate. A small Java program is compiled in
the test's directory with javac. Needs AERON_JAVA_CP (skips without it)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from aeron.archive.archive import ArchivingMediaDriver
from tests.archive.test_server import archive_context
from tests.procs import client_env
from tests.support import driver_context, free_port

JAVA_SOURCE = r"""
import io.aeron.*;
import io.aeron.archive.client.*;
import io.aeron.archive.codecs.*;
import org.agrona.concurrent.UnsafeBuffer;
import java.util.*;

public class ArchiveDriver {
    public static void main(String[] args) throws Exception {
        String aeronDir = args[0];
        String control = args[1];
        String response = args[2];
        String channel = args[3];
        int count = Integer.parseInt(args[4]);
        Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(aeronDir));
        AeronArchive.Context ctx = new AeronArchive.Context().aeron(aeron)
            .controlRequestChannel(control).controlRequestStreamId(10)
            .controlResponseChannel(response).controlResponseStreamId(20)
            .messageTimeoutNs(10_000_000_000L);
        try (AeronArchive archive = AeronArchive.connect(ctx)) {
            System.out.println("ARCHIVE_ID " + archive.archiveId());
            long subId = archive.startRecording(channel, 1001, SourceLocation.LOCAL);
            List<byte[]> sent = new ArrayList<>();
            long recordingId;
            long stop;
            try (Publication pub = aeron.addExclusivePublication(channel, 1001)) {
                while (!pub.isConnected()) Thread.sleep(1);
                Random rnd = new Random(7);
                UnsafeBuffer buffer = new UnsafeBuffer(new byte[8192]);
                for (int i = 0; i < count; i++) {
                    byte[] msg = new byte[1 + rnd.nextInt(5000)];
                    rnd.nextBytes(msg);
                    sent.add(msg);
                    buffer.putBytes(0, msg);
                    while (pub.offer(buffer, 0, msg.length) < 0) Thread.yield();
                }
                stop = pub.position();
                recordingId = -1;
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (recordingId < 0 && System.nanoTime() < deadline) {
                    recordingId = archive.findLastMatchingRecording(0, "aeron:ipc", 1001, pub.sessionId());
                }
                while (archive.getRecordingPosition(recordingId) < stop) Thread.sleep(1);
            }
            archive.stopRecording(subId);
            while (archive.getStopPosition(recordingId) != stop) Thread.sleep(1);
            System.out.println("RECORDED " + recordingId + " " + stop);
            final long rid = recordingId;
            int listed = archive.listRecording(recordingId, (controlSessionId, correlationId, recId, startTimestamp,
                stopTimestamp, startPosition, stopPosition, initialTermId, segmentFileLength, termBufferLength,
                mtuLength, sessionId, streamId, strippedChannel, originalChannel, sourceIdentity) ->
                System.out.println("LISTED " + recId + " " + startPosition + " " + stopPosition + " " + streamId + " "
                    + strippedChannel + " " + sourceIdentity));
            System.out.println("LISTED_COUNT " + listed);
            System.out.println("MAX " + archive.getMaxRecordedPosition(rid) + " START " + archive.getStartPosition(rid));
            List<byte[]> got = new ArrayList<>();
            FragmentAssembler assembler = new FragmentAssembler((buf, offset, length, header) -> {
                byte[] b = new byte[length];
                buf.getBytes(offset, b);
                got.add(b);
            });
            try (Subscription replay = archive.replay(recordingId, 0, stop, "aeron:ipc", 1002)) {
                long deadline = System.nanoTime() + 20_000_000_000L;
                while (got.size() < count && System.nanoTime() < deadline) {
                    if (replay.poll(assembler, 100) == 0) Thread.yield();
                }
            }
            boolean same = got.size() == sent.size();
            for (int i = 0; same && i < sent.size(); i++) same = Arrays.equals(sent.get(i), got.get(i));
            System.out.println("REPLAYED " + got.size() + " " + (same ? "SAME" : "DIFFERENT"));
            try {
                archive.replay(recordingId + 100, 0, -1, "aeron:ipc", 1003);
                System.out.println("NO_ERROR");
            } catch (ArchiveException ex) {
                System.out.println("ERROR_CODE " + ex.errorCode());
            }
            archive.truncateRecording(recordingId, 0);
            System.out.println("TRUNCATED " + archive.getStopPosition(recordingId));
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


@pytest.mark.parametrize("transport", ["ipc", "udp"])
def test_java_aeron_archive_client_records_and_replays_through_our_archive(java_cp, shm_dir, transport):
    src_dir = shm_dir / "java"
    src_dir.mkdir()
    (src_dir / "ArchiveDriver.java").write_text(JAVA_SOURCE)
    subprocess.run(["javac", "-cp", java_cp, "-d", str(src_dir), str(src_dir / "ArchiveDriver.java")], check=True,
                   timeout=120, capture_output=True)
    if transport == "udp":
        port = free_port()
        control = f"aeron:udp?endpoint=127.0.0.1:{port}"
        response = f"aeron:udp?endpoint=127.0.0.1:{free_port()}"
        actx = archive_context(shm_dir / "archive", control_channel_enabled=True, control_channel=control)
    else:
        control = response = "aeron:ipc?term-length=64k"
        actx = archive_context(shm_dir / "archive")
    amd = ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")), actx)
    try:
        out = subprocess.run(
            ["java", "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED", "-cp", f"{java_cp}:{src_dir}",
             "ArchiveDriver", amd.driver.aeron_dir, control, response, "aeron:ipc?term-length=64k", "300"],
            env=client_env(), capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
        assert int(lines["ARCHIVE_ID"]) == amd.archive.archive_id
        recording_id, stop = map(int, lines["RECORDED"].split())
        assert lines["LISTED_COUNT"] == "1"
        listed = lines["LISTED"].split()
        assert listed[:4] == [str(recording_id), "0", str(stop), "1001"]
        assert listed[4:] == ["aeron:ipc", "aeron:ipc"]
        assert lines["MAX"] == f"{stop} START 0"
        assert lines["REPLAYED"] == "300 SAME"
        assert lines["ERROR_CODE"] == "5"                       # UNKNOWN_RECORDING
        assert lines["TRUNCATED"] == "0"
    finally:
        amd.close()
