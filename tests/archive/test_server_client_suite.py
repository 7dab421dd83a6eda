# SPDX-License-Identifier: Apache-2.0
"""Our archive client against our archive server: the whole client suite of tests/archive/client_suite.py (which
tests/interop/test_archive_client_java.py runs against the official Java archive), here with our
ArchivingMediaDriver in this process, set up as the Java one is there."""

import os
import time

import pytest

from aeron._core.codecs.archive import RecordingSignal
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.archive import ArchiveError
from tests.archive.archives import SEGMENT_LENGTH, our_archive, scratch_dir
from tests.archive.client_suite import *  # noqa: F401,F403 - the shared tests run here against our archive
from tests.archive.client_suite import STREAM_ID, WAIT_S, await_signal, payloads, record, udp_channel
from tests.support import wait_for


@pytest.fixture(scope="module")
def our_base():
    with scratch_dir("parc") as path:
        yield path


@pytest.fixture(scope="module")
def archive(our_base):
    with our_archive(our_base, "src", 4711) as handle:
        yield handle


@pytest.fixture(scope="module")
def second_archive(our_base):
    with our_archive(our_base, "dst", 4712) as handle:
        yield handle


# -- ours only -------------------------------------------------------------------------------------------------------
# A replay of a recording whose files lost data must end with an ERROR naming the segment file and the position. The
# Java archive (1.50) does not: it replays what its read buffer held from before (bytes of the previous segment) and
# then goes silent, so these run against ours only.


def cut_short(archive_dir, recording_id, stop):
    last_base = stop - stop % SEGMENT_LENGTH
    os.truncate(os.path.join(archive_dir, f"{recording_id}-{last_base}.rec"), 1000)
    return last_base, f"{recording_id}-{last_base}.rec"


def zeroed(archive_dir, recording_id, stop):
    last_base = stop - stop % SEGMENT_LENGTH
    path = os.path.join(archive_dir, f"{recording_id}-{last_base}.rec")
    with open(path, "r+b") as f:                # a hole where the catalog says frames are: the size is unchanged
        f.seek(4096)
        f.write(bytes(4096))
    return last_base + 4096, f"{recording_id}-{last_base}.rec"


@pytest.mark.parametrize("damage", [cut_short, zeroed])
def test_replay_of_a_recording_that_lost_data_ends_with_an_error(client, aeron, signals, archive, damage):
    messages = payloads(3 * SEGMENT_LENGTH // 128 + 100, size=92)     # 128 bytes a frame: four segment files
    channel = udp_channel()
    recording_id, stop, publication = record(client, aeron, signals, messages, channel)
    client.stop_recording(channel, STREAM_ID)
    await_signal(client, signals, RecordingSignal.STOP)
    publication.close()
    lost_from, segment = damage(archive.archive_dir, recording_id, stop)     # the catalog still says `stop`
    subscription = client.replay(recording_id, udp_channel(), 2031, 0, stop)
    replay_correlation_id = client.last_correlation_id
    try:
        got: list[bytes] = []
        assembler = FragmentAssembler(lambda buf, off, length, hdr: got.append(buf.get_bytes(off, length)))
        wait_for(lambda: subscription.image_count > 0, WAIT_S, invoke=lambda: time.sleep(0.001), what="replay image")
        # the replay ends (its image goes) short of the recording's end, rather than waiting forever
        wait_for(lambda: all(i.is_closed or i.is_end_of_stream for i in subscription.images),
                 WAIT_S, invoke=lambda: subscription.poll(assembler, 100) or time.sleep(0.001), what="replay ended")
        subscription.poll(assembler, 1000)
        assert got == messages[:lost_from // 128]                     # all before the loss, nothing after
    finally:
        subscription.close()
    # as Aeron's client: the ERROR answers the replay request on the control session
    error = wait_for(lambda: client.replay_error(replay_correlation_id), WAIT_S, what="replay error")
    assert isinstance(error, ArchiveError) and error.correlation_id == replay_correlation_id
    assert os.path.join(archive.archive_dir, segment) in str(error) and f"position={lost_from}" in str(error), error
    assert client.replay_error(replay_correlation_id) is None          # read once
