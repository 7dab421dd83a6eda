# SPDX-License-Identifier: Apache-2.0
"""Our sender and receiver against the frames two official C drivers exchanged (golden/frames, golden/logbuffers).

Sender: a NetworkPublication with the captured ids, fed the same messages, emits the captured SETUP, heartbeats,
DATA and end-of-stream heartbeats byte for byte, and its log equals the publisher driver's log.
Receiver: the captured publisher→subscriber datagrams (without those the subscriber's loss interceptor dropped)
fed to a ReceiveChannelEndpoint rebuild the subscriber driver's image log; its first status message, and in the
loss run its NAK, are the captured ones byte for byte.
"""
from __future__ import annotations

import gzip
import json
import socket

import pytest

from aeron._core import counters as ctr
from aeron._core.counters import AtomicCounter
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_appender import ConcurrentTermAppender
from aeron._core.udp_transport import UdpTransport
from aeron.driver.congestion_control import congestion_control_for
from aeron.driver.flow_control import flow_control_for
from aeron.driver.loss_detector import StaticDelayGenerator
from aeron.driver.network_publication import NetworkPublication
from aeron.driver.publication_image import PublicationImage
from aeron.driver.receive_channel_endpoint import ReceiveChannelEndpoint
from aeron.driver.udp_channel import UdpChannel
from tests.driver.fakes import Counters, FakeTransport

RUNS = {
    "unicast": dict(session=-1814757439, initial_term_id=1569665970, receiver_id=234089743810026307,
                    pub="aeron:udp?endpoint=127.0.0.1:40601|interface=127.0.0.1:40602",
                    sub="aeron:udp?endpoint=127.0.0.1:40601", group=False, cc=None),
    "multicast": dict(session=180082899, initial_term_id=-379515587, receiver_id=7363609630997365289,
                      pub="aeron:udp?endpoint=224.0.1.1:40621|interface=127.0.0.1",
                      sub="aeron:udp?endpoint=224.0.1.1:40621|interface=127.0.0.1", group=True, cc=None),
    "unicast-loss-rttm": dict(session=-976833086, initial_term_id=1000, receiver_id=8104676198179842944,
                              pub="aeron:udp?endpoint=127.0.0.1:40611|interface=127.0.0.1:40612|init-term-id=1000|"
                                  "term-id=1000|term-offset=0",
                              sub="aeron:udp?endpoint=127.0.0.1:40611|cc=cubic", group=False, cc="cubic"),
}
TERM = 65536
MS = 1_000_000


def _datagrams(golden_dir, run):
    with open(golden_dir / "frames" / run / "datagrams.json") as f:
        return json.load(f)["datagrams"]


def _golden_term0(golden_dir, run, side):
    folder = golden_dir / "logbuffers" / f"udp-{run}" / (
        "publisher-driver/publications/2.logbuffer.gz" if side == "pub" else "subscriber-driver/images/3.logbuffer.gz")
    return gzip.decompress(folder.read_bytes())[:TERM]


class _CaptureEndpoint:
    """A send endpoint over a real loopback socket pair: what the publication sends (send and the batched
    scan-and-sendmmsg path) is read back from the receiving socket, byte for byte."""

    def __init__(self):
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sender.bind(("127.0.0.1", 0))
        self.transport = UdpTransport(sender, name="capture")
        self.inbox = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.inbox.bind(("127.0.0.1", 0))
        self.inbox.settimeout(1.0)
        self.address = self.inbox.getsockname()
        self._sent = []

    def send(self, data, address=None):             # address: a response publication's subscriber (unused here)
        return self.transport.send(data, self.address)

    def send_term_batch(self, term, term_offset, window, mtu, max_datagrams, address=None, count_bytes=True):
        return self.transport.send_term_batch(term, term_offset, window, mtu, max_datagrams, self.address)

    @property
    def sent(self):
        self.inbox.setblocking(False)
        try:
            while True:
                self._sent.append(self.inbox.recv(65536))
        except BlockingIOError:
            pass
        return self._sent

    def close(self):
        self.transport.close()
        self.inbox.close()


def _publication(tmp_path, cfg, counters):
    log = LogBuffers.create(str(tmp_path / "pub.logbuffer"), term_length=TERM, initial_term_id=cfg["initial_term_id"],
                            session_id=cfg["session"], stream_id=1001, mtu_length=1408, correlation_id=2)
    endpoint = _CaptureEndpoint()
    udp = UdpChannel.parse(cfg["pub"])
    publication = NetworkPublication(
        registration_id=2, owner_client_id=1, session_id=cfg["session"], stream_id=1001, channel=cfg["pub"],
        is_exclusive=False, log=log, endpoint=endpoint,
        **counters.stream("pub_pos", "pub_lmt", "snd_pos", "snd_lmt", "snd_bpe", "snd_naks_received"),
        flow_control=flow_control_for(cfg["pub"], None, udp.has_group_semantics), window_length=TERM // 2,
        linger_timeout_ns=5_000 * MS, unblock_timeout_ns=15_000 * MS, connection_timeout_ns=5_000 * MS,
        signal_eos=True, spies_simulate_connection=False, max_retransmits=1, ttl=0, is_group=cfg["group"],
        now_ns=0, system=counters.system)
    return log, endpoint, publication


@pytest.mark.parametrize("run", list(RUNS))
def test_sender_emits_the_captured_frames(golden_dir, tmp_path, run):
    cfg = RUNS[run]
    golden = [bytes.fromhex(d["hex"]) for d in _datagrams(golden_dir, run) if d["direction"] == "pub->sub"]
    setup = next(g for g in golden if g[6] == 5)
    heartbeats_at = {}
    for g in golden:
        if len(g) == 32 and g[:4] == b"\0\0\0\0":
            heartbeats_at.setdefault((int.from_bytes(g[8:12], "little"), g[5]), g)
    data = []                   # first transmission of each message (the loss run also has a retransmit)
    for g in golden:
        if g[6] == 1 and g[:4] != b"\0\0\0\0" and g not in data:
            data.append(g)
    counters = Counters()
    log, endpoint, publication = _publication(tmp_path, cfg, counters)
    now = 1_000 * MS
    publication.send(now)                                           # first cycle: the SETUP
    assert endpoint.sent == [setup]
    term_id = cfg["initial_term_id"]
    # the receiver's first status message: position (initial term, 0), window 32768
    publication.on_status_message(0, term_id, 0, 32768, cfg["receiver_id"], None, ("127.0.0.1", 1), now)
    assert publication.has_receivers and log.is_connected
    now += 101 * MS
    publication.send(now)                                           # idle: heartbeat @0
    assert endpoint.sent[-1] == heartbeats_at[(0, 0xC0)]
    assert publication.update_pub_pos_and_lmt() == 1                # conductor: pub-lmt = snd-pos + window
    limit_offset = publication.pub_lmt_id * 128
    appender = ConcurrentTermAppender(log, counters.values, limit_offset)
    for n in range(5):
        assert appender.offer(f"Hello World! {n}".encode()) > 0
        now += 1_000 * MS
        publication.send(now)
        assert endpoint.sent[-1] == data[n], f"message {n}"
        now += 101 * MS
        publication.send(now)                                       # idle again: heartbeat after the data
        assert endpoint.sent[-1] == heartbeats_at[(64 * (n + 1), 0xC0)]
    assert log.term_buffer(0).get_bytes(0, 320) == _golden_term0(golden_dir, run, "pub")[:320]
    # the publisher closes: drained, end of stream, heartbeats with EOS @320
    publication.is_end_of_stream = True
    now += 101 * MS
    publication.send(now)
    assert endpoint.sent[-1] == heartbeats_at[(320, 0xE0)]
    assert counters.system[ctr.HEARTBEATS_SENT].get() == 7
    # a NAK for message 0 resends exactly the captured frame, counted as one retransmit of 64 bytes
    publication.on_nak(term_id, 0, 64, now)
    assert endpoint.sent[-1] == data[0]
    assert (counters.system[ctr.RETRANSMITS_SENT].get(), counters.system[ctr.RETRANSMITTED_BYTES].get()) == (1, 64)
    assert publication.snd_naks.get() == 1
    appender.close()
    publication.close()
    endpoint.close()


@pytest.mark.parametrize("run", list(RUNS))
def test_receiver_rebuilds_the_captured_image(golden_dir, tmp_path, run):
    cfg = RUNS[run]
    datagrams = _datagrams(golden_dir, run)
    counters = Counters()
    udp = UdpChannel.parse(cfg["sub"], is_subscription=True)
    transport = FakeTransport(udp.local_data)
    setups = []
    endpoint = ReceiveChannelEndpoint(udp, transport, 1, 200, AtomicCounter(counters.values, 200), 201,
                                      counters.system, lambda *args: setups.append(args))
    endpoint.receiver_id = cfg["receiver_id"]
    endpoint.add_subscription(1001, None)
    source = ("127.0.0.1", 40602)
    now = 1_000 * MS
    image = None
    for d in datagrams:
        if d["direction"] != "pub->sub" or d.get("dropped_by_receiver_fixed_loss_interceptor"):
            continue
        transport.deliver(bytes.fromhex(d["hex"]), source)
        endpoint.poll(now)
        if setups and image is None:
            _, setup, control, _src = setups[0]
            assert (setup["session_id"], setup["initial_term_id"], setup["term_length"], setup["mtu"]) == (
                cfg["session"], cfg["initial_term_id"], TERM, 1408)
            log = LogBuffers.create(str(tmp_path / "image.logbuffer"), term_length=TERM,
                                    initial_term_id=setup["initial_term_id"], session_id=cfg["session"],
                                    stream_id=1001, mtu_length=1408, correlation_id=3,
                                    term_id=setup["active_term_id"], term_offset=setup["term_offset"],
                                    start_at_position=True)
            image = PublicationImage(
                correlation_id=3, session_id=cfg["session"], stream_id=1001, endpoint=endpoint, log=log,
                source_identity="127.0.0.1:40602", control_address=control, join_position=0,
                **counters.stream("rcv_hwm", "rcv_pos", "rcv_naks_sent"),
                congestion_control=congestion_control_for(cfg["cc"], TERM, 1408, 128 * 1024),
                loss_delay=StaticDelayGenerator(1_000, 100_000), is_reliable=True, rejoin=True,
                liveness_timeout_ns=10_000 * MS, system=counters.system, loss_report=None, channel=cfg["sub"],
                now_ns=now)
            subscriber = AtomicCounter(counters.values, 250)

            class _Link:
                position = subscriber
                state = "ACTIVE"                # a tethered subscriber (untethered.TETHER_ACTIVE)
            image.subscribers[1] = _Link()
            endpoint.add_image(image)
            image.send_pending_status_message(now)
            first_sm = transport.sent[-1][0]
            golden_sm = bytes.fromhex(next(g["hex"] for g in datagrams if g["direction"] == "sub->pub"
                                           and int(g["hex"][12:14], 16) == 3))
            if cfg["cc"] is None:
                assert first_sm == golden_sm
            else:       # CUBIC starts at 10 MTUs: the captured 14080 is 10 × 1408 as well
                assert first_sm[:24] == golden_sm[:24] and first_sm[28:] == golden_sm[28:]
        if image is not None:
            for _ in range(2):                  # two receiver cycles per datagram: a gap's NAK timer expires
                now += 1 * MS
                image.track_rebuild(now)
                subscriber.set(image.rcv_pos.get())               # a subscriber that keeps up
    assert image is not None
    assert image.rcv_hwm.get() == 320 and image.rcv_pos.get() == 320
    assert image.log.term_buffer(0).get_bytes(0, 320) == _golden_term0(golden_dir, run, "sub")[:320]
    naks = [data for data, _ in transport.sent if data[6] == 2]
    golden_naks = [bytes.fromhex(g["hex"]) for g in datagrams if g["direction"] == "sub->pub" and
                   int(g["hex"][12:14], 16) == 2]
    if run == "unicast-loss-rttm":
        assert naks and naks[0] == golden_naks[0]                  # NAK term 1000, offset 0, length 64
        assert image.naks_sent.get() >= 1
    else:
        assert naks == [] and golden_naks == []
    image.close()


def test_sender_answers_the_captured_rtt_measurement_request_byte_for_byte(golden_dir, tmp_path):
    cfg = RUNS["unicast-loss-rttm"]
    datagrams = _datagrams(golden_dir, "unicast-loss-rttm")
    request = next(d for d in datagrams if d["direction"] == "sub->pub" and d["frames"][0]["type"] == "RTTM")
    reply = next(d for d in datagrams if d["direction"] == "pub->sub" and d["frames"][0]["type"] == "RTTM")
    frame = request["frames"][0]
    counters = Counters()
    log, endpoint, publication = _publication(tmp_path, cfg, counters)
    publication.on_rttm(0x80, frame["echo_timestamp"], frame["receiver_id"])
    assert endpoint.sent[-1] == bytes.fromhex(reply["hex"])
    publication.on_rttm(0x00, frame["echo_timestamp"], frame["receiver_id"])      # a reply is not answered
    assert len(endpoint.sent) == 1
    publication.close()
    endpoint.close()
