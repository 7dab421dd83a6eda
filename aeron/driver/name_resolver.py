# SPDX-License-Identifier: Apache-2.0
"""Name resolvers of the media driver (ports of aeron_name_resolver.c, aeron_driver_name_resolver.c and
aeron_name_resolver_cache.c; DriverNameResolver.java).

A channel's ``endpoint`` and ``control`` go through the driver's name resolver (``resolve_host_and_port``): the
``default`` one asks the operating system (getaddrinfo, IPv4 first); the ``driver`` one (``AERON_NAME_RESOLVER_
SUPPLIER=driver``, or a resolver interface configured) first looks in a cache of driver names that the drivers
on a network gossip to each other over UDP, so a channel can name a driver (``endpoint=B:24325``) instead of a
host.

The driver resolver binds ``AERON_DRIVER_RESOLVER_INTERFACE`` and every self-resolution interval announces its
name and address to its bootstrap neighbours (``AERON_DRIVER_RESOLVER_BOOTSTRAP_NEIGHBOR``, a comma-separated
list of ``host:port``) and to every neighbour it has heard from; every neighbour-resolution interval it sends
its whole cache to its neighbours. Neighbours and cache entries not heard of for the neighbour timeout are
dropped. Counters: ``Resolver neighbors: bound <interface>`` (type 15), ``Resolver cache entries: name=<name>``
(type 16) and one ``Bootstrap neighbor: name=<host:port> resolved=<address>`` (type 21, key: its index in the
list) per bootstrap neighbour, 1 while that neighbour is a live neighbour.

Resolution frames (HDR_TYPE_RES, 0x07): an 8-byte frame header, then entries of ``res_type`` (int8: 1 IPv4, 2
IPv6), ``res_flags`` (uint8: 0x80 SELF, the sender's own entry), ``udp_port`` (uint16), ``age_in_ms`` (int32),
the address (4 or 16 bytes), ``name_length`` (int16) and the name, each entry padded to 8 bytes; all fields
little-endian as Aeron writes them. The resolver reads at most one datagram per 10 ms duty cycle, as the C
driver does, so this is per-duty-cycle work and stays in Python; a malformed frame is counted in ``Invalid
packets`` and dropped.
"""
from __future__ import annotations

import errno
import ipaddress
import socket
import struct
from collections.abc import Callable
from typing import Any

from aeron._core import counters as ctr
from aeron._core.counters import AtomicCounter, CountersManager
from aeron.common.errors import ChannelEndpointError, ConfigurationError, ErrorCode

__all__ = [
    "DefaultNameResolver", "DriverNameResolver", "NameResolutionError", "TimeTrackingNameResolver",
    "encode_resolution_entry", "name_resolver_for", "resolve_host_and_port",
]

HDR_TYPE_RES = 0x07
FRAME_HEADER_LENGTH = 8
FRAME_HEADER_VERSION = 0
RES_TYPE_NAME_TO_IP4_MD = 1
RES_TYPE_NAME_TO_IP6_MD = 2
RES_SELF_FLAG = 0x80
RESOLUTION_HEADER_LENGTH = 8                # res_type, res_flags, udp_port, age_in_ms
IP4_ENTRY_HEADER_LENGTH = 14                # + 4-byte address + int16 name length
IP6_ENTRY_HEADER_LENGTH = 26                # + 16-byte address + int16 name length
DUTY_CYCLE_MS = 10                          # AERON_NAME_RESOLVER_DRIVER_DUTY_CYCLE_MS
MAX_BOOTSTRAP_NEIGHBORS = 20
MAX_UDP_PAYLOAD_LENGTH = 65504
NAME_RESOLVER_THRESHOLD_NS = 5_000_000_000  # AERON_DRIVER_NAME_RESOLVER_THRESHOLD_NS_DEFAULT

_FRAME_HEADER = struct.Struct("<iBBh")      # frame_length, version, flags, type
_RES_HEADER = struct.Struct("<bBHi")        # res_type, res_flags, udp_port, age_in_ms
_NAME_LENGTH = struct.Struct("<h")

# (res_type, address bytes, port): where a name points, as the frames carry it
CacheAddr = tuple


class NameResolutionError(Exception):
    """A name that did not resolve; ``code`` is the ErrorCode and ``os_errno`` the errno the C driver reports."""

    def __init__(self, message: str, code: int = ErrorCode.UNKNOWN_HOST, os_errno: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.os_errno = os_errno


def _align8(length: int) -> int:
    return (length + 7) & ~7


def _family_of(res_type: int) -> int:
    return socket.AF_INET6 if res_type == RES_TYPE_NAME_TO_IP6_MD else socket.AF_INET


def cache_addr_of(sockaddr: tuple, family: int) -> CacheAddr:
    """The (res_type, address bytes, port) of a socket address."""
    host = sockaddr[0].split("%")[0]
    if family == socket.AF_INET6:
        return RES_TYPE_NAME_TO_IP6_MD, socket.inet_pton(socket.AF_INET6, host), sockaddr[1]
    return RES_TYPE_NAME_TO_IP4_MD, socket.inet_pton(socket.AF_INET, host), sockaddr[1]


def sockaddr_of(cache_addr: CacheAddr) -> tuple[int, tuple]:
    """(family, socket address) of a cache address."""
    res_type, address, port = cache_addr
    family = _family_of(res_type)
    host = socket.inet_ntop(family, address)
    return family, ((host, port, 0, 0) if family == socket.AF_INET6 else (host, port))


def format_sockaddr(family: int, sockaddr: tuple | None) -> str:
    """``ip:port`` or ``[ip6]:port`` as aeron_format_source_identity, empty for no address."""
    if sockaddr is None:
        return ""
    return f"[{sockaddr[0]}]:{sockaddr[1]}" if family == socket.AF_INET6 else f"{sockaddr[0]}:{sockaddr[1]}"


def encode_resolution_entry(flags: int, cache_addr: CacheAddr, name: bytes, age_ms: int = 0) -> bytes:
    """One entry of a resolution frame, padded to 8 bytes."""
    res_type, address, port = cache_addr
    header = IP6_ENTRY_HEADER_LENGTH if res_type == RES_TYPE_NAME_TO_IP6_MD else IP4_ENTRY_HEADER_LENGTH
    body = _RES_HEADER.pack(res_type, flags, port, age_ms) + address + _NAME_LENGTH.pack(len(name)) + name
    return body + bytes(_align8(header + len(name)) - len(body))


def encode_resolution_frame(entries: bytes) -> bytes:
    """A whole resolution frame around already encoded entries."""
    return _FRAME_HEADER.pack(FRAME_HEADER_LENGTH + len(entries), FRAME_HEADER_VERSION, 0, HDR_TYPE_RES) + entries


# -- resolvers ---------------------------------------------------------------------------------------------------

class DefaultNameResolver:
    """The operating system's resolver (aeron_default_name_resolver): IPv4 first, then IPv6."""

    name = "default"

    def lookup(self, name: str, uri_param_name: str, is_re_lookup: bool) -> str:
        return name

    def resolve(self, name: str, uri_param_name: str, is_re_resolution: bool) -> tuple[int, str]:
        """(family, address text) of a host name; raises NameResolutionError."""
        last: Exception | None = None
        for family in (socket.AF_INET, socket.AF_INET6):
            try:
                infos = socket.getaddrinfo(name, None, family, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
            except (socket.gaierror, UnicodeError, ValueError) as exc:
                last = exc
                continue
            if infos:
                return family, infos[0][4][0]
        code = getattr(last, "errno", 0) or 0
        raise NameResolutionError(f"Unable to resolve host=({name}): ({code}) {getattr(last, 'strerror', last)}")

    def do_work(self, now_ms: int) -> int:
        return 0

    def close(self) -> None:
        pass


def _split_address(text: str) -> tuple[str, str, bool]:
    """(host, port text, is_ipv6) of ``host:port`` or ``[ip6]:port`` (aeron_address_split)."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise NameResolutionError(f"invalid address: {text}", ErrorCode.GENERIC_ERROR, errno.EINVAL)
        rest = text[close + 1:]
        return text[1:close], rest[1:] if rest.startswith(":") else rest, True
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, "", False
    return host, port, False


def _parse_port(text: str) -> int:
    # aeron_udp_port_resolver: strtoul with base 0, required here
    try:
        value = int(text, 0)
    except ValueError:
        raise NameResolutionError(f"port invalid: '{text}'", ErrorCode.GENERIC_ERROR, errno.EINVAL) from None
    if not 0 <= value <= 0xFFFF:
        raise NameResolutionError(f"port out of range: '{text}'", ErrorCode.GENERIC_ERROR, errno.EINVAL)
    return value


def _literal(host: str, ipv6: bool) -> str | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return str(address) if (address.version == 6) == ipv6 else None


def resolve_host_and_port(resolver: Any, name: str, uri_param_name: str,
                          is_re_resolution: bool = False) -> tuple[int, tuple]:
    """Port of aeron_name_resolver_resolve_host_and_port: ``name`` (``host:port``, ``[ip6]:port``, or a name the
    resolver looks up to one of those) to (family, socket address); literal addresses skip the resolver.
    Raises NameResolutionError naming the parameter."""
    address_text = None
    try:
        address_text = resolver.lookup(name, uri_param_name, is_re_resolution)
        host, port_text, ipv6 = _split_address(address_text)
        port = _parse_port(port_text)
        literal = _literal(host, ipv6)
        if literal is not None:
            family = socket.AF_INET6 if ipv6 else socket.AF_INET
        else:
            family, literal = resolver.resolve(host, uri_param_name, is_re_resolution)
    except NameResolutionError as exc:
        raise NameResolutionError(f"{exc}\nUnresolved - {uri_param_name}={name}, name-and-port={address_text}",
                                  exc.code, exc.os_errno) from None
    return family, ((literal, port, 0, 0) if family == socket.AF_INET6 else (literal, port))


class TimeTrackingNameResolver:
    """Measures every resolve and lookup of ``delegate`` into the NameResolver max time and threshold-exceeded
    system counters (aeron_time_tracking_name_resolver)."""

    def __init__(self, delegate: Any, nano_clock: Callable[[], int], max_time: AtomicCounter,
                 threshold_exceeded: AtomicCounter, threshold_ns: int = NAME_RESOLVER_THRESHOLD_NS) -> None:
        self.delegate = delegate
        self.name = delegate.name
        self._nano_clock = nano_clock
        self._max_time = max_time
        self._threshold_exceeded = threshold_exceeded
        self._threshold_ns = threshold_ns

    def _measure(self, begin_ns: int) -> None:
        elapsed = self._nano_clock() - begin_ns
        self._max_time.propose_max_ordered(elapsed)
        if elapsed > self._threshold_ns:
            self._threshold_exceeded.increment_ordered()

    def lookup(self, name: str, uri_param_name: str, is_re_lookup: bool) -> str:
        begin = self._nano_clock()
        try:
            return self.delegate.lookup(name, uri_param_name, is_re_lookup)
        finally:
            self._measure(begin)

    def resolve(self, name: str, uri_param_name: str, is_re_resolution: bool) -> tuple[int, str]:
        begin = self._nano_clock()
        try:
            return self.delegate.resolve(name, uri_param_name, is_re_resolution)
        finally:
            self._measure(begin)

    def do_work(self, now_ms: int) -> int:
        return self.delegate.do_work(now_ms)

    def close(self) -> None:
        self.delegate.close()

    def wait_fds(self) -> list[int]:
        fds = getattr(self.delegate, "wait_fds", None)
        return fds() if fds is not None else []


class _CacheEntry:
    __slots__ = ("name", "cache_addr", "time_of_last_activity_ms", "deadline_ms")

    def __init__(self, name: bytes, cache_addr: CacheAddr, time_of_last_activity_ms: int, deadline_ms: int) -> None:
        self.name = name
        self.cache_addr = cache_addr
        self.time_of_last_activity_ms = time_of_last_activity_ms
        self.deadline_ms = deadline_ms


class NameResolverCache:
    """Names heard of, by (name, res_type), each dropped ``timeout_ms`` after its last activity
    (aeron_name_resolver_cache.c). ``counter`` holds the number of entries."""

    def __init__(self, timeout_ms: int, counter: AtomicCounter) -> None:
        self.timeout_ms = timeout_ms
        self.entries: dict[tuple[bytes, int], _CacheEntry] = {}
        self._counter = counter

    def add_or_update(self, name: bytes, cache_addr: CacheAddr, time_of_last_activity_ms: int) -> int:
        """Returns 1 for a new entry, 0 for an update."""
        key = (name, cache_addr[0])
        deadline = time_of_last_activity_ms + self.timeout_ms
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = _CacheEntry(name, cache_addr, time_of_last_activity_ms, deadline)
            self._counter.set_ordered(len(self.entries))
            return 1
        entry.cache_addr = cache_addr
        entry.time_of_last_activity_ms = time_of_last_activity_ms
        entry.deadline_ms = deadline
        return 0

    def lookup(self, name: bytes, res_type: int) -> _CacheEntry | None:
        return self.entries.get((name, res_type))

    def timeout_old_entries(self, now_ms: int) -> int:
        expired = [key for key, entry in self.entries.items() if entry.deadline_ms <= now_ms]
        for key in expired:
            del self.entries[key]
        if expired:
            self._counter.set_ordered(len(self.entries))
        return len(expired)


class _Neighbor:
    __slots__ = ("cache_addr", "family", "sockaddr", "time_of_last_activity_ms")

    def __init__(self, cache_addr: CacheAddr, time_of_last_activity_ms: int) -> None:
        self.cache_addr = cache_addr
        self.family, self.sockaddr = sockaddr_of(cache_addr)
        self.time_of_last_activity_ms = time_of_last_activity_ms


def _same_sockaddr(a: tuple | None, b: tuple | None) -> bool:
    return a is not None and b is not None and a[:2] == b[:2]


def _parse_interface(text: str) -> tuple[int, tuple]:
    """``host:port`` or ``[ip6]:port`` of the resolver's interface (aeron_interface_parse_and_resolve; a
    ``/prefix`` is ignored: the resolver binds one address)."""
    host, port_text, ipv6 = _split_address(text)
    host = host.split("/")[0]
    port = _parse_port(port_text) if port_text else 0
    literal = _literal(host, ipv6)
    if literal is not None:
        family = socket.AF_INET6 if ipv6 else socket.AF_INET
    else:
        family, literal = DefaultNameResolver().resolve(host, "interface", False)
    return family, ((literal, port, 0, 0) if family == socket.AF_INET6 else (literal, port))


class DriverNameResolver:
    """The driver name resolver (aeron_driver_name_resolver.c): gossips driver names with the other drivers and
    resolves them, handing every other name to the ``bootstrap`` resolver.

    ``DriverNameResolver(ctx, counters, system, log_error)``: ``system`` maps system counter ids to
    AtomicCounters; ``log_error(code, text, os_errno, count)`` records an error in the driver's error log (and
    counts it in ``Errors`` when ``count``). Raises ConfigurationError for bad settings and
    ChannelEndpointError when the interface cannot be bound."""

    name = "driver"

    def __init__(self, ctx: Any, counters: CountersManager, system: dict[int, AtomicCounter],
                 log_error: Callable[[int, str, int | None, bool], None], bootstrap: Any = None,
                 epoch_clock_ms: Callable[[], int] | None = None) -> None:
        self._counters = counters
        self._values = counters.values_buffer
        self._log_error = log_error
        self._epoch_clock = epoch_clock_ms or ctx.epoch_clock_ms
        self.bootstrap = bootstrap if bootstrap is not None else DefaultNameResolver()
        self.resolver_name = ctx.resolver_name
        if not self.resolver_name:
            raise ConfigurationError("aeron.driver.resolver.name (AERON_DRIVER_RESOLVER_NAME) is required when "
                                     "aeron.driver.resolver.interface is set")
        self._name = self.resolver_name.encode("utf-8")
        self.mtu_length = ctx.mtu_length
        self._invalid_packets = system[ctr.INVALID_PACKETS]
        self._short_sends = system[ctr.SHORT_SENDS]
        interface = ctx.resolver_interface
        try:
            self.local_family, self.local_sockaddr = _parse_interface(interface)
        except NameResolutionError as exc:
            raise ConfigurationError(f"aeron.driver.resolver.interface={interface}: {exc}") from None
        neighbors_text = ctx.resolver_bootstrap_neighbor
        self.bootstrap_neighbors = [n.strip() for n in neighbors_text.split(",") if n.strip()] \
            if neighbors_text else []
        if len(self.bootstrap_neighbors) > MAX_BOOTSTRAP_NEIGHBORS:
            raise ConfigurationError(f"aeron.driver.resolver.bootstrap.neighbor: more than "
                                     f"{MAX_BOOTSTRAP_NEIGHBORS} neighbors: {neighbors_text}")
        # resolved addresses of the bootstrap neighbours, None while unresolved
        self.bootstrap_addrs: list[tuple[int, tuple] | None] = [None] * len(self.bootstrap_neighbors)
        self.neighbors: list[_Neighbor] = []
        self._allocated: list[int] = []
        self._socket: socket.socket | None = None
        try:
            self._bootstrap_counters: list[AtomicCounter] = []
            for index in range(len(self.bootstrap_neighbors)):
                counter_id = self._allocate(self._bootstrap_label(index), ctr.NAME_RESOLVER_BOOTSTRAP_NEIGHBOR_TYPE_ID,
                                            struct.pack("<i", index))
                self._bootstrap_counters.append(AtomicCounter(self._values, counter_id))
            self._socket = self._open_socket(ctx, interface, neighbors_text)
            bound = self._socket.getsockname()
            if self.local_sockaddr[1] == 0:      # an ephemeral port: announce the one the socket got
                self.local_sockaddr = (self.local_sockaddr[0], bound[1], *self.local_sockaddr[2:])
            self.local_cache_addr = cache_addr_of(self.local_sockaddr, self.local_family)
            self.neighbors_counter = AtomicCounter(self._values, self._allocate(
                f"Resolver neighbors: bound {format_sockaddr(self.local_family, self.local_sockaddr)}",
                ctr.NAME_RESOLVER_NEIGHBORS_COUNTER_TYPE_ID, b""))
            self.cache_entries_counter = AtomicCounter(self._values, self._allocate(
                f"Resolver cache entries: name={self.resolver_name}", ctr.NAME_RESOLVER_CACHE_ENTRIES_COUNTER_TYPE_ID,
                b""))
        except BaseException:
            self.close()
            raise
        self.neighbor_timeout_ms = ctx.resolver_neighbor_timeout_ns // 1_000_000
        self.self_resolution_interval_ms = ctx.resolver_self_resolution_interval_ns // 1_000_000
        self.neighbor_resolution_interval_ms = ctx.resolver_neighbor_resolution_interval_ns // 1_000_000
        self.bootstrap_resolution_interval_ms = ctx.resolver_bootstrap_neighbor_resolution_interval_ns // 1_000_000
        self.cache = NameResolverCache(self.neighbor_timeout_ms, self.cache_entries_counter)
        now_ms = self._epoch_clock()
        self._work_deadline_ms = 0
        self._self_resolutions_deadline_ms = 0
        self._neighbor_resolutions_deadline_ms = now_ms + self.neighbor_resolution_interval_ms
        self._bootstrap_resolve_deadline_ms = now_ms + self.bootstrap_resolution_interval_ms
        self._receive_buffer = bytearray(MAX_UDP_PAYLOAD_LENGTH)
        self.resolve_bootstrap_neighbors()

    # -- set-up and tear-down ------------------------------------------------------------------------------------
    def _allocate(self, label: str, type_id: int, key: bytes) -> int:
        counter_id = self._counters.allocate(label.encode("utf-8", "replace")[:ctr.MAX_LABEL_LENGTH], type_id, key)
        self._allocated.append(counter_id)
        return counter_id

    def _open_socket(self, ctx: Any, interface: str, neighbors_text: str) -> socket.socket:
        sock = socket.socket(self.local_family, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        try:
            sock.setblocking(False)
            if ctx.socket_rcvbuf > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, ctx.socket_rcvbuf)
            if ctx.socket_sndbuf > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, ctx.socket_sndbuf)
            sock.bind(self.local_sockaddr)
        except OSError as exc:
            sock.close()
            raise ChannelEndpointError(
                f"resolver, name={self.resolver_name} interface_name={interface} bootstrap_neighbor="
                f"{neighbors_text or None}: cannot bind aeron:udp?endpoint={interface}: {exc}") from exc
        return sock

    def close(self) -> None:
        """Close the socket and free the resolver's counters. Idempotent."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        for counter in getattr(self, "_bootstrap_counters", []):
            counter.close()
        for name in ("neighbors_counter", "cache_entries_counter"):
            counter = getattr(self, name, None)
            if counter is not None:
                counter.close()
        for counter_id in self._allocated:
            self._counters.free(counter_id)
        self._allocated = []
        self.bootstrap.close()

    def wait_fds(self) -> list[int]:
        """The resolver's socket, for an agent that parks until a socket is readable."""
        return [self._socket.fileno()] if self._socket is not None else []

    @property
    def bound_address(self) -> tuple:
        """The address the resolver's socket is bound to."""
        assert self._socket is not None
        return self._socket.getsockname()

    # -- NameResolver --------------------------------------------------------------------------------------------
    def lookup(self, name: str, uri_param_name: str, is_re_lookup: bool) -> str:
        return self.bootstrap.lookup(name, uri_param_name, is_re_lookup)

    def resolve(self, name: str, uri_param_name: str, is_re_resolution: bool) -> tuple[int, str]:
        """A driver name from the cache (IPv4 entries, as the C driver asks for), this driver's own name, or else
        whatever the bootstrap resolver makes of it."""
        encoded = name.encode("utf-8", "replace")
        entry = self.cache.lookup(encoded, RES_TYPE_NAME_TO_IP4_MD)
        if entry is not None:
            family, sockaddr = sockaddr_of(entry.cache_addr)
            return family, sockaddr[0]
        if encoded == self._name:
            return self.local_family, self.local_sockaddr[0]
        return self.bootstrap.resolve(name, uri_param_name, is_re_resolution)

    def do_work(self, now_ms: int) -> int:
        """Every 10 ms: read a datagram, expire cache entries and neighbours, and send what is due."""
        if now_ms < self._work_deadline_ms:
            return 0
        work = self.poll(now_ms)
        work += self.cache.timeout_old_entries(now_ms)
        work += self.timeout_neighbors(now_ms)
        if self._self_resolutions_deadline_ms <= now_ms:
            work += self.send_self_resolutions(now_ms)
            self._self_resolutions_deadline_ms = now_ms + self.self_resolution_interval_ms
        if self._neighbor_resolutions_deadline_ms <= now_ms:
            work += self.send_neighbor_resolutions(now_ms)
            self._neighbor_resolutions_deadline_ms = now_ms + self.neighbor_resolution_interval_ms
        if self.bootstrap_neighbors and self._bootstrap_resolve_deadline_ms <= now_ms:
            self.resolve_bootstrap_neighbors()
            self._bootstrap_resolve_deadline_ms = now_ms + self.bootstrap_resolution_interval_ms
        work += self.bootstrap.do_work(now_ms)
        self._work_deadline_ms = now_ms + DUTY_CYCLE_MS
        return work

    # -- bootstrap neighbours ------------------------------------------------------------------------------------
    def _bootstrap_label(self, index: int) -> str:
        resolved = self.bootstrap_addrs[index]
        address = format_sockaddr(*resolved) if resolved is not None else ""
        return f"Bootstrap neighbor: name={self.bootstrap_neighbors[index]} resolved={address}"

    def resolve_bootstrap_neighbors(self) -> None:
        """(Re-)resolve every bootstrap neighbour that is not a live neighbour, so a name that now points
        elsewhere is followed; a failure is logged and leaves it unresolved."""
        for index, neighbor in enumerate(self.bootstrap_neighbors):
            current = self.bootstrap_addrs[index]
            if current is not None and any(_same_sockaddr(current[1], n.sockaddr) for n in self.neighbors):
                continue
            try:
                self.bootstrap_addrs[index] = resolve_host_and_port(self.bootstrap, neighbor, "bootstrap_neighbor")
            except NameResolutionError as exc:
                self.bootstrap_addrs[index] = None
                self._log_error(exc.code, str(exc), exc.os_errno, False)
            self._counters.set_counter_label(self._bootstrap_counters[index].counter_id,
                                             self._bootstrap_label(index).encode("utf-8", "replace"))

    # -- sending -------------------------------------------------------------------------------------------------
    def _send(self, frame: bytes, family: int, sockaddr: tuple) -> bool:
        assert self._socket is not None
        try:
            sent = self._socket.sendto(frame, sockaddr)
        except (BlockingIOError, InterruptedError, ConnectionRefusedError):
            # a full socket buffer, or the ICMP answer to an earlier datagram to a neighbour now gone: 0 sent
            return True
        except OSError as exc:
            self._log_error(ErrorCode.GENERIC_ERROR, f"Failed to send resolution frames to neighbor: "
                            f"{format_sockaddr(family, sockaddr)} (protocol_family={family}): {exc}",
                            exc.errno, True)
            return False
        if sent < len(frame):
            self._short_sends.increment_ordered()
        return True

    def send_self_resolutions(self, now_ms: int) -> int:
        """Announce this driver to the bootstrap neighbours and every other neighbour; mark which bootstrap
        neighbours are live neighbours."""
        if not self.bootstrap_neighbors and not self.neighbors:
            return 0
        frame = encode_resolution_frame(encode_resolution_entry(RES_SELF_FLAG, self.local_cache_addr, self._name))
        work = 0
        for resolved in self.bootstrap_addrs:
            if resolved is not None and self._send(frame, *resolved):
                work += 1
        connected = [False] * len(self.bootstrap_addrs)
        for neighbor in self.neighbors:
            is_bootstrap = False
            for index, resolved in enumerate(self.bootstrap_addrs):
                if resolved is not None and _same_sockaddr(resolved[1], neighbor.sockaddr):
                    is_bootstrap = connected[index] = True
            if not is_bootstrap and self._send(frame, neighbor.family, neighbor.sockaddr):
                work += 1
        for counter, is_connected in zip(self._bootstrap_counters, connected, strict=True):
            counter.set_ordered(1 if is_connected else 0)
        return work

    def send_neighbor_resolutions(self, now_ms: int) -> int:
        """Send the whole cache, as many MTU-sized frames as it takes, to every neighbour."""
        capacity = self.mtu_length - FRAME_HEADER_LENGTH
        frames: list[bytes] = []
        chunk: list[bytes] = []
        used = 0
        for entry in list(self.cache.entries.values()):
            encoded = encode_resolution_entry(0, entry.cache_addr, entry.name,
                                              _clamp_age(now_ms - entry.time_of_last_activity_ms))
            if len(encoded) > capacity:
                continue                 # cannot be sent whole (refused on receipt; see _on_frame)
            if used + len(encoded) > capacity:
                frames.append(encode_resolution_frame(b"".join(chunk)))
                chunk, used = [], 0
            chunk.append(encoded)
            used += len(encoded)
        if chunk:
            frames.append(encode_resolution_frame(b"".join(chunk)))
        work = 0
        for frame in frames:
            for neighbor in list(self.neighbors):
                if self._send(frame, neighbor.family, neighbor.sockaddr):
                    work += 1
        return work

    def timeout_neighbors(self, now_ms: int) -> int:
        alive = [n for n in self.neighbors if n.time_of_last_activity_ms + self.neighbor_timeout_ms > now_ms]
        removed = len(self.neighbors) - len(alive)
        if removed:
            self.neighbors = alive
            self.neighbors_counter.set_ordered(len(alive))
        return removed

    # -- receiving -----------------------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> int:
        """Read at most one datagram (the C driver's one receive buffer per duty cycle). Returns its length."""
        if self._socket is None:
            return 0
        try:
            length, source = self._socket.recvfrom_into(self._receive_buffer)
        except (BlockingIOError, InterruptedError, ConnectionRefusedError):
            return 0
        except OSError as exc:
            self._log_error(ErrorCode.GENERIC_ERROR, f"Failed to poll in driver name resolver: "
                            f"{self.resolver_name}: {exc}", exc.errno, True)
            return 0
        self.on_frame(memoryview(self._receive_buffer)[:length], source, now_ms)
        return length

    def on_frame(self, frame: memoryview | bytes, source: tuple, now_ms: int) -> None:
        """Apply a resolution frame from ``source``; a malformed one is counted as an invalid packet and the rest
        of it dropped (entries before the malformed one stay applied, as in the C driver)."""
        length = len(frame)
        if length < FRAME_HEADER_LENGTH:
            self._invalid_packets.increment_ordered()
            return
        _, version, _, frame_type = _FRAME_HEADER.unpack_from(frame, 0)
        if version != FRAME_HEADER_VERSION or frame_type != HDR_TYPE_RES:
            self._invalid_packets.increment_ordered()
            return
        offset = FRAME_HEADER_LENGTH
        while offset < length:
            remaining = length - offset
            if remaining < RESOLUTION_HEADER_LENGTH:
                self._invalid_packets.increment_ordered()
                return
            res_type, flags, port, age_ms = _RES_HEADER.unpack_from(frame, offset)
            if res_type == RES_TYPE_NAME_TO_IP4_MD:
                header_length, address_length = IP4_ENTRY_HEADER_LENGTH, 4
            elif res_type == RES_TYPE_NAME_TO_IP6_MD:
                header_length, address_length = IP6_ENTRY_HEADER_LENGTH, 16
            else:
                # the C driver logs an unknown res_type as an error; from the network it is a malformed packet
                self._invalid_packets.increment_ordered()
                return
            if remaining < header_length:
                self._invalid_packets.increment_ordered()
                return
            (name_length,) = _NAME_LENGTH.unpack_from(frame, offset + header_length - 2)
            entry_length = _align8(header_length + name_length)
            # a negative name length, an entry past the datagram, or one too long to be gossiped on in one frame
            if name_length < 0 or entry_length > remaining or entry_length > self.mtu_length - FRAME_HEADER_LENGTH:
                self._invalid_packets.increment_ordered()
                return
            address = bytes(frame[offset + RESOLUTION_HEADER_LENGTH:offset + RESOLUTION_HEADER_LENGTH + address_length])
            name = bytes(frame[offset + header_length:offset + header_length + name_length])
            cache_addr = (res_type, address, port)
            is_self = bool(flags & RES_SELF_FLAG)
            if is_self and _is_wildcard(address):
                # a driver bound to the wildcard announces 0.0.0.0: it is reached where its datagram came from
                cache_addr = cache_addr_of(source, socket.AF_INET6 if len(source) == 4 else socket.AF_INET)
            self._on_resolution_entry(name, cache_addr, is_self, age_ms, now_ms)
            offset += entry_length

    def _on_resolution_entry(self, name: bytes, cache_addr: CacheAddr, is_self: bool, age_ms: int,
                             now_ms: int) -> None:
        if cache_addr[2] == self.local_cache_addr[2] and name == self._name:
            return                                                     # our own entry, gossiped back
        time_of_last_activity_ms = now_ms - _clamp_age(age_ms)
        self.cache.add_or_update(name, cache_addr, time_of_last_activity_ms)
        for neighbor in self.neighbors:
            if neighbor.cache_addr == cache_addr:
                if is_self:
                    neighbor.time_of_last_activity_ms = time_of_last_activity_ms
                return
        self.neighbors.append(_Neighbor(cache_addr, time_of_last_activity_ms))
        self.neighbors_counter.set_ordered(len(self.neighbors))


def _clamp_age(age_ms: int) -> int:
    # an age below zero would date an entry in the future and keep it past every timeout; the int32 field bounds
    # the other end
    return max(0, min(age_ms, 0x7FFFFFFF))


def _is_wildcard(address: bytes) -> bool:
    return not any(address)


def name_resolver_for(ctx: Any, counters: CountersManager, system: dict[int, AtomicCounter],
                      log_error: Callable[[int, str, int | None, bool], None]) -> TimeTrackingNameResolver:
    """The driver's resolver as its context names it (``aeron.name.resolver.supplier``: ``default`` or ``driver``;
    unset, ``driver`` when a resolver interface is configured, as the Java driver decides), wrapped to measure
    its resolution times."""
    supplier = ctx.name_resolver_supplier
    if not supplier:
        supplier = "driver" if ctx.resolver_interface else "default"
    if supplier == "driver":
        if not ctx.resolver_interface:
            raise ConfigurationError("aeron.name.resolver.supplier=driver needs aeron.driver.resolver.interface "
                                     "(AERON_DRIVER_RESOLVER_INTERFACE)")
        delegate: Any = DriverNameResolver(ctx, counters, system, log_error)
    else:
        delegate = DefaultNameResolver()
    return TimeTrackingNameResolver(delegate, ctx.nano_clock, system[ctr.NAME_RESOLVER_MAX_TIME],
                                    system[ctr.NAME_RESOLVER_TIME_THRESHOLD_EXCEEDED])
