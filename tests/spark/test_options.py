# SPDX-License-Identifier: Apache-2.0
"""The Spark source's and sink's shared option parsing and waiting, without Spark, a driver or an archive: an integer
option that is empty or not an integer is an InvalidArgumentError naming it, wherever it is read (the archive
options, the source's, the sink's); a wait that never ends is an AeronTimeoutError saying what did not happen, in
the replay of the source and in the sink, which give up what they started."""
import time

import pytest

from aeron.common.errors import AeronTimeoutError, InvalidArgumentError
from aeron.spark import replay, sink
from aeron.spark.connection import ArchiveSettings, int_option, poll_until
from aeron.spark.sink import SinkSettings
from aeron.spark.source import Selection

UDP = "aeron:udp?endpoint=h:1"


def test_an_integer_option_is_its_default_when_absent_and_an_error_when_empty_or_not_a_number():
    assert int_option({}, "n", 7) == 7 and int_option({}, "n", None) is None
    assert int_option({"n": "-12"}, "n", 7) == -12
    for bad in ("", "ten", "1.5"):
        with pytest.raises(InvalidArgumentError, match=f"option n must be an integer, got {bad!r}"):
            int_option({"n": bad}, "n", 7)


@pytest.mark.parametrize("name", ["controlStreamId", "controlResponseStreamId", "replayStreamId", "timeoutMs"])
def test_an_empty_archive_option_is_an_error_naming_it(name):
    with pytest.raises(InvalidArgumentError, match=f"option {name} must be an integer"):
        ArchiveSettings.from_options({"controlChannel": UDP, name: ""})


@pytest.mark.parametrize("name", ["fromPosition", "toPosition"])
def test_an_empty_source_option_is_an_error_naming_it(name):
    with pytest.raises(InvalidArgumentError, match=f"option {name} must be an integer"):
        Selection.from_options({"path": "/archive", name: ""})
    selection = Selection.from_options({"path": "/archive", "fromPosition": "4096", "toPosition": "8192"})
    assert (selection.from_position, selection.to_position) == (4096, 8192)


def test_an_empty_sink_stream_id_is_an_error_naming_it():
    with pytest.raises(InvalidArgumentError, match="option streamId must be an integer, got ''"):
        SinkSettings.from_options({"channel": "aeron:ipc", "streamId": ""})
    with pytest.raises(InvalidArgumentError, match="needs option"):
        SinkSettings.from_options({"channel": "aeron:ipc"})
    assert SinkSettings.from_options({"channel": "aeron:ipc", "streamId": "16"}).stream_id == 16


def test_poll_until_returns_what_the_probe_found_or_times_out_saying_what():
    answers = iter([None, False, 0])
    assert poll_until(lambda: next(answers), 5, "nothing", 0.0001) == 0       # 0 is an answer, None and False not
    start = time.monotonic()
    with pytest.raises(AeronTimeoutError, match=r"^no answer within 0\.05 s$"):
        poll_until(lambda: None, 0.05, "no answer", 0.001)
    assert time.monotonic() - start >= 0.05


class _Closable:
    def __init__(self):
        self.closed = False

    def close(self):
        self.closed = True


def test_a_replay_port_never_bound_times_out_and_closes_its_subscription():
    subscription = _Closable()
    subscription.try_resolve_channel_endpoint_port = lambda: None

    class Conn:
        class aeron:
            @staticmethod
            def add_subscription(channel, stream_id):
                return subscription
        archive = object()

    settings = ArchiveSettings(UDP, replay_channel="aeron:udp?endpoint=localhost:0", timeout_ms=50)
    with pytest.raises(AeronTimeoutError, match=r"no bound replay port within 0\.05 s"):
        replay._Replay(Conn(), settings, 1, 0, 4096)
    assert subscription.closed


def test_a_recording_the_archive_never_lists_times_out_and_is_stopped():
    stopped = []

    class Archive:
        def start_recording(self, channel, stream_id, source_location):
            return 99

        def find_last_matching_recording(self, min_recording_id, channel, stream_id, session_id):
            return -1

        def try_stop_recording_subscription(self, subscription_id):
            stopped.append(subscription_id)

    class Publication:
        session_id = 5

    settings = SinkSettings.from_options({"channel": "aeron:ipc", "streamId": "3", "timeoutMs": "50"})
    with pytest.raises(AeronTimeoutError, match=r"no recording of session 5 stream 3 within 0\.05 s"):
        sink._start_recording(Archive(), Publication(), settings)
    assert stopped == [99]
