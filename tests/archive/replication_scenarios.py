# SPDX-License-Identifier: Apache-2.0
"""Replication scenarios between two archives, each an :class:`tests.archive.archives.ArchiveHandle` (ours or the
official Java one): a live recording replicated with a merge onto its live stream while the publisher keeps
publishing, optionally followed through a subscription naming the replication's tags, and a stopped recording
replicated over response channels, every answer for the replication id kept. Run between two of ours by
tests/archive/test_server_replication_live.py and test_server_replication_response.py, and across ours and Java by
tests/interop/test_archive_replication_java.py."""
from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Iterator
from typing import Any

from aeron._core.codecs import archive as codecs
from aeron._core.codecs.archive import ControlResponseCode, RecordingSignal
from aeron._core.fragment_assembler import FragmentAssembler
from aeron.archive import AeronArchive, SourceLocation
from tests.archive.archives import ArchiveHandle
from tests.archive.control_client import ControlClient
from tests.support import free_port, wait_for

LIVE_STREAM_ID = 1033
REPLAY_STREAM_ID = 2033
WAIT_S = 20.0


class Signals:
    """A recording signal consumer that keeps what it got."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    def of(self, signal: RecordingSignal, correlation_id: int | None = None) -> list[Any]:
        return [e for e in self.events if e.signal == signal and correlation_id in (None, e.correlation_id)]

    def kinds(self, correlation_id: int) -> list[RecordingSignal]:
        return [RecordingSignal(e.signal) for e in self.events if e.correlation_id == correlation_id]


@dataclasses.dataclass
class Connected:
    """A client of one archive: its Aeron client, archive client and the signals it received."""

    handle: ArchiveHandle
    aeron: Any
    archive: AeronArchive
    signals: Signals

    def await_signal(self, signal: RecordingSignal, correlation_id: int | None = None) -> Any:
        return wait_for(lambda: self.signals.of(signal, correlation_id), WAIT_S,
                        invoke=self.archive.poll_for_recording_signals, what=f"{signal.name} signal")[0]


@contextlib.contextmanager
def connected(handle: ArchiveHandle) -> Iterator[Connected]:
    aeron = handle.connect_aeron()
    try:
        signals = Signals()
        ctx = handle.context(aeron=aeron)
        ctx.recording_signal_consumer = signals
        with AeronArchive.connect(ctx) as archive:
            yield Connected(handle, aeron, archive, signals)
    finally:
        aeron.close()


def message(i: int) -> bytes:
    return i.to_bytes(4, "little") + bytes((i + j) & 0xFF for j in range(28 + i % 200))


class Publisher:
    """Offers numbered messages on a thread (one every ~0.5 ms) until stopped; ``sent`` holds those taken."""

    def __init__(self, publication: Any) -> None:
        self.publication = publication
        self.sent: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def publish(self, count: int) -> None:
        """On the caller's thread (before :meth:`start`)."""
        for _ in range(count):
            self._offer_next(WAIT_S)

    def _offer_next(self, timeout_s: float) -> bool:
        data = message(len(self.sent))
        deadline = time.monotonic() + timeout_s
        while self.publication.offer(data) < 0:
            if time.monotonic() > deadline or self._stop.is_set():
                return False
            time.sleep(0.0002)
        self.sent.append(data)
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            self._offer_next(0.05)
            time.sleep(0.0005)

    def start(self) -> None:
        self._thread.start()

    def wait_for_more(self, count: int) -> None:
        target = len(self.sent) + count
        wait_for(lambda: len(self.sent) >= target, WAIT_S, interval_s=0.005, what=f"{count} more messages sent")

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)


class Follower:
    """Polls a subscription on a thread, keeping every message (a subscription left unpolled would hold back the
    image it shares with the recording)."""

    def __init__(self, subscription: Any) -> None:
        self.subscription = subscription
        self.got: list[bytes] = []
        self._stop = threading.Event()
        self._assembler = FragmentAssembler(lambda buf, off, length, hdr: self.got.append(buf.get_bytes(off, length)))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.subscription.poll(self._assembler, 50) == 0:
                time.sleep(0.0005)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def live_channel() -> str:
    """A dynamic multi-destination-cast publication channel: a destination joins by naming its control address."""
    return f"aeron:udp?control=localhost:{free_port()}|control-mode=dynamic"


def collect_replay(dst: Connected, recording_id: int, length: int, count: int) -> list[bytes]:
    got: list[bytes] = []
    assembler = FragmentAssembler(lambda buf, off, n, hdr: got.append(buf.get_bytes(off, n)))
    subscription = dst.archive.replay(recording_id, f"aeron:udp?endpoint=localhost:{free_port()}", REPLAY_STREAM_ID,
                                      0, length)
    try:
        wait_for(lambda: len(got) >= count, WAIT_S, invoke=lambda: subscription.poll(assembler, 100) or
                 time.sleep(0.001), what=f"{count} replayed messages")
    finally:
        subscription.close()
    return got


def start_live_recording(src: Connected) -> tuple[int, int, Any, Publisher]:
    """Record a live stream at the source (locally) with 100 messages in it; (recording id, subscription id,
    publication, publisher)."""
    live = live_channel()
    subscription_id = src.archive.start_recording(live, LIVE_STREAM_ID, SourceLocation.LOCAL)
    publication = src.aeron.add_exclusive_publication(live, LIVE_STREAM_ID)
    start = wait_for(lambda: [e for e in src.signals.of(RecordingSignal.START) if e.subscription_id == subscription_id],
                     WAIT_S, invoke=src.archive.poll_for_recording_signals, what="START signal")[0]
    publisher = Publisher(publication)
    publisher.publish(100)
    wait_for(lambda: src.archive.get_recording_position(start.recording_id) >= publication.position, WAIT_S,
             interval_s=0.005, what="recorded at the source")
    return start.recording_id, subscription_id, publication, publisher


def replicate_with_live_merge(src_handle: ArchiveHandle, dst_handle: ArchiveHandle, tagged: bool = False) -> dict:
    """Replicate a live recording with a merge while the publisher keeps going, then stop the source recording:
    the destination recording goes on from the live stream alone. Checks the signals (REPLICATE, EXTEND, MERGE,
    REPLICATE_END, then STOP when the publication ends), that every message is in the destination recording
    exactly once and in order, and with ``tagged`` that a subscription naming the tags followed it all."""
    with connected(src_handle) as src, connected(dst_handle) as dst:
        src_id, subscription_id, publication, publisher = start_live_recording(src)
        follower = None
        try:
            live = publication.channel
            if tagged:
                channel_tag, subscription_tag = dst.aeron.next_correlation_id(), dst.aeron.next_correlation_id()
                follower = Follower(dst.aeron.add_subscription(
                    f"aeron:udp?control-mode=manual|rejoin=false|tags={channel_tag},{subscription_tag}",
                    LIVE_STREAM_ID))
            publisher.start()
            if tagged:
                replication_id = dst.archive.tagged_replicate(src_id, -1, channel_tag, subscription_tag,
                                                              src_handle.control_stream_id,
                                                              src_handle.control_channel, live)
            else:
                replication_id = dst.archive.replicate(src_id, -1, src_handle.control_stream_id,
                                                       src_handle.control_channel, live)
            dst.await_signal(RecordingSignal.REPLICATE_END, replication_id)
            assert dst.signals.kinds(replication_id) == [RecordingSignal.REPLICATE, RecordingSignal.EXTEND,
                                                         RecordingSignal.MERGE, RecordingSignal.REPLICATE_END]
            dst_id = dst.signals.of(RecordingSignal.REPLICATE, replication_id)[0].recording_id
            merge = dst.signals.of(RecordingSignal.MERGE, replication_id)[0]
            assert merge.recording_id == dst_id and merge.position > 0
            # from here only the live stream can feed the destination: the source stops recording it
            publisher.wait_for_more(100)
            src.archive.stop_recording_subscription(subscription_id)
            publisher.wait_for_more(200)
            publisher.stop()
            final = publication.position
            wait_for(lambda: dst.archive.get_recording_position(dst_id) >= final, WAIT_S, interval_s=0.005,
                     what="the destination recording follows the live stream")
            assert dst.archive.get_recording_position(dst_id) == final
            if follower is not None:
                wait_for(lambda: len(follower.got) >= len(publisher.sent), WAIT_S, interval_s=0.005,
                         what="the tagged subscription follows")
                assert follower.got == publisher.sent
            publication.close()
            stop = dst.await_signal(RecordingSignal.STOP, replication_id)
            assert (stop.recording_id, stop.position) == (dst_id, final)
            assert dst.archive.get_stop_position(dst_id) == final
            assert collect_replay(dst, dst_id, final, len(publisher.sent)) == publisher.sent
            return dict(src_recording_id=src_id, dst_recording_id=dst_id, merge_position=merge.position,
                        stop_position=final, messages=len(publisher.sent))
        finally:
            publisher.stop()
            if follower is not None:
                follower.stop()
                follower.subscription.close()
            publication.close()
            src.archive.try_stop_recording_subscription(subscription_id)


def response_channel() -> str:
    """A ``control-mode=response`` subscription channel with its own control address."""
    return f"aeron:udp?control-mode=response|control=localhost:{free_port()}"


def record_stopped(src: Connected, count: int) -> tuple[int, int, list[bytes]]:
    """A stopped recording at the source with ``count`` numbered messages (UDP, some fragmented);
    (recording id, stop position, messages)."""
    channel = f"aeron:udp?endpoint=localhost:{free_port()}"
    subscription_id = src.archive.start_recording(channel, LIVE_STREAM_ID, SourceLocation.REMOTE)
    publication = src.aeron.add_exclusive_publication(channel, LIVE_STREAM_ID)
    try:
        start = wait_for(lambda: [e for e in src.signals.of(RecordingSignal.START)
                                  if e.subscription_id == subscription_id],
                         WAIT_S, invoke=src.archive.poll_for_recording_signals, what="START signal")[0]
        publisher = Publisher(publication)
        publisher.publish(count)
        sent = publisher.sent + [bytes(range(256)) * 20]           # one message of several fragments
        wait_for(lambda: publication.offer(sent[-1]) > 0, WAIT_S, interval_s=0.001, what="offer")
        stop = publication.position
        wait_for(lambda: src.archive.get_recording_position(start.recording_id) >= stop, WAIT_S, interval_s=0.005,
                 what="recorded at the source")
    finally:
        publication.close()
    src.archive.stop_recording_subscription(subscription_id)
    src.await_signal(RecordingSignal.STOP, start.correlation_id)
    return start.recording_id, stop, sent


def control_responses(client: Any, correlation_id: int) -> list[tuple[str, Any, int]]:
    """What a raw control client got for ``correlation_id``, in order: ``("ControlResponse", code,
    relevant id)`` or ``("RecordingSignalEvent", signal, position)``."""
    found: list[tuple[str, Any, int]] = []
    for m in client.messages:
        if getattr(m, "correlation_id", None) != correlation_id:
            continue
        if m.name == "ControlResponse":
            found.append((m.name, ControlResponseCode(m.code), m.relevant_id))
        elif m.name == "RecordingSignalEvent":
            found.append((m.name, RecordingSignal(m.signal), m.position))
    return found


def replicate_over_response_channels(src_handle: ArchiveHandle, dst_handle: ArchiveHandle, count: int = 300,
                                     stop_position: int | None = None, response_control: bool = True,
                                     response_replay: bool = True) -> dict:
    """Replicate a stopped recording of ``src_handle`` into ``dst_handle`` with ``control-mode=response`` channels
    for the source's control responses (``response_control``) and for the replay (``response_replay``): Aeron's
    ``ReplicationParams.srcResponseChannel`` and ``replicationChannel``; the others are the defaults. The
    destination is driven by a raw control client that keeps every message. Checks that the destination recording
    holds every message exactly once, in order (up to ``stop_position`` if given); returns what came for the
    replication id (:func:`control_responses`) and the facts."""
    with connected(src_handle) as src:
        src_id, stop, sent = record_stopped(src, count)
        dst_aeron = dst_handle.connect_aeron()
        client = ControlClient(dst_aeron, dst_handle.control_channel, dst_handle.control_stream_id,
                               f"aeron:udp?endpoint=localhost:{free_port()}", 20, timeout_s=WAIT_S)
        try:
            assert client.connect().code == ControlResponseCode.OK
            end = stop if stop_position is None else stop_position
            replication_id = client.ok(
                codecs.ReplicateRequest2Encoder, src_recording_id=src_id, dst_recording_id=-1,
                stop_position=-1 if stop_position is None else stop_position, channel_tag_id=-1,
                subscription_tag_id=-1, src_control_stream_id=src_handle.control_stream_id, file_io_max_length=-1,
                replication_session_id=-1, src_control_channel=src_handle.control_channel, live_destination="",
                replication_channel=response_channel() if response_replay else "", encoded_credentials=b"",
                src_response_channel=response_channel() if response_control else "")

            def ended() -> bool:
                got = control_responses(client, replication_id)
                return ("RecordingSignalEvent", RecordingSignal.STOP, end) in got or \
                    any(r[1] == ControlResponseCode.ERROR for r in got)
            client._wait(ended, "replication ended and its recording stopped")
            responses = control_responses(client, replication_id)
            created = [m for m in client.messages if m.name == "RecordingSignalEvent" and
                       m.correlation_id == replication_id and m.signal == RecordingSignal.REPLICATE]
            assert created, [m for m in client.messages if getattr(m, "correlation_id", None) == replication_id]
            dst_id = created[0].recording_id
            assert client.ok(codecs.StopPositionRequestEncoder, recording_id=dst_id) == end, [
                m for m in client.messages if getattr(m, "correlation_id", None) == replication_id]
            extend_ok = [m for m in client.messages if m.name == "ControlResponse" and
                         m.correlation_id == replication_id and m.code == ControlResponseCode.OK]
            extend = [m for m in client.messages if m.name == "RecordingSignalEvent" and
                      m.correlation_id == replication_id and m.signal == RecordingSignal.EXTEND]
        finally:
            client.close()
            dst_aeron.close()
    with connected(dst_handle) as dst:
        expected = [m for m, e in zip(sent, message_ends(sent)) if e <= end]
        assert collect_replay(dst, dst_id, end, len(expected)) == expected
    return dict(src_recording_id=src_id, dst_recording_id=dst_id, stop_position=stop, responses=responses,
                extend_ok=extend_ok, extend=extend, messages=len(expected))


def message_ends(messages: list[bytes], mtu: int = 1408, term_length: int = 64 * 1024) -> list[int]:
    """The stream position after each message as an exclusive publication lays them out (fragments of at most
    ``mtu - 32`` bytes; a frame that does not fit in the rest of a term goes to the next, after padding)."""
    ends, position = [], 0
    max_payload = mtu - 32
    for data in messages:
        remaining = len(data)
        while True:
            chunk = min(remaining, max_payload)
            length = (32 + chunk + 31) & ~31
            if position % term_length + length > term_length:
                position += term_length - position % term_length
            position += length
            remaining -= chunk
            if remaining <= 0:
                break
        ends.append(position)
    return ends


def expected_responses(facts: dict, end: int) -> list[tuple[str, Any, int]]:
    """Aeron's order for a replication of a stopped recording into a new one, as :func:`control_responses` lists
    it: REPLICATE, the OK naming the recording subscription, EXTEND at the start, SYNC at the end when that is the
    source's stop position (none for a replication asked to stop short of it), REPLICATE_END, then STOP once the
    recording subscription has gone."""
    subscription_id = facts["extend_ok"][0].relevant_id
    synced = [("RecordingSignalEvent", RecordingSignal.SYNC, end)] if end == facts["stop_position"] else []
    return [("RecordingSignalEvent", RecordingSignal.REPLICATE, 0),
            ("ControlResponse", ControlResponseCode.OK, subscription_id),
            ("RecordingSignalEvent", RecordingSignal.EXTEND, 0)] + synced + [
            ("RecordingSignalEvent", RecordingSignal.REPLICATE_END, -1),
            ("RecordingSignalEvent", RecordingSignal.STOP, end)]


def second_replication_on_the_same_response_channel(src_handle: ArchiveHandle, dst_handle: ArchiveHandle) -> list:
    """Two replications of an active recording into ``dst_handle`` on one ``control-mode=response`` replication
    channel: the first follows the recording; the second cannot have a recording subscription of the same channel
    and stream (Aeron's extendRecording refuses it). Returns what came for the second replication id, once it
    ended, after checking the first still follows the recording and stops when asked."""
    with connected(src_handle) as src:
        src_id, subscription_id, publication, publisher = start_live_recording(src)
        dst_aeron = dst_handle.connect_aeron()
        client = ControlClient(dst_aeron, dst_handle.control_channel, dst_handle.control_stream_id,
                               f"aeron:udp?endpoint=localhost:{free_port()}", 20, timeout_s=WAIT_S)
        try:
            assert client.connect().code == ControlResponseCode.OK
            channel = response_channel()
            ids = []
            for _ in range(2):
                ids.append(client.ok(
                    codecs.ReplicateRequest2Encoder, src_recording_id=src_id, dst_recording_id=-1, stop_position=-1,
                    channel_tag_id=-1, subscription_tag_id=-1, src_control_stream_id=src_handle.control_stream_id,
                    file_io_max_length=-1, replication_session_id=-1, src_control_channel=src_handle.control_channel,
                    live_destination="", replication_channel=channel, encoded_credentials=b"",
                    src_response_channel=response_channel()))
                if len(ids) == 1:        # the first has its recording subscription before the second asks
                    client._wait(lambda: ("RecordingSignalEvent", RecordingSignal.EXTEND, 0) in
                                 control_responses(client, ids[0]), "EXTEND of the first replication")
            first, second = ids
            client._wait(lambda: ("RecordingSignalEvent", RecordingSignal.REPLICATE_END, -1) in
                         control_responses(client, second), "the second replication ended")
            publisher.publish(50)
            end = publication.position
            dst_id = [m for m in client.messages if m.name == "RecordingSignalEvent" and m.correlation_id == first
                      and m.signal == RecordingSignal.REPLICATE][0].recording_id
            client._wait(lambda: client.ok(codecs.RecordingPositionRequestEncoder, recording_id=dst_id) == end,
                         "the first replication follows the recording")
            client.ok(codecs.StopReplicationRequestEncoder, replication_id=first)
            client._wait(lambda: ("RecordingSignalEvent", RecordingSignal.REPLICATE_END, -1) in
                         control_responses(client, first), "the first replication ended")
            return control_responses(client, second)
        finally:
            publisher.stop()
            publication.close()
            src.archive.try_stop_recording_subscription(subscription_id)
            client.close()
            dst_aeron.close()


def replicate_and_record_signals(src_handle: ArchiveHandle, dst_handle: ArchiveHandle, live: bool, short: bool,
                                 stop_by_request: bool = False) -> dict:
    """Replicate a recording of ``src_handle`` into a new one of ``dst_handle`` and keep every signal for the
    replication id as ``(signal, recording id, subscription id, position)``: of a stopped recording (``live``
    False) or of one still recording, to the source's end or, ``short``, to a stop position halfway through
    what it has; with ``stop_by_request`` the replication (to no stop position) is stopped by a
    StopReplicationRequest once it has copied half. Ends once the destination recording has stopped; checks that it
    holds exactly the messages up to where it stopped. Returns the signals and the positions."""
    with connected(src_handle) as src, connected(dst_handle) as dst:
        publication = publisher = subscription_id = None
        try:
            if live:
                src_id, subscription_id, publication, publisher = start_live_recording(src)
                sent = list(publisher.sent)
                src_stop = -1
            else:
                src_id, src_stop, sent = record_stopped(src, 300)
            ends = message_ends(sent)
            half = ends[len(ends) // 2]
            stop_position = half if short else -1
            replication_id = dst.archive.replicate(src_id, -1, src_handle.control_stream_id,
                                                   src_handle.control_channel, stop_position=stop_position)
            if stop_by_request:
                extend = dst.await_signal(RecordingSignal.EXTEND, replication_id)
                wait_for(lambda: dst.archive.get_recording_position(extend.recording_id) >= half, WAIT_S,
                         interval_s=0.005, what="half replicated")
                dst.archive.stop_replication(replication_id)
            stop = dst.await_signal(RecordingSignal.STOP, replication_id)
            events = [(RecordingSignal(e.signal), e.recording_id, e.subscription_id, e.position)
                      for e in dst.signals.events if e.correlation_id == replication_id]
            dst_id = stop.recording_id
            dst_stop = dst.archive.get_stop_position(dst_id)
            expected = [m for m, e in zip(sent, ends) if e <= dst_stop]
            assert collect_replay(dst, dst_id, dst_stop, len(expected)) == expected
            return dict(signals=events, src_stop=src_stop, half=half, dst_recording_id=dst_id, dst_stop=dst_stop)
        finally:
            if publisher is not None:
                publisher.stop()
            if publication is not None:
                publication.close()
            if subscription_id is not None:
                src.archive.try_stop_recording_subscription(subscription_id)


def java_signal_sequence(facts: dict) -> list[RecordingSignal]:
    """The signals Aeron's ReplicationSession sends for what :func:`replicate_and_record_signals` did: REPLICATE
    (a new recording), EXTEND (its recording starts), SYNC only when the copy reached the source's stop position,
    REPLICATE_END, then STOP once the recording subscription has gone."""
    synced = facts["src_stop"] != -1 and facts["dst_stop"] >= facts["src_stop"]
    return [RecordingSignal.REPLICATE, RecordingSignal.EXTEND] + ([RecordingSignal.SYNC] if synced else []) + \
        [RecordingSignal.REPLICATE_END, RecordingSignal.STOP]


def check_signals(facts: dict) -> None:
    """The sequence and the fields Aeron gives each signal: the recording subscription is named by EXTEND (and SYNC,
    sent while it records) and by none after it has been closed (REPLICATE_END); REPLICATE names the new recording
    at the source's start."""
    signals = facts["signals"]
    assert [s[0] for s in signals] == java_signal_sequence(facts), signals
    by_kind = {s[0]: s for s in signals}
    dst_id = facts["dst_recording_id"]
    assert all(s[1] == dst_id for s in signals), signals
    subscription_id = by_kind[RecordingSignal.EXTEND][2]
    assert subscription_id != -1
    assert by_kind[RecordingSignal.REPLICATE][2:] == (-1, 0)
    assert by_kind[RecordingSignal.REPLICATE_END][2:] == (-1, -1)
    assert by_kind[RecordingSignal.STOP][2:] == (subscription_id, facts["dst_stop"])
    if RecordingSignal.SYNC in by_kind:
        assert by_kind[RecordingSignal.SYNC][2:] == (subscription_id, facts["src_stop"])
    if facts["src_stop"] == -1 or facts["dst_stop"] < facts["src_stop"]:
        assert facts["dst_stop"] >= facts["half"]


def replicate_into_a_recording_already_in_sync(src_handle: ArchiveHandle, dst_handle: ArchiveHandle) -> list[tuple]:
    """Replicate a stopped recording, then replicate it again into the copy: the second finds the copy at the
    source's stop position and ends at once. Returns the second's signals as
    :func:`replicate_and_record_signals` keeps them."""
    facts = replicate_and_record_signals(src_handle, dst_handle, live=False, short=False)
    with connected(src_handle) as src, connected(dst_handle) as dst:
        src_id = src.archive.list_recordings(0, 1_000_000)[-1].recording_id
        assert src.archive.get_stop_position(src_id) == facts["src_stop"]
        replication_id = dst.archive.replicate(src_id, facts["dst_recording_id"], src_handle.control_stream_id,
                                               src_handle.control_channel)
        dst.await_signal(RecordingSignal.REPLICATE_END, replication_id)
        return [(RecordingSignal(e.signal), e.recording_id, e.subscription_id, e.position)
                for e in dst.signals.events if e.correlation_id == replication_id] + [facts]
