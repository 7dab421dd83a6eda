# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Loss generators for tests and fault injection, with the C driver's interceptor semantics, plus reordering and
duplication at the same seam.

``LossGenerator.random(rate, seed, msg_type_mask)`` ("loss"), ``LossGenerator.fixed(term_id, term_offset, length)``
("fixed-loss") and ``LossGenerator.multi_gap(term_id, gap_radix, gap_length, total_gaps)`` ("multi-gap-loss"),
or ``LossGenerator.from_args(name, args)`` with the C driver's ``*_ARGS`` strings. C callers use the nogil
``should_drop``; ``filter_received(transport)`` applies it to the last ``UdpTransport.receive_batch()`` (a dropped
slot's length becomes 0, as the driver's loss wrapper does); a generator is also a Python callable
``(buffer, length) -> bool``, the driver's ``receive_loss_generator`` shape.

``LossGenerator.reorder(rate, seed, msg_type_mask, depth)`` ("reorder") and ``LossGenerator.duplicate(...)``
("duplicate") are ours (Aeron has no interceptor for either). A selected datagram (the same erand48
draw as "loss") is copied aside; reorder also empties its slot. The copy goes out once ``depth`` more datagrams have
arrived, in a free slot after the batch that brings the last of them (so after at least ``depth`` others; later
when batches are full): the image sees a gap then the late frame, or the same frame twice. They work on a whole
batch (``filter_batch``, ``deliver_received``), not one datagram at a time.

``LossGenerator.chain([...])`` (or ``from_args`` per name of the driver's comma-separated interceptor list) puts
generators one after another, as the C driver chains its incoming interceptors: each sees what the one before let
through, held and copied datagrams included.
"""
import os

from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from aeron._core.frame_descriptor cimport (HDR_TYPE_DATA, HEADER_LENGTH, TYPE_FIELD_OFFSET, TERM_OFFSET_FIELD_OFFSET,
                                           SESSION_ID_FIELD_OFFSET, STREAM_ID_FIELD_OFFSET, TERM_ID_FIELD_OFFSET)
from aeron._core.udp_transport cimport UdpTransport, sockaddr_storage

from aeron.common.errors import ConfigurationError, IllegalStateError, OutOfBoundsError

RANDOM = LOSS_RANDOM
FIXED = LOSS_FIXED
MULTI_GAP = LOSS_MULTI_GAP
REORDER = LOSS_REORDER
DUPLICATE = LOSS_DUPLICATE
TRACKING_CAPACITY = LOSS_TRACKING_CAPACITY
HOLD_CAPACITY = LOSS_HOLD_CAPACITY
DEFAULT_REORDER_DEPTH = 3

DEFAULT_MSG_TYPE_MASK = 0x3          # DATA and PAD (the C interceptor's own default mask is 0: nothing drops)

cdef uint64_t ERAND48_MULTIPLIER = 0x5DEECE66D
cdef uint64_t ERAND48_MASK = (<uint64_t>1 << 48) - 1


cdef inline int32_t _i32(const uint8_t *p, int offset) noexcept nogil:
    cdef int32_t value
    memcpy(&value, p + offset, 4)
    return value


cdef inline uint16_t _type(const uint8_t *p) noexcept nogil:
    cdef uint16_t value
    memcpy(&value, p + TYPE_FIELD_OFFSET, 2)
    return value


cdef inline int _trailing_zeros(uint32_t value) noexcept nogil:
    cdef int n = 0
    while value != 0 and (value & 1) == 0:
        value >>= 1
        n += 1
    return n


cdef LossGenerator _new_generator(int kind):
    cdef LossGenerator g = LossGenerator.__new__(LossGenerator)
    g.kind = kind
    return g


cdef LossGenerator _new_random(int kind, double rate, seed, uint32_t msg_type_mask):
    if not 0.0 <= rate <= 1.0:
        raise ConfigurationError(f"loss rate must be in [0, 1], got {rate}")
    cdef uint64_t s = int.from_bytes(os.urandom(8), "little") if seed is None else <uint64_t>(seed & 0xFFFFFFFFFFFFFFFF)
    cdef LossGenerator g = _new_generator(kind)
    g.rate = rate
    g.msg_type_mask = msg_type_mask
    # xsubi[2] = seed bits 0-15, xsubi[1] = bits 16-31, xsubi[0] = bits 32-47; erand48's state is
    # xsubi[2]:xsubi[1]:xsubi[0] from the most significant end
    g.rand_state = ((s & 0xFFFF) << 32) | (((s >> 16) & 0xFFFF) << 16) | ((s >> 32) & 0xFFFF)
    return g


cdef LossGenerator _new_holding(int kind, double rate, seed, uint32_t msg_type_mask, int64_t depth):
    if depth < 0 or depth > 1 << 20:
        raise ConfigurationError(f"depth must be in [0, 2^20], got {depth}")
    cdef LossGenerator g = _new_random(kind, rate, seed, msg_type_mask)
    g.depth = depth
    g.held_data = <uint8_t *>malloc(<size_t>LOSS_HOLD_CAPACITY * LOSS_HOLD_SLOT_LENGTH)
    if g.held_data == NULL:
        raise MemoryError()
    return g


cdef class LossGenerator:
    """One loss generator; build it with ``random``, ``fixed``, ``multi_gap``, ``reorder``, ``duplicate`` or
    ``from_args``."""

    def __cinit__(self):
        self.held_data = NULL

    def __dealloc__(self):
        free(self.held_data)
        self.held_data = NULL

    def __init__(self):
        raise TypeError("use LossGenerator.random / fixed / multi_gap / reorder / duplicate / from_args")

    @staticmethod
    def random(double rate, seed=None, uint32_t msg_type_mask=DEFAULT_MSG_TYPE_MASK):
        """Drop each datagram whose type bit (1 << type) is in ``msg_type_mask`` when the next erand48 draw is
        <= ``rate``. The draws are the C interceptor's own for the same 64-bit ``seed`` (random when None)."""
        return _new_random(LOSS_RANDOM, rate, seed, msg_type_mask)

    @staticmethod
    def reorder(double rate, seed=None, uint32_t msg_type_mask=DEFAULT_MSG_TYPE_MASK,
                int64_t depth=DEFAULT_REORDER_DEPTH):
        """Hold back each datagram that ``random``'s draw selects and deliver it once ``depth`` (>= 1 to reorder)
        more datagrams have arrived. At most HOLD_CAPACITY are held at once; a selected datagram beyond that passes
        through."""
        return _new_holding(LOSS_REORDER, rate, seed, msg_type_mask, depth)

    @staticmethod
    def duplicate(double rate, seed=None, uint32_t msg_type_mask=DEFAULT_MSG_TYPE_MASK, int64_t depth=0):
        """Deliver each datagram that ``random``'s draw selects, and a copy of it once ``depth`` more datagrams
        have arrived (0: right after it, in the same batch when it has a free slot)."""
        return _new_holding(LOSS_DUPLICATE, rate, seed, msg_type_mask, depth)

    @staticmethod
    def fixed(int32_t term_id, int32_t term_offset, int64_t length):
        """Per (stream, session): from the first DATA datagram (heartbeats count) seen in ``term_id``, drop
        consecutive datagrams until the tracked offset reaches ``term_offset + length``."""
        if length < 0:
            raise ConfigurationError(f"fixed-loss length must be >= 0, got {length}")
        cdef LossGenerator g = _new_generator(LOSS_FIXED)
        g.term_id = term_id
        g.term_offset = term_offset
        g.length = length
        return g

    @staticmethod
    def multi_gap(int32_t term_id, int32_t gap_radix, int64_t gap_length, int32_t total_gaps):
        """In ``term_id``, drop the data at every multiple of ``gap_radix`` (rounded up to a power of two, as C
        does) for ``gap_length`` bytes, up to ``total_gaps`` gaps, each once (its retransmit gets through)."""
        if gap_radix <= 0 or gap_radix > (1 << 30) or gap_length < 0 or total_gaps < 0:
            raise ConfigurationError(f"multi-gap-loss needs 0 < gap-radix <= 2^30, gap-length >= 0, total-gaps >= 0;"
                                     f" got {gap_radix}, {gap_length}, {total_gaps}")
        cdef int64_t radix = 1
        while radix < gap_radix:
            radix <<= 1
        cdef LossGenerator g = _new_generator(LOSS_MULTI_GAP)
        g.term_id = term_id
        g.gap_radix = radix
        g.gap_radix_bits = _trailing_zeros(<uint32_t>radix)
        g.gap_length = gap_length
        g.last_gap_limit = total_gaps * radix + gap_length
        return g

    @staticmethod
    def chain(generators):
        """The first of ``generators`` with the others after it, in order (a generator is in one chain only)."""
        cdef list items = list(generators)
        cdef LossGenerator g
        if not items:
            raise ConfigurationError("an empty chain of loss generators")
        for i, g in enumerate(items):
            if g.next_generator is not None or any(g is other for other in items[i + 1:]):
                raise ConfigurationError("a loss generator can be in one chain only, once")
        for i in range(len(items) - 1):
            (<LossGenerator>items[i]).next_generator = items[i + 1]
        return items[0]

    @staticmethod
    def from_args(str name, str args=""):
        """From the C driver's interceptor name ("loss", "fixed-loss", "multi-gap-loss", or ours: "reorder",
        "duplicate") and its ``*_ARGS`` string, e.g. ``"rate=0.1|seed=7|recv-msg-mask=0x3"``,
        ``"term-id=1000|term-offset=64|length=1"`` or ``"rate=0.05|seed=7|depth=4"``."""
        values = {}
        for part in filter(None, args.split("|")):
            key, sep, value = part.partition("=")
            if not sep:
                raise ConfigurationError(f"{name} args: expected key=value, got {part!r}")
            values[key.strip()] = value.strip()
        try:
            if name in ("loss", "reorder", "duplicate"):
                mask = int(values["recv-msg-mask"], 16) if "recv-msg-mask" in values else DEFAULT_MSG_TYPE_MASK
                rate = float(values.get("rate", 0.0))
                seed = int(values["seed"]) if "seed" in values else None
                if name == "loss":
                    return LossGenerator.random(rate, seed, mask)
                if name == "reorder":
                    return LossGenerator.reorder(rate, seed, mask, int(values.get("depth", DEFAULT_REORDER_DEPTH)))
                return LossGenerator.duplicate(rate, seed, mask, int(values.get("depth", 0)))
            if name == "fixed-loss":
                return LossGenerator.fixed(int(values["term-id"]), int(values["term-offset"]),
                                           int(values["length"]))
            if name == "multi-gap-loss":
                return LossGenerator.multi_gap(int(values["term-id"]), int(values["gap-radix"]),
                                               int(values["gap-length"]), int(values["total-gaps"]))
        except KeyError as missing:
            raise ConfigurationError(f"{name} args {args!r}: missing {missing}") from None
        except (ValueError, OverflowError) as error:
            raise ConfigurationError(f"{name} args {args!r}: {error}") from None
        raise ConfigurationError(f"unknown loss generator {name!r}")

    # -- the decision -------------------------------------------------------------------------------------------
    cdef double _next_double(self) noexcept nogil:
        # erand48: 48-bit LCG, x' = a*x + c mod 2^48, result x' / 2^48 (exactly what glibc builds)
        self.rand_state = (ERAND48_MULTIPLIER * self.rand_state + 0xB) & ERAND48_MASK
        return <double>self.rand_state / 281474976710656.0

    cdef int _track(self, int64_t key, int64_t initial) noexcept nogil:
        # open addressing over a fixed table; -1 when full (C drops nothing when its map put fails)
        cdef int i = <int>((<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> 58) & (LOSS_TRACKING_CAPACITY - 1)
        cdef int probes = 0
        while probes < LOSS_TRACKING_CAPACITY:
            if not self.track_used[i]:
                self.track_used[i] = True
                self.track_key[i] = key
                self.track_offset[i] = initial
                return i
            if self.track_key[i] == key:
                return i
            i = (i + 1) & (LOSS_TRACKING_CAPACITY - 1)
            probes += 1
        return -1

    cdef bint should_drop(self, const uint8_t *datagram, Py_ssize_t length) noexcept nogil:
        """True when this datagram is to be discarded (counted in ``dropped``)."""
        cdef bint drop = False
        cdef uint16_t frame_type
        cdef int32_t term_offset
        cdef int64_t key, frame_limit, tracked, previous_gap, next_gap
        cdef int slot
        self.seen += 1
        if length < 8 or self.held_data != NULL:       # reorder / duplicate never drop
            return False
        frame_type = _type(datagram)
        if self.kind == LOSS_RANDOM:
            # the draw happens only for a matching type, as in C, so the sequence of decisions matches C's
            drop = self.rate > 0.0 and frame_type < 32 and (self.msg_type_mask >> frame_type) & 1 and \
                self._next_double() <= self.rate
        elif frame_type == HDR_TYPE_DATA and length >= HEADER_LENGTH and \
                _i32(datagram, TERM_ID_FIELD_OFFSET) == self.term_id:
            # deviation: C reads the data header of any DATA-typed datagram; shorter ones are never dropped here
            term_offset = _i32(datagram, TERM_OFFSET_FIELD_OFFSET)
            key = (<int64_t>_i32(datagram, STREAM_ID_FIELD_OFFSET) << 32) | \
                <uint32_t>_i32(datagram, SESSION_ID_FIELD_OFFSET)
            frame_limit = <int64_t>term_offset + length
            if self.kind == LOSS_FIXED:
                slot = self._track(key, term_offset)
                if slot >= 0:
                    tracked = self.track_offset[slot]
                    if tracked < self.term_offset + self.length and term_offset <= tracked < frame_limit:
                        self.track_offset[slot] = frame_limit
                        drop = True
            elif term_offset <= self.last_gap_limit:
                slot = self._track(key, term_offset)
                if slot >= 0 and self.track_offset[slot] <= term_offset:
                    previous_gap = term_offset & ~(self.gap_radix - 1)
                    next_gap = ((<int64_t>term_offset >> self.gap_radix_bits) + 1) << self.gap_radix_bits
                    if (term_offset != 0 and _trailing_zeros(<uint32_t>term_offset) >= self.gap_radix_bits) or \
                            (previous_gap > 0 and term_offset < previous_gap + self.gap_length) or \
                            (frame_limit > next_gap and term_offset < next_gap + self.gap_length):
                        self.track_offset[slot] = frame_limit
                        drop = True
        if drop:
            self.dropped += 1
        return drop

    cdef int filter_slots(self, uint8_t **slot_data, int *slot_length, int count) noexcept nogil:
        """Set the length of every dropped slot to 0; returns how many were dropped."""
        cdef int i, n = 0
        for i in range(count):
            if slot_length[i] > 0 and self.should_drop(slot_data[i], slot_length[i]):
                slot_length[i] = 0
                n += 1
        return n

    cdef bint _selected(self, const uint8_t *datagram, Py_ssize_t length) noexcept nogil:
        # random's draw, for a matching type only (so the decisions follow the same sequence as "loss")
        cdef uint16_t frame_type
        if length < 8:
            return False
        frame_type = _type(datagram)
        return self.rate > 0.0 and frame_type < 32 and (self.msg_type_mask >> frame_type) & 1 and \
            self._next_double() <= self.rate

    cdef int filter_batch(self, UdpTransport transport, int count) noexcept nogil:
        """The generator on the ``count`` datagrams of the transport's last receive: dropped slots get length 0;
        reorder and duplicate copy selected datagrams aside and put the due ones in the free slots after
        ``count``. Returns the slots now filled (sets the transport's ``received``)."""
        cdef int i, slot
        cdef int32_t length
        cdef uint8_t *held
        if self.held_data == NULL:
            self.filter_slots(transport.slot_data, transport.rx_len, count)
            if self.next_generator is not None:
                return self.next_generator.filter_batch(transport, count)
            transport.received = count
            return count
        for i in range(count):
            length = transport.rx_len[i]
            if length <= 0:
                continue
            self.seen += 1
            if self._selected(transport.slot_data[i], length) and self.held_count < LOSS_HOLD_CAPACITY and \
                    length <= LOSS_HOLD_SLOT_LENGTH:
                slot = (self.held_head + self.held_count) % LOSS_HOLD_CAPACITY
                memcpy(self.held_data + <size_t>slot * LOSS_HOLD_SLOT_LENGTH, transport.slot_data[i], length)
                self.held_length[slot] = length
                self.held_address[slot] = transport.rx_addr[i]
                self.held_due[slot] = self.seen + self.depth
                self.held_count += 1
                if self.kind == LOSS_REORDER:
                    transport.rx_len[i] = 0
                    self.delayed += 1
                else:
                    self.duplicated += 1
        # every held datagram waits the same depth, so the oldest is always the first due
        while self.held_count > 0 and count < transport.batch and self.held_due[self.held_head] <= self.seen:
            slot = self.held_head
            held = self.held_data + <size_t>slot * LOSS_HOLD_SLOT_LENGTH
            length = self.held_length[slot]
            if length > transport.slot_length:
                length = 0              # held from another transport's larger slots (one generator on two): dropped
            memcpy(transport.slot_data[count], held, length)
            transport.rx_len[count] = length
            transport.rx_addr[count] = self.held_address[slot]
            count += 1
            self.held_head = (self.held_head + 1) % LOSS_HOLD_CAPACITY
            self.held_count -= 1
        if self.next_generator is not None:
            return self.next_generator.filter_batch(transport, count)
        transport.received = count
        return count

    cdef int64_t chain_dropped(self) noexcept nogil:
        """Datagrams dropped by this generator and the ones after it."""
        if self.next_generator is None:
            return self.dropped
        return self.dropped + self.next_generator.chain_dropped()

    # -- Python faces -------------------------------------------------------------------------------------------
    def deliver_received(self, UdpTransport transport not None):
        """``filter_batch`` on the transport's last ``receive_batch()``: the number of slots to read now (dropped
        ones read back with ``length(slot) == 0``; held and duplicated ones come after the received ones)."""
        if transport.rx_len == NULL:
            raise IllegalStateError("transport is closed")
        cdef int n
        with nogil:
            n = self.filter_batch(transport, transport.received)
        return n

    def filter_received(self, UdpTransport transport not None):
        """Apply to the datagrams of the transport's last ``receive_batch()``: dropped slots read back with
        ``length(slot) == 0``. Returns the number dropped. Reorder and duplicate add slots: ``deliver_received``."""
        if transport.rx_len == NULL:
            raise IllegalStateError("transport is closed")
        if self.held_data != NULL or self.next_generator is not None:
            raise IllegalStateError("a reorder or duplicate generator, or a chain, works on whole batches: use "
                                    "deliver_received")
        cdef int n
        with nogil:
            n = self.filter_slots(transport.slot_data, transport.rx_len, transport.received)
        return n

    def __call__(self, buffer, Py_ssize_t length=-1):
        """``should_drop`` for Python callers: the first ``length`` bytes of ``buffer`` (all when -1). Reorder and
        duplicate work on batches only (``deliver_received``)."""
        if self.held_data != NULL or self.next_generator is not None:
            raise IllegalStateError("a reorder or duplicate generator, or a chain, works on a transport batch, not "
                                    "one datagram")
        cdef Py_buffer view
        PyObject_GetBuffer(buffer, &view, PyBUF_ANY_CONTIGUOUS)
        try:
            if length < 0:
                length = view.len
            if length > view.len:
                raise OutOfBoundsError(f"length {length} exceeds a buffer of {view.len} bytes")
            return self.should_drop(<const uint8_t *>view.buf, length)
        finally:
            PyBuffer_Release(&view)

    def __repr__(self):
        names = {LOSS_RANDOM: "random", LOSS_FIXED: "fixed", LOSS_MULTI_GAP: "multi_gap", LOSS_REORDER: "reorder",
                 LOSS_DUPLICATE: "duplicate"}
        return (f"<LossGenerator {names.get(self.kind)} seen={self.seen} dropped={self.dropped} "
                f"delayed={self.delayed} duplicated={self.duplicated} held={self.held_count}>")
