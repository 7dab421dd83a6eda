# SPDX-License-Identifier: Apache-2.0
"""Archive operations as Aeron's ArchiveConductor has them: the low storage space threshold (new recordings,
extensions and replications refused with STORAGE_SPACE), a recording whose file system fills up (stopped with
STORAGE_SPACE, everything written before stays recorded and replayable), and the authorisation service
(UNAUTHORISED_ACTION)."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from aeron import Aeron, Context
from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal, SourceLocation
from aeron.archive.archive import AllowAllAuthenticator, ArchivingMediaDriver
from aeron.archive.archive import Context as ArchiveContext
from aeron.archive.control_session import UnauthorisedActionWarning
from aeron.archive.errors import ArchiveErrorCode
from aeron.common.errors import ConfigurationError
from aeron.common.security import ALLOW_ALL, DENY_ALL
from tests.archive.control_client import ControlClient
from tests.archive.test_server import archive_context, collect, record, replay
from tests.archive.test_server_replication import replicate, two_archives  # noqa: F401 - the fixture
from tests.support import driver_context, wait_for

pytestmark = pytest.mark.timeout(120)

IPC = "aeron:ipc?term-length=64k"
THRESHOLD = 1 << 20


class Space:
    """A usable-space probe the test sets."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return self.value


@pytest.fixture
def space():
    return Space(1 << 40)


def launch(shm_dir, **archive_settings):
    return ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")),
                                       archive_context(shm_dir / "archive", **archive_settings))


def connect(aeron, **kw):
    client = ControlClient(aeron, IPC, 10, IPC, 20, **kw)
    response = client.connect()
    assert response.code == ControlResponseCode.OK, response
    return client


# -- low storage space ---------------------------------------------------------------------------------------------
def test_low_storage_space_refuses_recordings_and_extensions_but_not_replays(shm_dir, space):
    with launch(shm_dir, usable_space_probe=space, low_storage_space_threshold=THRESHOLD) as amd, \
            Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
        client = connect(aeron)
        messages = [bytes([i]) * 300 for i in range(40)]
        recording_id, sub_id, pub, stop = record(client, aeron, IPC, 1001, messages)
        client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
        client.wait_signal(RecordingSignal.STOP, recording_id)
        pub.close()
        space.value = THRESHOLD                     # at the threshold: refused, as Aeron's "<="
        expected = f"low storage threshold={THRESHOLD} <= usableSpace={THRESHOLD}"
        for encoder, fields in (
                (codecs.StartRecordingRequestEncoder, {}),
                (codecs.StartRecordingRequest2Encoder, dict(auto_stop=codecs.BooleanType.FALSE)),
                (codecs.ExtendRecordingRequestEncoder, dict(recording_id=recording_id)),
                (codecs.ExtendRecordingRequest2Encoder, dict(recording_id=recording_id,
                                                             auto_stop=codecs.BooleanType.FALSE))):
            refused = client.call(encoder, stream_id=1001, source_location=SourceLocation.LOCAL, channel=IPC,
                                  **fields)
            assert refused.code == ControlResponseCode.ERROR, encoder
            assert refused.relevant_id == ArchiveErrorCode.STORAGE_SPACE and refused.error_message == expected
        assert amd.archive.conductor.recording_subscriptions == {}
        # what is recorded can still be read
        _, sub = replay(client, aeron, recording_id, length=stop, stream_id=1002)
        assert collect(sub, len(messages)) == messages
        space.value = THRESHOLD + 1
        assert client.ok(codecs.StartRecordingRequestEncoder, stream_id=1003, source_location=SourceLocation.LOCAL,
                         channel=IPC) > 0
        client.close()


def test_low_storage_space_ends_a_replication_with_storage_space(two_archives):
    src, dst, src_aeron, dst_aeron, src_client, dst_client, src_control = two_archives
    src_id, sub_id, pub, _ = record(src_client, src_aeron, IPC, 1000, [b"m" * 500] * 30)
    src_client.ok(codecs.StopRecordingSubscriptionRequestEncoder, subscription_id=sub_id)
    src_client.wait_signal(RecordingSignal.STOP, src_id)
    dst.archive.context.usable_space_probe = lambda: 0
    replication_id = replicate(dst_client, src_control, src_id)
    error = dst_client.wait_response(replication_id, "ControlResponse", timeout_s=30)
    assert error.code == ControlResponseCode.ERROR and error.relevant_id == ArchiveErrorCode.STORAGE_SPACE
    assert "low storage threshold=" in error.error_message
    dst_client.wait_signal(RecordingSignal.REPLICATE_END, timeout_s=30)
    assert dst.archive.conductor.recording_subscriptions == {}
    pub.close()


def test_low_storage_space_settings():
    ctx = ArchiveContext({"aeron.archive.low.storage.space.threshold": "64m"}, environ={})
    assert ctx.low_storage_space_threshold == 64 << 20
    ctx = ArchiveContext(environ={"AERON_ARCHIVE_LOW_STORAGE_SPACE_THRESHOLD": "4k"})
    assert ctx.low_storage_space_threshold == 4096
    assert ArchiveContext(environ={}).low_storage_space_threshold == 128 << 20
    with pytest.raises(ConfigurationError, match="low.storage.space.threshold"):
        ArchiveContext(environ={}, control_channel_enabled=False, low_storage_space_threshold=-1).conclude()
    ctx = ArchiveContext(environ={}, control_channel_enabled=False, archive_dir="/dev/shm" if
                         os.path.isdir("/dev/shm") else "/tmp").conclude()
    stat = os.statvfs(ctx.archive_dir)
    assert ctx.usable_space_probe() == pytest.approx(stat.f_bavail * stat.f_frsize, rel=0.05)


# -- a full file system ------------------------------------------------------------------------------------------
@pytest.fixture
def small_tmpfs(shm_dir):
    """A 256 KiB tmpfs (needs the right to mount: root; skipped otherwise)."""
    mount_point = shm_dir / "small"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, timeout=30)


def test_a_recording_that_fills_its_file_system_stops_with_storage_space(shm_dir, small_tmpfs):
    # the catalog and the segments on the small tmpfs; the mark file (whose error log grows) and the driver off it
    ctx = archive_context(small_tmpfs / "archive", mark_file_dir=str(shm_dir / "mark"), catalog_capacity=64 * 1024,
                          low_storage_space_threshold=16 * 1024)
    with ArchivingMediaDriver.launch(driver_context(aeron_dir=str(shm_dir / "driver")), ctx) as amd, \
            Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
        client = connect(aeron)
        correlation_id = client.request(codecs.StartRecordingRequestEncoder, stream_id=1001,
                                        source_location=SourceLocation.LOCAL, channel=IPC)
        assert client.wait_response(correlation_id, "ControlResponse").code == ControlResponseCode.OK
        pub = aeron.add_exclusive_publication(IPC, 1001)
        recording_id = client.wait_signal(RecordingSignal.START).recording_id
        messages, ends = [], []
        deadline = time.monotonic() + 60
        stopped = None
        while stopped is None and time.monotonic() < deadline:
            message = len(messages).to_bytes(4, "little") * 250
            position = pub.offer(message)
            if position > 0:
                messages.append(message)
                ends.append(position)
                continue
            client.subscription.poll(client._assembler, 10)     # take in what the archive sent
            stopped = next((m for m in client.messages if m.name == "RecordingSignalEvent" and
                            m.signal == RecordingSignal.STOP and m.recording_id == recording_id), None)
            time.sleep(0.001)
        assert stopped is not None, "the recording did not stop on a full file system"
        error = client.wait_response(correlation_id, "ControlResponse")
        assert error.code == ControlResponseCode.ERROR and error.relevant_id == ArchiveErrorCode.STORAGE_SPACE
        assert error.error_message.startswith(f"recording {recording_id} failed: OSError") and \
            "No space left on device" in error.error_message
        stop = stopped.position
        assert 128 * 1024 <= stop < ends[-1] and stop % 32 == 0    # two segments at least, not all of it
        assert client.ok(codecs.StopPositionRequestEncoder, recording_id=recording_id) == stop
        kept = [m for m, end in zip(messages, ends) if end <= stop]
        _, sub = replay(client, aeron, recording_id, length=stop, stream_id=1002)
        assert collect(sub, len(kept)) == kept
        # the file system is now below the threshold: no new recording
        refused = client.call(codecs.StartRecordingRequestEncoder, stream_id=1003,
                              source_location=SourceLocation.LOCAL, channel=IPC)
        assert refused.code == ControlResponseCode.ERROR and refused.relevant_id == ArchiveErrorCode.STORAGE_SPACE
        assert any(isinstance(e, OSError) for e in amd.archive.conductor.errors)
        pub.close()
        client.close()


# -- authorisation -------------------------------------------------------------------------------------------------
class Authorisation:
    """Denies the templates it is given; remembers every question."""

    def __init__(self, *denied: int) -> None:
        self.denied = set(denied)
        self.asked: list[tuple] = []

    def is_authorised(self, protocol_id, action_id, type, encoded_principal) -> bool:
        self.asked.append((protocol_id, action_id, type, encoded_principal))
        return action_id not in self.denied


class NamedPrincipal(AllowAllAuthenticator):
    def on_connected_session(self, proxy, now_ms):
        proxy.authenticate(b"alice")


def deny_archive_id():
    """A supplier the property names (tests.archive.test_server_ops:deny_archive_id)."""
    return Authorisation(codecs.ArchiveIdRequestDecoder.TEMPLATE_ID)


def test_a_denied_request_is_answered_unauthorised_action(shm_dir):
    service = Authorisation(codecs.ArchiveIdRequestDecoder.TEMPLATE_ID, codecs.StopPositionRequestDecoder.TEMPLATE_ID)
    with launch(shm_dir, authorisation_service=service, authenticator=NamedPrincipal()) as amd, \
            Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
        client = connect(aeron)
        denied = client.call(codecs.ArchiveIdRequestEncoder)
        assert denied.code == ControlResponseCode.ERROR
        assert (denied.relevant_id, denied.error_message) == (ArchiveErrorCode.UNAUTHORISED_ACTION,
                                                              "unauthorised action")
        assert client.call(codecs.StopPositionRequestEncoder, recording_id=0).relevant_id == \
            ArchiveErrorCode.UNAUTHORISED_ACTION
        # others go through, asked with the archive schema id, the template id and the session's principal
        unknown = client.call(codecs.StartPositionRequestEncoder, recording_id=0)
        assert unknown.code == ControlResponseCode.ERROR and unknown.relevant_id == ArchiveErrorCode.UNKNOWN_RECORDING
        assert (codecs.SCHEMA_ID, codecs.StartPositionRequestDecoder.TEMPLATE_ID, None, b"alice") in service.asked
        assert (codecs.SCHEMA_ID, codecs.KeepAliveRequestDecoder.TEMPLATE_ID, None, b"alice") in service.asked
        warnings = [e for e in amd.archive.conductor.errors if isinstance(e, UnauthorisedActionWarning)]
        assert len(warnings) == 2 and f"action={codecs.ArchiveIdRequestDecoder.TEMPLATE_ID}" in str(warnings[0])
        client.close()


def test_deny_all_still_lets_a_session_close(shm_dir):
    with launch(shm_dir, authorisation_service=DENY_ALL) as amd, \
            Aeron.connect(Context(aeron_dir=amd.driver.aeron_dir)) as aeron:
        client = connect(aeron)
        assert client.call(codecs.ArchiveIdRequestEncoder).relevant_id == ArchiveErrorCode.UNAUTHORISED_ACTION
        conductor = amd.archive.conductor
        assert len(conductor.sessions) == 1
        client.request(codecs.CloseSessionRequestEncoder)
        wait_for(lambda: not conductor.sessions, what="session closed")
        client.close()


def test_authorisation_settings():
    def concluded(**kw):
        return ArchiveContext(environ=kw.pop("environ", {}), control_channel_enabled=False, **kw).conclude()

    assert concluded().authorisation_service is ALLOW_ALL
    assert concluded(authorisation_service_supplier="DENY_ALL").authorisation_service is DENY_ALL
    assert concluded(environ={"AERON_ARCHIVE_AUTHORISATION_SERVICE_SUPPLIER": "DENY_ALL"}).authorisation_service \
        is DENY_ALL
    ctx = ArchiveContext({"aeron.archive.authorisation.service.supplier": "tests.archive.test_server_ops:"
                          "deny_archive_id"}, environ={}, control_channel_enabled=False).conclude()
    assert isinstance(ctx.authorisation_service, Authorisation)
    assert not ctx.authorisation_service.is_authorised(codecs.SCHEMA_ID, codecs.ArchiveIdRequestDecoder.TEMPLATE_ID,
                                                       None, b"")
    function = concluded(authorisation_service=lambda p, a, t, principal: principal == b"root").authorisation_service
    assert function.is_authorised(101, 1, None, b"root") and not function.is_authorised(101, 1, None, None)
    for bad in ("no.such.module:thing", "tests.archive.test_server_ops", "tests.archive.test_server_ops:nothing"):
        with pytest.raises(ConfigurationError, match="authorisation service supplier"):
            concluded(authorisation_service_supplier=bad)
    with pytest.raises(ConfigurationError, match="not an authorisation service"):
        concluded(authorisation_service=42)

