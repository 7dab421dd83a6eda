# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""DataPacketDispatcher: a receive channel endpoint's data path in compiled code (aeron_data_packet_dispatcher.c
with the insert half of aeron_publication_image.c).

``poll(transport, destination_id, now_ns)`` is one call per batch, the GIL released throughout: recvmmsg into the
transport's slots, the loss generator (if any), frame validation, the lookup of the image by (session id, stream
id) in an open-addressing table, the packet checks against the image's term, the flow-control window and its
connections, the term rebuild, the high-water mark and the counters. Invalid datagrams are counted and dropped.
What needs Python comes back as events (``event_count``, ``event_slot(i)``, ``event_kind(i)``): a SETUP, an RTT
measurement, and DATA/PAD for which no image here can decide alone (an unknown session, a rejected image, a source
or destination the image has not seen yet, an end-of-stream heartbeat). The endpoint then handles those slots as
before; the slots stay valid until the next receive.

Each image has an ImageReceiveState: its terms, its rcv-hwm counter, the position of its last status message, the
time of its last packet and the connections (destination, source) it has seen, with the time of their last frame.
The image writes what the Python side decides (status messages, connections, rejection) and reads back the times.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcmp, memcpy, memset

from aeron._core.atomic cimport get_and_add_i64, load_acquire_i64, store_release_i64
from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.counters cimport AtomicCounter
from aeron._core.frames cimport (
    DATA_HEADER_LENGTH, EOS_FLAG, FLAGS_FIELD_OFFSET, HDR_TYPE_DATA, HDR_TYPE_PAD, HDR_TYPE_RTTM, HDR_TYPE_SETUP,
    SESSION_ID_FIELD_OFFSET, STREAM_ID_FIELD_OFFSET, TERM_ID_FIELD_OFFSET, TERM_OFFSET_FIELD_OFFSET,
    frame_validate, frames_frame_length, frames_get_i32,
)
from aeron._core.loss_generator cimport LossGenerator
from aeron._core.term_scanner cimport data_packet_validate, term_rebuilder_insert
from aeron._core.udp_transport cimport (
    AF_INET, AF_INET6, UdpTransport, sockaddr_in, sockaddr_in6, sockaddr_storage,
)

import socket as _socket
import struct as _struct

from aeron._core.wakeup import stream_bit
from aeron.common.errors import IllegalStateError, InvalidArgumentError

DISPATCH_HANDLED = DISPATCH_OK
DISPATCH_TO_IMAGE = DISPATCH_DATA
DISPATCH_SETUP_FRAME = DISPATCH_SETUP
DISPATCH_RTTM_FRAME = DISPATCH_RTTM
FAST_CONNECTIONS = MAX_FAST_CONNECTIONS

cdef int INITIAL_CAPACITY = 16


cdef inline int64_t _key(int32_t session_id, int32_t stream_id) noexcept nogil:
    return <int64_t>((<uint64_t><uint32_t>session_id << 32) | <uint64_t><uint32_t>stream_id)


cdef inline uint64_t _hash(int64_t key) noexcept nogil:
    return <uint64_t>key * <uint64_t>0x9E3779B97F4A7C15ULL


cdef inline int32_t _sockaddr_key(const sockaddr_storage *address, uint8_t *out) noexcept nogil:
    """The layout of address_key() from a received sockaddr; -1 for a family it does not know."""
    cdef const sockaddr_in *v4
    cdef const sockaddr_in6 *v6
    cdef uint16_t family = address.ss_family
    memset(out, 0, ADDRESS_KEY_LENGTH)
    memcpy(out, &family, 2)
    if family == AF_INET:
        v4 = <const sockaddr_in *>address
        memcpy(out + 2, &v4.sin_port, 2)
        memcpy(out + 4, &v4.sin_addr, 4)
        return 8
    if family == AF_INET6:
        v6 = <const sockaddr_in6 *>address
        memcpy(out + 2, &v6.sin6_port, 2)
        memcpy(out + 4, &v6.sin6_addr, 16)
        memcpy(out + 20, &v6.sin6_flowinfo, 4)
        memcpy(out + 24, &v6.sin6_scope_id, 4)
        return 28
    return -1


def address_key(address):
    """The bytes by which the compiled dispatcher tells sources apart, for a Python address as UdpTransport.source
    gives it: (host, port) for IPv4, (host, port, flow info, scope id) for IPv6 (numeric hosts)."""
    host, port = address[0], address[1]
    if ":" in host:
        flow = address[2] if len(address) > 2 else 0
        scope = address[3] if len(address) > 3 else 0
        return (_struct.pack("=H", AF_INET6) + _struct.pack("!H", port) +
                _socket.inet_pton(_socket.AF_INET6, host.split("%")[0]) + _struct.pack("=II", flow, scope))
    return _struct.pack("=H", AF_INET) + _struct.pack("!H", port) + _socket.inet_pton(_socket.AF_INET, host)


cdef class ImageReceiveState:
    """The fields of one image that the compiled data path reads and writes (see the module docstring).

    ``ImageReceiveState(session_id, stream_id, initial_term_id, terms, rcv_hwm, join_position, now_ns)``: ``terms``
    are the image's three term AtomicBuffers (equal power-of-two lengths), ``rcv_hwm`` its rcv-hwm counter.
    """

    def __init__(self, int32_t session_id, int32_t stream_id, int32_t initial_term_id, terms,
                 AtomicCounter rcv_hwm not None, int64_t join_position, int64_t now_ns):
        cdef AtomicBuffer term
        cdef int i
        cdef int64_t length
        terms = list(terms)
        if len(terms) != 3:
            raise InvalidArgumentError(f"an image has 3 terms, got {len(terms)}")
        memset(&self.entry, 0, sizeof(ImageEntry))
        for i in range(3):
            term = terms[i]
            term.check(0, 0)
            if i == 0:
                length = term.length
            if term.length != length or length < 32 or length & (length - 1) or length > (1 << 30):
                raise InvalidArgumentError("the terms must have one power-of-two length in [32, 1 GiB]")
            self.entry.terms[i] = term.data
        rcv_hwm._check()
        self._terms = terms
        self._rcv_hwm = rcv_hwm
        self.entry.key = _key(session_id, stream_id)
        self.entry.session_id = session_id
        self.entry.stream_id = stream_id
        self.entry.initial_term_id = initial_term_id
        self.entry.term_length = <int32_t>length
        self.entry.position_bits_to_shift = 0
        while (1 << self.entry.position_bits_to_shift) < length:
            self.entry.position_bits_to_shift += 1
        self.entry.rcv_hwm = rcv_hwm.addr
        self.entry.last_sm_position = join_position
        self.entry.time_of_last_packet_ns = now_ns
        self.entry.accepting = True
        self.entry.wake_bit = stream_bit(stream_id)

    @property
    def session_id(self):
        return self.entry.session_id

    @property
    def stream_id(self):
        return self.entry.stream_id

    @property
    def last_sm_position(self):
        return self.entry.last_sm_position

    @last_sm_position.setter
    def last_sm_position(self, int64_t value):
        self.entry.last_sm_position = value

    @property
    def time_of_last_packet_ns(self):
        return self.entry.time_of_last_packet_ns

    @time_of_last_packet_ns.setter
    def time_of_last_packet_ns(self, int64_t value):
        self.entry.time_of_last_packet_ns = value

    @property
    def inserts(self):
        """Data frames inserted into the image's terms so far (by the compiled path and ``count_insert``)."""
        return self.entry.inserts

    @property
    def gaps(self):
        """Data frames the compiled path inserted past the high-water mark so far (each opened a gap before it)."""
        return self.entry.gaps

    def count_insert(self):
        """A data frame went into the terms by the Python path."""
        self.entry.inserts += 1

    @property
    def heartbeats(self):
        """Heartbeats taken in so far, within the image's window (by the compiled path and ``count_heartbeat``):
        with ``inserts``, the frames by which a source shows it is sending, not just asking for an image."""
        return self.entry.heartbeats

    def count_heartbeat(self):
        """A heartbeat was taken in by the Python path."""
        self.entry.heartbeats += 1

    @property
    def accepting(self):
        """False: the compiled path hands every datagram of this image to Python (a rejected image)."""
        return self.entry.accepting

    @accepting.setter
    def accepting(self, bint value):
        self.entry.accepting = value

    @property
    def connection_count(self):
        return self.entry.connection_count

    def set_connections(self, connections):
        """The image's connections in its own order, as (destination id, address key or None for a fixed address,
        time of last frame ns); only the first FAST_CONNECTIONS are matched in C."""
        cdef int n = 0
        cdef FastConnection *c
        cdef bytes key
        for destination_id, address, time_ns in connections:
            if n == MAX_FAST_CONNECTIONS:
                break
            c = &self.entry.connections[n]
            memset(c, 0, sizeof(FastConnection))
            c.destination_id = destination_id
            c.time_of_last_frame_ns = time_ns
            if address is not None:
                key = address
                if PyBytes_GET_SIZE(key) < 1 or PyBytes_GET_SIZE(key) > ADDRESS_KEY_LENGTH:
                    raise InvalidArgumentError(f"address key of {PyBytes_GET_SIZE(key)} bytes")
                c.address_length = <int32_t>PyBytes_GET_SIZE(key)
                memcpy(c.address, PyBytes_AS_STRING(key), <size_t>c.address_length)
            n += 1
        self.entry.connection_count = n

    def connection_time(self, int index):
        """Time of the last frame the compiled path matched to connection ``index``."""
        if index < 0 or index >= self.entry.connection_count:
            raise InvalidArgumentError(f"connection {index} of {self.entry.connection_count}")
        return self.entry.connections[index].time_of_last_frame_ns


cdef class DataPacketDispatcher:
    """``DataPacketDispatcher(bytes_received, invalid_packets, heartbeats_received, flow_control_over_runs,
    flow_control_under_runs)``: the system counters it adds to. Images come and go with ``add`` and ``remove``
    (the receiver thread, between polls)."""

    def __cinit__(self):
        self.table = NULL
        self.capacity = 0
        self.size = 0

    def __init__(self, AtomicCounter bytes_received not None, AtomicCounter invalid_packets not None,
                 AtomicCounter heartbeats_received not None, AtomicCounter flow_control_over_runs not None,
                 AtomicCounter flow_control_under_runs not None):
        for counter in (bytes_received, invalid_packets, heartbeats_received, flow_control_over_runs,
                        flow_control_under_runs):
            (<AtomicCounter>counter)._check()
        self._counters = [bytes_received, invalid_packets, heartbeats_received, flow_control_over_runs,
                          flow_control_under_runs]
        self.bytes_received = bytes_received.addr
        self.invalid_packets = invalid_packets.addr
        self.heartbeats_received = heartbeats_received.addr
        self.flow_control_over_runs = flow_control_over_runs.addr
        self.flow_control_under_runs = flow_control_under_runs.addr
        self._states = {}
        self.table = <ImageEntry **>calloc(INITIAL_CAPACITY, sizeof(ImageEntry *))
        if self.table == NULL:
            raise MemoryError()
        self.capacity = INITIAL_CAPACITY
        self.event_count = 0

    def __dealloc__(self):
        free(self.table)
        self.table = NULL

    # -- the table ----------------------------------------------------------------------------------------------
    cdef ImageEntry *find(self, int64_t key) noexcept nogil:
        cdef uint64_t mask = <uint64_t>(self.capacity - 1)
        cdef uint64_t i = _hash(key) & mask
        cdef ImageEntry *entry
        while True:
            entry = self.table[i]
            if entry == NULL or entry.key == key:
                return entry
            i = (i + 1) & mask

    cdef int grow(self) except -1:
        cdef int old_capacity = self.capacity, i
        cdef ImageEntry **old = self.table
        cdef ImageEntry **table = <ImageEntry **>calloc(old_capacity * 2, sizeof(ImageEntry *))
        cdef uint64_t mask = <uint64_t>(old_capacity * 2 - 1), j
        if table == NULL:
            raise MemoryError()
        for i in range(old_capacity):
            if old[i] != NULL:
                j = _hash(old[i].key) & mask
                while table[j] != NULL:
                    j = (j + 1) & mask
                table[j] = old[i]
        self.table = table
        self.capacity = old_capacity * 2
        free(old)
        return 0

    def add(self, ImageReceiveState state not None):
        """Dispatch (session, stream) of ``state`` to it from now on; replaces another state of that pair."""
        cdef int64_t key = state.entry.key
        cdef uint64_t mask, i
        if key in self._states:
            self.remove(self._states[key])
        if (self.size + 1) * 2 > self.capacity:
            self.grow()
        mask = <uint64_t>(self.capacity - 1)
        i = _hash(key) & mask
        while self.table[i] != NULL:
            i = (i + 1) & mask
        self.table[i] = &state.entry
        self._states[key] = state
        self.size += 1

    def remove(self, ImageReceiveState state not None):
        """Stop dispatching to ``state`` (no-op when another state, or none, has its pair). Returns True if
        removed."""
        cdef int64_t key = state.entry.key
        cdef uint64_t mask = <uint64_t>(self.capacity - 1)
        cdef uint64_t i = _hash(key) & mask, j, home
        if self._states.get(key) is not state:
            return False
        while self.table[i] != &state.entry:
            i = (i + 1) & mask
        self.table[i] = NULL
        # backward-shift deletion: move later members of the probe run into the hole they may have skipped
        j = (i + 1) & mask
        while self.table[j] != NULL:
            home = _hash(self.table[j].key) & mask
            if ((j - home) & mask) >= ((j - i) & mask):
                self.table[i] = self.table[j]
                self.table[j] = NULL
                i = j
            j = (j + 1) & mask
        del self._states[key]
        self.size -= 1
        return True

    def __len__(self):
        return self.size

    def get(self, int32_t session_id, int32_t stream_id):
        """The state dispatched to for (session, stream), or None."""
        return self._states.get(_key(session_id, stream_id))

    # -- the data path --------------------------------------------------------------------------------------------
    cdef int dispatch_one(self, uint8_t *p, int32_t length, const uint8_t *address, int32_t address_length,
                          int64_t destination_id, int64_t now_ns) noexcept nogil:
        """One datagram: a DISPATCH_* outcome (DISPATCH_OK when it was inserted, counted or dropped here)."""
        cdef int frame_type = frame_validate(p, length)
        cdef ImageEntry *e
        cdef FastConnection *c = NULL
        cdef int32_t term_offset, term_id, frame_length, j
        cdef uint32_t terms_ahead
        cdef int64_t position, proposed, last_sm, floor, hwm
        cdef bint heartbeat
        if frame_type < 0:
            get_and_add_i64(self.invalid_packets, 1)
            return DISPATCH_OK
        if frame_type == HDR_TYPE_SETUP:
            return DISPATCH_SETUP
        if frame_type == HDR_TYPE_RTTM:
            return DISPATCH_RTTM
        if frame_type != HDR_TYPE_DATA and frame_type != HDR_TYPE_PAD:
            return DISPATCH_OK                  # valid, but nothing a receiver acts on
        e = self.find(_key(frames_get_i32(p, SESSION_ID_FIELD_OFFSET), frames_get_i32(p, STREAM_ID_FIELD_OFFSET)))
        if e == NULL or not e.accepting:
            return DISPATCH_DATA
        term_offset = frames_get_i32(p, TERM_OFFSET_FIELD_OFFSET)
        if data_packet_validate(p, length, term_offset, e.term_length) < 0:
            get_and_add_i64(self.invalid_packets, 1)
            return DISPATCH_OK
        frame_length = frames_frame_length(p)
        heartbeat = length == DATA_HEADER_LENGTH and frame_length == 0
        if heartbeat and p[FLAGS_FIELD_OFFSET] & EOS_FLAG:
            return DISPATCH_DATA                # end of stream: the image's Python side decides
        term_id = frames_get_i32(p, TERM_ID_FIELD_OFFSET)
        terms_ahead = <uint32_t>term_id - <uint32_t>e.initial_term_id
        if terms_ahead >= 0x80000000u:
            return DISPATCH_OK                  # older than the initial term (wrap-aware)
        position = (<int64_t>terms_ahead << e.position_bits_to_shift) + term_offset
        proposed = position + (0 if heartbeat else length)
        last_sm = e.last_sm_position
        if proposed > last_sm + (e.term_length >> 1):
            get_and_add_i64(self.flow_control_over_runs, 1)
            return DISPATCH_OK
        for j in range(e.connection_count):
            if e.connections[j].destination_id == destination_id and (
                    e.connections[j].address_length == 0 or (e.connections[j].address_length == address_length and
                    memcmp(e.connections[j].address, address, <size_t>address_length) == 0)):
                c = &e.connections[j]
                break
        if c == NULL:
            return DISPATCH_DATA                # a source or destination the image has not seen
        c.time_of_last_frame_ns = now_ns
        if heartbeat:
            floor = last_sm - e.term_length
            if position >= (floor if floor > 0 else 0):
                e.time_of_last_packet_ns = now_ns
                e.heartbeats += 1
                get_and_add_i64(self.heartbeats_received, 1)
                if proposed > load_acquire_i64(e.rcv_hwm):
                    store_release_i64(e.rcv_hwm, proposed)
            else:
                get_and_add_i64(self.flow_control_under_runs, 1)
            return DISPATCH_OK
        if position < last_sm:
            get_and_add_i64(self.flow_control_under_runs, 1)
            return DISPATCH_OK
        e.time_of_last_packet_ns = now_ns
        e.inserts += 1
        term_rebuilder_insert(e.terms[(position >> e.position_bits_to_shift) % 3] + term_offset, p, length)
        hwm = load_acquire_i64(e.rcv_hwm)
        if position > hwm:
            self.gaps += 1                      # a gap opens before it: the loss scan should see it soon
            e.gaps += 1
        if proposed > hwm:
            store_release_i64(e.rcv_hwm, proposed)
        self.inserted += length
        self.data_mask |= e.wake_bit
        return DISPATCH_OK

    cdef void _dispatch_slots(self, UdpTransport transport, int count, int64_t destination_id,
                              int64_t now_ns) noexcept nogil:
        cdef int i, kind
        cdef int32_t length, address_length
        cdef int64_t total = 0
        cdef uint8_t address[ADDRESS_KEY_LENGTH]
        for i in range(count):
            length = transport.rx_len[i]
            if length <= 0:
                continue                        # dropped by a loss generator
            total += length
            address_length = _sockaddr_key(&transport.rx_addr[i], address)
            kind = self.dispatch_one(transport.slot_data[i], length, address, address_length, destination_id,
                                     now_ns)
            if kind != DISPATCH_OK:
                self.events_slot[self.event_count] = i
                self.events_kind[self.event_count] = kind
                self.event_count += 1
        if total:
            get_and_add_i64(self.bytes_received, total)

    def poll(self, UdpTransport transport not None, int64_t destination_id, int64_t now_ns,
             LossGenerator loss=None):
        """Receive one batch on ``transport`` (a destination of this endpoint, ``destination_id``) and dispatch
        it; returns the datagrams received. ``inserted``, ``dropped``, ``gaps`` and the events describe this call."""
        transport._check()
        cdef int n
        with nogil:
            n = self.receive(transport, destination_id, now_ns, loss)
        if n < 0:
            n = self.receive_failed(transport, destination_id, now_ns, loss, n)
        return n

    cdef int receive(self, UdpTransport transport, int64_t destination_id, int64_t now_ns,
                     LossGenerator loss, int most=0) noexcept nogil:
        """``poll``'s batch with no GIL (the transport checked open by the caller), at most ``most`` datagrams (0: a
        whole batch): the datagrams received, or -errno for ``receive_failed``."""
        cdef int n
        self.event_count = 0
        self.inserted = 0
        self.dropped = 0
        self.gaps = 0
        n = transport.receive_slots(most)
        if n > 0:
            n = self._dispatched(transport, n, destination_id, now_ns, loss)
        return n

    cdef int receive_failed(self, UdpTransport transport, int64_t destination_id, int64_t now_ns, LossGenerator loss,
                            int n) except -1:
        """After ``receive`` returned -errno: a retry without recvmmsg (its batch dispatched), nothing, or
        ChannelEndpointError raised."""
        n = transport.received_or_raise(n)
        if n > 0:
            with nogil:
                n = self._dispatched(transport, n, destination_id, now_ns, loss)
        return n

    cdef int _dispatched(self, UdpTransport transport, int n, int64_t destination_id, int64_t now_ns,
                         LossGenerator loss) noexcept nogil:
        # the batch through the receive interceptors (if any) into the images, then their subscribers woken at once;
        # the datagrams dispatched (the chain may add held or duplicated datagrams after n)
        cdef int64_t dropped
        if loss is not None:
            dropped = loss.chain_dropped()
            n = loss.filter_batch(transport, n)
            self.dropped = loss.chain_dropped() - dropped
        self._dispatch_slots(transport, n, destination_id, now_ns)
        cdef int64_t fresh = self.data_mask & ~self.signalled_mask
        if fresh != 0 and self.wake_board is not None:
            self.signalled_mask |= fresh
            self.wake_board.notify(fresh)
        return n

    cdef int64_t take_unsignalled(self) noexcept nogil:
        """``take_data_mask`` for a caller with no GIL that needs only the bits not yet signalled (then cleared)."""
        cdef int64_t unsignalled = self.data_mask & ~self.signalled_mask
        self.data_mask = 0
        self.signalled_mask = 0
        return unsignalled

    def dispatch(self, buffer, Py_ssize_t length, bytes source_key, int64_t destination_id, int64_t now_ns):
        """One datagram from Python (a transport without compiled slots, such as a test double, or a loss
        generator written in Python): the same decisions as ``poll``; returns its DISPATCH_* kind. Adds to bytes
        received; ``inserted`` is for this datagram."""
        cdef const uint8_t[::1] view = buffer
        if length < 0 or length > view.shape[0] or length > 0x7FFFFFFF:
            raise InvalidArgumentError(f"length {length} must be in [0, {view.shape[0]}]")
        if PyBytes_GET_SIZE(source_key) > ADDRESS_KEY_LENGTH:
            raise InvalidArgumentError(f"address key of {PyBytes_GET_SIZE(source_key)} bytes")
        self.inserted = 0
        self.gaps = 0
        if length == 0:
            return DISPATCH_OK
        get_and_add_i64(self.bytes_received, length)
        if view.shape[0] == 0:
            return DISPATCH_OK
        return self.dispatch_one(<uint8_t *>&view[0], <int32_t>length, <const uint8_t *>PyBytes_AS_STRING(source_key),
                                 <int32_t>PyBytes_GET_SIZE(source_key), destination_id, now_ns)

    def take_data_mask(self):
        """The wake-up bits of the streams whose images got data since the last call (then cleared): the
        subscribers to wake (aeron.common.wakeup); ``unsignalled_mask`` then says which of them poll() has not
        woken itself (all of them without a wake board): only those are the caller's to signal, since signalling
        again a subscriber that was woken, ran and parked would wake it for nothing."""
        cdef int64_t mask = self.data_mask
        self.unsignalled_mask = mask & ~self.signalled_mask
        self.data_mask = 0
        self.signalled_mask = 0
        return mask

    def set_wake_board(self, WakeupBoard board):
        """Wake the subscribers of the streams a poll() inserted data for as soon as that batch is in (in compiled
        code, before any Python of the receiver runs), on ``board``; None: leave the signal to the caller."""
        self.wake_board = board

    def event_slot(self, int index):
        """The transport slot of event ``index`` of the last poll."""
        if index < 0 or index >= self.event_count:
            raise InvalidArgumentError(f"event {index} of {self.event_count}")
        return self.events_slot[index]

    def event_kind(self, int index):
        """DISPATCH_TO_IMAGE, DISPATCH_SETUP_FRAME or DISPATCH_RTTM_FRAME."""
        if index < 0 or index >= self.event_count:
            raise InvalidArgumentError(f"event {index} of {self.event_count}")
        return self.events_kind[index]
