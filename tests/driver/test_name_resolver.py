# SPDX-License-Identifier: Apache-2.0
"""The driver name resolver (aeron/driver/name_resolver.py): settings, the resolution frame layout, host-and-port
resolution, the cache and neighbour table on a fake clock, hostile frames, and drivers on 127.0.0.x gossiping,
resolving each other's names for channels, and timing each other out."""
from __future__ import annotations

import errno
import random
import socket
import struct
import types

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron._core import counters as ctr
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.counters import AtomicCounter, CountersManager
from aeron._core.error_log import read_error_log
from aeron.common.errors import ChannelEndpointError, ConfigurationError, InvalidChannelError, RegistrationError
from aeron.driver import Context as DriverContext
from aeron.driver.name_resolver import (
    RES_SELF_FLAG, RES_TYPE_NAME_TO_IP4_MD, DefaultNameResolver, DriverNameResolver, NameResolutionError,
    encode_resolution_entry, encode_resolution_frame, resolve_host_and_port,
)
from aeron.driver.udp_channel import UdpChannel
from tests.driver.udp_helpers import MS, driver_context, free_port, wait_for

pytestmark = pytest.mark.timeout(90)

FAST = dict(resolver_neighbor_timeout_ns=1_000 * MS, resolver_self_resolution_interval_ns=100 * MS,
            resolver_neighbor_resolution_interval_ns=100 * MS,
            resolver_bootstrap_neighbor_resolution_interval_ns=200 * MS)


# -- settings --------------------------------------------------------------------------------------------------

def test_settings_come_from_the_c_drivers_variables_and_the_java_property_names():
    ctx = DriverContext(environ={
        "AERON_DRIVER_RESOLVER_NAME": "alpha", "AERON_DRIVER_RESOLVER_INTERFACE": "127.0.0.1:8050",
        "AERON_DRIVER_RESOLVER_BOOTSTRAP_NEIGHBOR": "localhost:8051,localhost:8052",
        "AERON_NAME_RESOLVER_SUPPLIER": "driver", "AERON_DRIVER_RESOLVER_NEIGHBOR_TIMEOUT": "2s",
        "AERON_DRIVER_RESOLVER_SELF_RESOLUTION_INTERVAL": "500ms"})
    assert (ctx.resolver_name, ctx.resolver_interface, ctx.name_resolver_supplier) == \
        ("alpha", "127.0.0.1:8050", "driver")
    assert ctx.resolver_bootstrap_neighbor == "localhost:8051,localhost:8052"
    assert ctx.resolver_neighbor_timeout_ns == 2_000_000_000
    assert ctx.resolver_self_resolution_interval_ns == 500_000_000
    assert ctx.resolver_neighbor_resolution_interval_ns == 2_000_000_000          # the C default
    props = DriverContext(["aeron.driver.resolver.name=beta", "aeron.driver.resolver.interface=0.0.0.0:9000",
                           "aeron.driver.resolver.bootstrap.neighbor.resolution.interval=3s"], environ={})
    assert (props.resolver_name, props.resolver_interface) == ("beta", "0.0.0.0:9000")
    assert props.resolver_bootstrap_neighbor_resolution_interval_ns == 3_000_000_000
    assert props.as_properties()["aeron.driver.resolver.name"] == "beta"


def test_an_interface_without_a_name_and_an_unknown_supplier_are_refused():
    with pytest.raises(ConfigurationError, match="aeron.driver.resolver.name"):
        DriverContext(environ={}, resolver_interface="127.0.0.1:8050").conclude()
    with pytest.raises(ConfigurationError, match="AERON_NAME_RESOLVER_SUPPLIER"):
        DriverContext(environ={"AERON_NAME_RESOLVER_SUPPLIER": "telepathy"})
    with pytest.raises(ConfigurationError, match="self.resolution.interval"):
        DriverContext(environ={}, resolver_self_resolution_interval_ns=0).conclude()


def test_a_driver_whose_resolver_interface_is_taken_does_not_start_and_leaves_nothing(shm_dir):
    aeron_dir = shm_dir / "driver"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(ChannelEndpointError, match=f"aeron:udp\\?endpoint=127.0.0.1:{port}"):
            MediaDriver.launch_embedded(driver_context(aeron_dir=str(aeron_dir), resolver_name="A",
                                                       resolver_interface=f"127.0.0.1:{port}"))
    assert not aeron_dir.exists()


# -- frames and host-and-port resolution -----------------------------------------------------------------------

def test_a_resolution_entry_has_aerons_layout():
    entry = encode_resolution_entry(RES_SELF_FLAG, (RES_TYPE_NAME_TO_IP4_MD, bytes([127, 0, 0, 1]), 8050), b"A", 7)
    # res_type 1, flags 0x80, port 8050 LE, age 7 LE, address, name length 1 LE, "A", padded to 16 bytes
    assert entry == bytes([1, 0x80, 0x72, 0x1F, 7, 0, 0, 0, 127, 0, 0, 1, 1, 0, 0x41, 0])
    v6 = encode_resolution_entry(0, (2, bytes(15) + b"\x01", 1), b"name-of-9", 0)
    assert len(v6) == 40 and v6[24:26] == b"\x09\x00" and v6[26:35] == b"name-of-9"
    frame = encode_resolution_frame(entry)
    # frame length 24, version 0, flags 0, type 0x07 (HDR_TYPE_RES)
    assert frame[:8] == bytes([24, 0, 0, 0, 0, 0, 7, 0]) and frame[8:] == entry


class _Names:
    """A resolver that knows a fixed table of names."""
    name = "table"

    def __init__(self, table):
        self.table = table
        self.asked = []

    def lookup(self, name, uri_param_name, is_re_lookup):
        return name

    def resolve(self, name, uri_param_name, is_re_resolution):
        self.asked.append((name, uri_param_name))
        if name not in self.table:
            raise NameResolutionError(f"no {name}")
        return self.table[name]


def test_host_and_port_resolution_asks_the_resolver_only_for_names():
    names = _Names({"B": (socket.AF_INET, "127.0.0.2")})
    assert resolve_host_and_port(names, "B:24325", "endpoint") == (socket.AF_INET, ("127.0.0.2", 24325))
    assert resolve_host_and_port(names, "10.1.2.3:7", "endpoint") == (socket.AF_INET, ("10.1.2.3", 7))
    assert resolve_host_and_port(names, "[::1]:9", "control") == (socket.AF_INET6, ("::1", 9, 0, 0))
    assert names.asked == [("B", "endpoint")]
    with pytest.raises(NameResolutionError, match="port invalid") as bad_port:
        resolve_host_and_port(names, "just:wrong", "bootstrap_neighbor")
    assert bad_port.value.os_errno == errno.EINVAL
    with pytest.raises(NameResolutionError, match="Unresolved - endpoint=C:1"):
        resolve_host_and_port(names, "C:1", "endpoint")
    assert DefaultNameResolver().resolve("127.0.0.1", "endpoint", False) == (socket.AF_INET, "127.0.0.1")


def test_a_channels_endpoint_and_control_go_through_the_drivers_resolver_and_its_interface_does_not():
    names = _Names({"B": (socket.AF_INET, "127.0.0.2"), "C": (socket.AF_INET, "127.0.0.3")})
    sub = UdpChannel.parse("aeron:udp?endpoint=B:4000|control=C:4001", is_subscription=True, resolver=names)
    assert sub.remote_data == ("127.0.0.2", 4000) and sub.remote_control == ("127.0.0.3", 4001)
    pub = UdpChannel.parse("aeron:udp?endpoint=B:4000|interface=127.0.0.1", resolver=names)
    assert pub.remote_data == ("127.0.0.2", 4000) and pub.canonical_form == "UDP-127.0.0.1:0-B:4000"
    assert sorted(names.asked) == [("B", "endpoint"), ("B", "endpoint"), ("C", "control")]     # not the interface
    with pytest.raises(InvalidChannelError, match="unknown host"):
        UdpChannel.parse("aeron:udp?endpoint=D:4000", resolver=names)


# -- one resolver on a fake clock --------------------------------------------------------------------------------

class _Clock:
    def __init__(self):
        self.ms = 1_000_000

    def __call__(self):
        return self.ms


@pytest.fixture
def resolver():
    meta, values = AtomicBuffer(bytearray(64 * 1024)), AtomicBuffer(bytearray(16 * 1024))
    manager = CountersManager(meta, values, clock_ms=lambda: 0)
    system = {counter_id: AtomicCounter(values, manager.allocate(name, 0))
              for counter_id, name in ((ctr.INVALID_PACKETS, "Invalid packets"), (ctr.SHORT_SENDS, "Short sends"))}
    errors = []
    clock = _Clock()
    ctx = types.SimpleNamespace(resolver_name="A", resolver_interface="127.0.0.1:0", resolver_bootstrap_neighbor="",
                                mtu_length=1408, socket_rcvbuf=0, socket_sndbuf=0, epoch_clock_ms=clock,
                                resolver_neighbor_timeout_ns=2_000 * MS,
                                resolver_self_resolution_interval_ns=1_000 * MS,
                                resolver_neighbor_resolution_interval_ns=2_000 * MS,
                                resolver_bootstrap_neighbor_resolution_interval_ns=10_000 * MS)
    r = DriverNameResolver(ctx, manager, system, lambda *args: errors.append(args))
    r.clock, r.errors, r.manager, r.system = clock, errors, manager, system
    try:
        yield r
    finally:
        r.close()


def _self_frame(name: bytes, address: bytes, port: int, age: int = 0, flags: int = RES_SELF_FLAG) -> bytes:
    return encode_resolution_frame(encode_resolution_entry(flags, (RES_TYPE_NAME_TO_IP4_MD, address, port), name, age))


def test_entries_fill_the_cache_and_the_neighbours_and_expire_after_the_timeout(resolver):
    now = resolver.clock.ms
    source = ("127.0.0.9", 4000)
    resolver.on_frame(_self_frame(b"B", bytes([127, 0, 0, 9]), 4000), source, now)
    # a gossiped entry (no SELF flag) half a timeout old: a cache entry and a neighbour, dated by its age
    resolver.on_frame(_self_frame(b"C", bytes([127, 0, 0, 10]), 4001, age=1_000, flags=0), source, now)
    assert resolver.resolve("B", "endpoint", False) == (socket.AF_INET, "127.0.0.9")
    assert resolver.resolve("C", "endpoint", False) == (socket.AF_INET, "127.0.0.10")
    assert resolver.resolve("A", "endpoint", False) == (socket.AF_INET, "127.0.0.1")            # itself
    assert resolver.cache_entries_counter.get() == 2 and resolver.neighbors_counter.get() == 2
    resolver.timeout_neighbors(now + 1_000)
    resolver.cache.timeout_old_entries(now + 1_000)
    assert resolver.cache_entries_counter.get() == 1 and resolver.neighbors_counter.get() == 1     # C went
    assert [n.sockaddr for n in resolver.neighbors] == [source]
    # B announces itself again a second later: its deadline moves on
    resolver.on_frame(_self_frame(b"B", bytes([127, 0, 0, 9]), 4000), source, now + 1_000)
    resolver.timeout_neighbors(now + 2_500)
    resolver.cache.timeout_old_entries(now + 2_500)
    assert resolver.neighbors_counter.get() == 1 and resolver.cache_entries_counter.get() == 1
    resolver.timeout_neighbors(now + 3_000)
    resolver.cache.timeout_old_entries(now + 3_000)
    assert resolver.neighbors_counter.get() == 0 and resolver.cache_entries_counter.get() == 0
    with pytest.raises(NameResolutionError):
        resolver.resolve("B-that-is-gone.invalid", "endpoint", False)


def test_a_wildcard_self_address_becomes_the_source_and_our_own_entry_is_ignored(resolver):
    now = resolver.clock.ms
    resolver.on_frame(_self_frame(b"B", bytes(4), 5000), ("127.0.0.3", 5000), now)
    assert resolver.resolve("B", "endpoint", False) == (socket.AF_INET, "127.0.0.3")
    own_port = resolver.local_cache_addr[2]
    resolver.on_frame(_self_frame(b"A", bytes([127, 0, 0, 1]), own_port, flags=0), ("127.0.0.3", 5000), now)
    # a name that starts like ours, on our port, is another driver
    resolver.on_frame(_self_frame(b"AA", bytes([127, 0, 0, 4]), own_port), ("127.0.0.4", own_port), now)
    assert sorted(e.name for e in resolver.cache.entries.values()) == [b"AA", b"B"]
    assert resolver.neighbors_counter.get() == 2


def test_hostile_frames_are_counted_as_invalid_and_change_nothing(resolver):
    invalid = resolver.system[ctr.INVALID_PACKETS]
    good = encode_resolution_entry(0, (RES_TYPE_NAME_TO_IP4_MD, bytes([10, 0, 0, 1]), 1), b"ok")
    header = struct.pack("<iBBh", 0, 0, 0, 7)
    hostile = [
        b"", b"\x00" * 7,                                                   # shorter than a frame header
        struct.pack("<iBBh", 16, 1, 0, 7) + good,                           # another version
        struct.pack("<iBBh", 16, 0, 0, 1) + good,                           # a DATA frame
        header + b"\x01\x00\x00",                                           # a truncated resolution header
        header + struct.pack("<bBHi", 1, 0, 1, 0) + b"\x0a\x00",           # a truncated IPv4 entry
        header + struct.pack("<bBHi", 2, 0, 1, 0) + bytes(16),             # a truncated IPv6 entry
        header + struct.pack("<bBHi", 9, 0, 1, 0) + bytes(8),              # an unknown res_type
        header + struct.pack("<bBHi", 1, 0, 1, 0) + bytes(4) + struct.pack("<h", -5) + bytes(2),
        header + struct.pack("<bBHi", 1, 0, 1, 0) + bytes(4) + struct.pack("<h", 500) + b"short",
        header + struct.pack("<bBHi", 1, 0, 1, 0) + bytes(4) + struct.pack("<h", 32000) + bytes(32002),
    ]
    for frame in hostile:
        resolver.on_frame(frame, ("127.0.0.5", 1), resolver.clock.ms)
    assert invalid.get() == len(hostile)
    assert resolver.cache_entries_counter.get() == 0 and resolver.neighbors_counter.get() == 0
    assert resolver.errors == []
    # random bytes after a resolution frame header: never an exception, never an error logged
    rng = random.Random(16)
    for _ in range(2_000):
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64)))
        resolver.on_frame(header + body, ("127.0.0.5", 1), resolver.clock.ms)
    assert resolver.errors == []
    # an age from the future does not keep an entry alive past the timeout
    resolver.on_frame(_self_frame(b"old", bytes([10, 0, 0, 2]), 2, age=-(2 ** 31)), ("10.0.0.2", 2),
                      resolver.clock.ms)
    assert resolver.cache.lookup(b"old", RES_TYPE_NAME_TO_IP4_MD).time_of_last_activity_ms == resolver.clock.ms
    resolver.cache.timeout_old_entries(resolver.clock.ms + 2_000)
    assert resolver.cache.lookup(b"old", RES_TYPE_NAME_TO_IP4_MD) is None


def test_neighbour_resolutions_split_the_cache_into_mtu_sized_frames(resolver):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        peer.settimeout(5)
        port = peer.getsockname()[1]
        now = resolver.clock.ms
        resolver.on_frame(_self_frame(b"peer", bytes([127, 0, 0, 1]), port), ("127.0.0.1", port), now)
        for i in range(200):        # heard of through gossip: cache entries, not neighbours to send to
            name = f"driver-with-a-rather-long-name-{i:03}".encode()
            resolver.cache.add_or_update(name, (RES_TYPE_NAME_TO_IP4_MD, bytes([10, 0, 1, i]), 1000 + i), now - 5)
        # the self announcement first, then the cache in frames no longer than the MTU
        assert resolver.send_self_resolutions(now) == 1
        frame, _ = peer.recvfrom(65536)
        assert frame[6] == 7 and frame[9] == RES_SELF_FLAG and frame[22:23] == b"A"
        sent = resolver.send_neighbor_resolutions(now + 10)
        names = []
        for _ in range(sent):
            frame, _ = peer.recvfrom(65536)
            assert len(frame) <= 1408 and struct.unpack_from("<i", frame)[0] == len(frame)
            offset = 8
            while offset < len(frame):
                (name_length,) = struct.unpack_from("<h", frame, offset + 12)
                assert struct.unpack_from("<i", frame, offset + 4)[0] in (10, 15)         # ages on our clock
                names.append(frame[offset + 14:offset + 14 + name_length])
                offset += (14 + name_length + 7) & ~7
        assert sent > 1 and len(names) == 201 and len(set(names)) == 201


# -- drivers on loopback -------------------------------------------------------------------------------------------

def _driver(name: str, interface: str, bootstrap: str = "", **overrides) -> MediaDriver:
    return MediaDriver.launch_embedded(driver_context(resolver_name=name, resolver_interface=interface,
                                                      resolver_bootstrap_neighbor=bootstrap, **{**FAST, **overrides}))


def _counters(driver: MediaDriver, type_id: int):
    return [r for r in driver.conductor.counters.counters() if r.type_id == type_id]


def _value(driver: MediaDriver, type_id: int, index: int = 0) -> int:
    return _counters(driver, type_id)[index].value


def _neighbors(driver: MediaDriver) -> int:
    return _value(driver, ctr.NAME_RESOLVER_NEIGHBORS_COUNTER_TYPE_ID)


def _cache_entries(driver: MediaDriver) -> int:
    return _value(driver, ctr.NAME_RESOLVER_CACHE_ENTRIES_COUNTER_TYPE_ID)


def test_two_drivers_gossip_and_a_channel_names_a_driver_instead_of_a_host():
    port_a, port_b, data_port = free_port(), free_port(), free_port()
    with _driver("A", f"127.0.0.1:{port_a}") as a, _driver("B", f"127.0.0.2:{port_b}", f"localhost:{port_a}") as b:
        wait_for(lambda: _neighbors(a) == 1 and _neighbors(b) == 1, what="A and B neighbours")
        wait_for(lambda: _cache_entries(a) == 1 and _cache_entries(b) == 1, what="A and B cache each other")
        (bootstrap,) = _counters(b, ctr.NAME_RESOLVER_BOOTSTRAP_NEIGHBOR_TYPE_ID)
        assert bootstrap.label == f"Bootstrap neighbor: name=localhost:{port_a} resolved=127.0.0.1:{port_a}"
        assert struct.unpack("<i", bootstrap.key[:4]) == (0,)
        wait_for(lambda: _value(b, ctr.NAME_RESOLVER_BOOTSTRAP_NEIGHBOR_TYPE_ID) == 1, what="bootstrap neighbour live")
        assert _counters(b, ctr.NAME_RESOLVER_NEIGHBORS_COUNTER_TYPE_ID)[0].label == \
            f"Resolver neighbors: bound 127.0.0.2:{port_b}"
        assert _counters(b, ctr.NAME_RESOLVER_CACHE_ENTRIES_COUNTER_TYPE_ID)[0].label == \
            "Resolver cache entries: name=B"
        assert b.conductor.counters.get_counter_label(ctr.RESOLUTION_CHANGES) == "Resolution changes: driverName=B"
        with Aeron.connect(Context(a.aeron_dir)) as on_a, Aeron.connect(Context(b.aeron_dir)) as on_b:
            sub = on_b.add_subscription(f"aeron:udp?endpoint=127.0.0.2:{data_port}", 1001)
            pub = on_a.add_publication(f"aeron:udp?endpoint=B:{data_port}", 1001)
            wait_for(lambda: pub.is_connected and sub.image_count == 1, what="A's publication to B by name")
            wait_for(lambda: pub.offer(b"to B by name") > 0)
            received = []
            wait_for(lambda: sub.poll(lambda buf, off, length, hdr: received.append(buf.get_bytes(off, length)), 10)
                     or received, what="the message")
            assert received == [b"to B by name"]
            # a driver's own name resolves to its resolver's address
            own = on_b.add_subscription(f"aeron:udp?endpoint=B:{free_port()}", 1002)
            assert own.channel_status == ctr.CHANNEL_ENDPOINT_STATUS_ACTIVE
            with pytest.raises(RegistrationError, match="unknown host"):
                on_a.add_publication("aeron:udp?endpoint=no-such-driver.invalid:4000", 1003)


def test_gossip_introduces_drivers_that_know_only_a_third_and_a_closed_one_times_out():
    port_a, port_b, port_c = free_port(), free_port(), free_port()
    with _driver("A", f"127.0.0.1:{port_a}") as a, _driver("C", f"127.0.0.3:{port_c}", f"127.0.0.1:{port_a}") as c:
        b = _driver("B", f"127.0.0.2:{port_b}", f"127.0.0.1:{port_a}")
        try:
            wait_for(lambda: [_neighbors(d) for d in (a, b, c)] == [2, 2, 2], what="everyone knows everyone")
            wait_for(lambda: [_cache_entries(d) for d in (a, b, c)] == [2, 2, 2], what="full caches")
            assert c.conductor.name_resolver.resolve("B", "endpoint", False) == (socket.AF_INET, "127.0.0.2")
        finally:
            b.close()
        wait_for(lambda: (_neighbors(a), _cache_entries(a), _neighbors(c), _cache_entries(c)) == (1, 1, 1, 1),
                 what="B timed out at A and C")
        assert c.conductor.name_resolver.resolve("A", "endpoint", False) == (socket.AF_INET, "127.0.0.1")


def test_bootstrap_neighbours_that_do_not_resolve_are_logged_and_the_next_is_used():
    port_a, port_b = free_port(), free_port()
    with _driver("A", f"127.0.0.1:{port_a}") as a, \
            _driver("B", f"127.0.0.2:{port_b}", f"just:wrong,127.0.0.1:{port_a}") as b:
        wait_for(lambda: _neighbors(a) == 1 and _neighbors(b) == 1, what="A and B neighbours")
        wrong, right = _counters(b, ctr.NAME_RESOLVER_BOOTSTRAP_NEIGHBOR_TYPE_ID)
        assert wrong.label == "Bootstrap neighbor: name=just:wrong resolved=" and wrong.value == 0
        assert right.label == f"Bootstrap neighbor: name=127.0.0.1:{port_a} resolved=127.0.0.1:{port_a}"
        wait_for(lambda: _value(b, ctr.NAME_RESOLVER_BOOTSTRAP_NEIGHBOR_TYPE_ID, 1) == 1, what="second one live")
        section = b.conductor.cnc.error_log_buffer()
        try:
            texts = [record.text for record in read_error_log(section)]
        finally:
            section.close()
        assert any("Invalid argument" in t and "port invalid: 'wrong'" in t for t in texts), texts
        assert b.conductor.counters.get_counter_value(ctr.ERRORS) == 0      # logged, not counted, as in C


def test_a_driver_on_the_wildcard_is_known_by_the_address_its_frames_come_from():
    port_a, port_b = free_port(), free_port()
    with _driver("A", f"0.0.0.0:{port_a}") as a, _driver("B", f"127.0.0.2:{port_b}", f"127.0.0.1:{port_a}") as b:
        wait_for(lambda: _neighbors(a) == 1 and _neighbors(b) == 1, what="A and B neighbours")
        assert _counters(a, ctr.NAME_RESOLVER_NEIGHBORS_COUNTER_TYPE_ID)[0].label == \
            f"Resolver neighbors: bound 0.0.0.0:{port_a}"
        assert b.conductor.name_resolver.resolve("A", "endpoint", False) == (socket.AF_INET, "127.0.0.1")


def test_a_silent_publication_follows_its_driver_name_to_a_new_address():
    port_a, port_b, data_port = free_port(), free_port(), free_port()
    with _driver("A", f"127.0.0.1:{port_a}", re_resolution_check_interval_ns=200 * MS) as a, \
            Aeron.connect(Context(a.aeron_dir)) as on_a:
        with _driver("B", f"127.0.0.2:{port_b}", f"127.0.0.1:{port_a}") as b1, \
                Aeron.connect(Context(b1.aeron_dir)) as c:
            wait_for(lambda: _cache_entries(a) == 1, what="A knows B")
            sub = c.add_subscription(f"aeron:udp?endpoint=127.0.0.2:{data_port}", 1001)
            pub = on_a.add_publication(f"aeron:udp?endpoint=B:{data_port}", 1001)
            wait_for(lambda: pub.is_connected and sub.image_count == 1, what="connected to B on 127.0.0.2")
        assert a.conductor.counters.get_counter_value(ctr.RESOLUTION_CHANGES) == 0
        # B comes back on another address; A hears of it, and once its publication has heard nothing for 5 s it
        # resolves B again
        with _driver("B", f"127.0.0.3:{port_b}", f"127.0.0.1:{port_a}") as b2, \
                Aeron.connect(Context(b2.aeron_dir)) as c:
            sub = c.add_subscription(f"aeron:udp?endpoint=127.0.0.3:{data_port}", 1001)
            wait_for(lambda: a.conductor.name_resolver.resolve("B", "endpoint", False)[1] == "127.0.0.3",
                     what="A's cache follows B")
            wait_for(lambda: sub.image_count == 1 and pub.is_connected, timeout_s=30, what="connected to the new B")
            assert a.conductor.counters.get_counter_value(ctr.RESOLUTION_CHANGES) == 1
            wait_for(lambda: pub.offer(b"found again") > 0)


def test_a_driver_counts_hostile_datagrams_on_its_resolver_socket_and_keeps_gossiping():
    port_a = free_port()
    with _driver("A", f"127.0.0.1:{port_a}") as a, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        peer.settimeout(10)
        invalid = a.conductor.system[ctr.INVALID_PACKETS]
        before = invalid.get()
        header = struct.pack("<iBBh", 0, 0, 0, 7)
        hostile = [b"\x07", struct.pack("<iBBh", 8, 0, 0, 1), header + struct.pack("<bBHi", 3, 0, 1, 0) + bytes(8),
                   header + struct.pack("<bBHi", 1, 0x80, 1, 0) + bytes(4) + struct.pack("<h", -1) + bytes(2)]
        for datagram in hostile:
            peer.sendto(datagram, ("127.0.0.1", port_a))
        wait_for(lambda: invalid.get() - before == len(hostile), what="hostile datagrams counted")
        assert _neighbors(a) == 0 and _cache_entries(a) == 0
        port = peer.getsockname()[1]
        peer.sendto(_self_frame(b"peer", bytes([127, 0, 0, 1]), port), ("127.0.0.1", port_a))
        wait_for(lambda: _neighbors(a) == 1, what="the peer as a neighbour")
        for _ in range(100):              # A announces itself to its new neighbour (and gossips its cache to it)
            frame, source = peer.recvfrom(65536)
            assert source == ("127.0.0.1", port_a) and frame[6] == 7
            if frame[9] & RES_SELF_FLAG:
                break
        assert frame[9] & RES_SELF_FLAG and frame[22:23] == b"A"
        assert a.conductor.counters.get_counter_value(ctr.ERRORS) == 0
