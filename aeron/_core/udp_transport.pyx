# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""UdpTransport: batched UDP I/O for the driver's channel endpoints (aeron_udp_channel_transport.c and its
recvmmsg/sendmmsg batching).

The socket is created, bound and configured in Python (``socket`` module, cold path); this class owns its file
descriptor for the data path. ``receive_batch()`` fills up to ``batch`` preallocated slots with one ``recvmmsg``
(the GIL released around it); ``send_term_batch()`` scans a term for whole frames and sends up to ``max_datagrams``
MTU-sized datagrams straight from the term memory with one ``sendmmsg``. ``send()`` sends one buffer. EAGAIN,
EWOULDBLOCK, EINTR and ECONNREFUSED are "nothing this time" (0); other errors raise ChannelEndpointError.
With ``use_mmsg=False`` (or where the kernel lacks the calls) the same methods loop over recvfrom/sendto.
"""
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from libc.errno cimport ENOSYS, errno
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset

from aeron._core.atomic_buffer cimport AtomicBuffer
from aeron._core.poll cimport POLLERR, POLLIN, poll, pollfd
from aeron._core.term_scanner cimport term_scanner_scan_for_availability
from aeron._core.udp_transport cimport *

import socket as _socket

from aeron.common.errors import ChannelEndpointError, IllegalStateError, InvalidArgumentError

MAX_DATAGRAM_LENGTH = 65504
TIMESTAMP_NONE = NO_TIMESTAMP
TIMESTAMP_RESERVED_VALUE = RESERVED_VALUE_OFFSET

cdef enum:
    DATA_HEADER_LENGTH = 32
    FLAGS_FIELD_OFFSET = 5
    TYPE_FIELD_OFFSET = 6
    RESERVED_VALUE_FIELD_OFFSET = 24
    HDR_TYPE_DATA = 1
    BEGIN_FLAG = 0x80


cdef int to_sockaddr(object address, int family, sockaddr_storage *out, socklen_t *length) except -1:
    """Python (host, port[, flow, scope]) → C sockaddr (numeric hosts only: endpoints are resolved earlier)."""
    cdef sockaddr_in *v4
    cdef sockaddr_in6 *v6
    memset(out, 0, sizeof(sockaddr_storage))
    # checked here: this module indexes without bounds checks
    if not isinstance(address, tuple) or len(address) < 2:
        raise InvalidArgumentError(f"an address is (host, port[, flow, scope]), not {address!r}")
    host, port = address[0], address[1]
    if family == AF_INET:
        v4 = <sockaddr_in *>out
        v4.sin_family = AF_INET
        v4.sin_port = htons(<unsigned short>port)
        packed = _socket.inet_pton(_socket.AF_INET, host)
        memcpy(&v4.sin_addr, <const char *>packed, 4)
        length[0] = sizeof(sockaddr_in)
    else:
        v6 = <sockaddr_in6 *>out
        v6.sin6_family = AF_INET6
        v6.sin6_port = htons(<unsigned short>port)
        packed = _socket.inet_pton(_socket.AF_INET6, host.split("%")[0])
        memcpy(&v6.sin6_addr, <const char *>packed, 16)
        if len(address) > 3:
            v6.sin6_scope_id = <unsigned int>address[3]
        length[0] = sizeof(sockaddr_in6)
    return 0


cdef int32_t _timestamp_offset(int32_t offset) except? -2:
    if offset == RESERVED_VALUE_OFFSET or offset >= 0:
        return offset
    if offset == NO_TIMESTAMP:
        return NO_TIMESTAMP
    raise InvalidArgumentError(f"timestamp offset {offset} must be -1 (none), -8 (reserved value) or >= 0")


cdef inline void _set_timestamp(uint8_t *frame, int32_t frame_length, int32_t offset, int64_t ns) noexcept nogil:
    """Port of aeron_timestamps_set_timestamp: the reserved value, or 8 bytes at ``offset`` into the payload when
    they fit in the frame."""
    if offset == RESERVED_VALUE_OFFSET:
        memcpy(frame + RESERVED_VALUE_FIELD_OFFSET, &ns, 8)
    elif offset >= 0 and offset <= frame_length - DATA_HEADER_LENGTH - 8:
        memcpy(frame + DATA_HEADER_LENGTH + offset, &ns, 8)


cdef inline void _stamp_first_frame(uint8_t *datagram, int32_t length, int32_t offset, int64_t ns) noexcept nogil:
    """The first frame of an outgoing datagram, when it is a DATA frame with a body (not a heartbeat)."""
    cdef int32_t frame_length
    if ns < 0 or length < DATA_HEADER_LENGTH:
        return
    memcpy(&frame_length, datagram, 4)
    if frame_length > 0 and frame_length <= length and _frame_type(datagram) == HDR_TYPE_DATA:
        _set_timestamp(datagram, frame_length, offset, ns)


cdef inline void _stamp_datagram(uint8_t *datagram, int32_t length, int32_t offset, int64_t ns) noexcept nogil:
    """Every whole DATA frame beginning a message in a received datagram of DATA/PAD frames (the walk of
    aeron_publication_image_validate_packet); stops at the first frame that is not one."""
    cdef int32_t position = 0, frame_length
    cdef uint16_t frame_type
    while position <= length - DATA_HEADER_LENGTH:
        memcpy(&frame_length, datagram + position, 4)
        if frame_length <= 0:
            break
        frame_type = _frame_type(datagram + position)
        if frame_type & 0xFFFE:
            break                                   # neither DATA nor PAD
        if frame_type == HDR_TYPE_DATA and datagram[position + FLAGS_FIELD_OFFSET] & BEGIN_FLAG and \
                position + frame_length <= length:
            _set_timestamp(datagram + position, frame_length, offset, ns)
        position += (frame_length + 31) & ~31


cdef inline uint16_t _frame_type(const uint8_t *frame) noexcept nogil:
    cdef uint16_t frame_type
    memcpy(&frame_type, frame + TYPE_FIELD_OFFSET, 2)
    return frame_type


cdef object _from_sockaddr(sockaddr_storage *address):
    cdef sockaddr_in *v4
    cdef sockaddr_in6 *v6
    if address.ss_family == AF_INET:
        v4 = <sockaddr_in *>address
        return (_socket.inet_ntop(_socket.AF_INET, (<char *>&v4.sin_addr)[:4]), ntohs(v4.sin_port))
    if address.ss_family == AF_INET6:
        v6 = <sockaddr_in6 *>address
        return (_socket.inet_ntop(_socket.AF_INET6, (<char *>&v6.sin6_addr)[:16]), ntohs(v6.sin6_port),
                v6.sin6_flowinfo, v6.sin6_scope_id)
    return None


cdef class UdpTransport:
    """``UdpTransport(sock, batch=16, slot_length=65504, use_mmsg=True)`` takes over a bound, non-blocking UDP
    socket (the caller keeps it for options and closing; ``close()`` here closes it).

    Receive slots are preallocated bytearrays (``slots``), so a slot can be handed to Python parsers and to the
    term rebuilder without a copy or an allocation per datagram.
    """

    def __cinit__(self):
        self.slot_data = NULL
        self.rx = NULL
        self.rx_iov = NULL
        self.rx_addr = NULL
        self.rx_len = NULL
        self.tx = NULL
        self.tx_iov = NULL
        self.slot_views = NULL
        self.pinned = 0
        self.closed = True
        self.rx_control = NULL
        self.media_receive_timestamp_offset = NO_TIMESTAMP
        self.channel_receive_timestamp_offset = NO_TIMESTAMP
        self.channel_send_timestamp_offset = NO_TIMESTAMP

    def __init__(self, sock, int batch=16, int slot_length=MAX_DATAGRAM_LENGTH, bint use_mmsg=True, name=""):
        if batch < 1 or batch > MAX_BATCH:
            raise InvalidArgumentError(f"batch must be in 1..{MAX_BATCH}, got {batch}")
        if slot_length < 64 or slot_length > MAX_DATAGRAM_LENGTH:
            raise InvalidArgumentError(f"slot_length must be in 64..{MAX_DATAGRAM_LENGTH}, got {slot_length}")
        if sock.type != _socket.SOCK_DGRAM:
            raise InvalidArgumentError("a UDP (SOCK_DGRAM) socket is required")
        sock.setblocking(False)
        self.socket = sock
        self.fd = sock.fileno()
        self.family = sock.family
        self.batch = batch
        self.slot_length = slot_length
        self.use_mmsg = use_mmsg
        self.name = name
        self.bound_address = sock.getsockname()
        self.slots = [bytearray(slot_length) for _ in range(batch)]
        self.receive_buffer = self.slots[0]
        self.slot_data = <uint8_t **>calloc(batch, sizeof(uint8_t *))
        self.slot_views = <Py_buffer *>calloc(batch, sizeof(Py_buffer))
        self.rx = <mmsghdr *>calloc(batch, sizeof(mmsghdr))
        self.rx_iov = <iovec *>calloc(batch, sizeof(iovec))
        self.rx_addr = <sockaddr_storage *>calloc(batch, sizeof(sockaddr_storage))
        self.rx_len = <int *>calloc(batch, sizeof(int))
        self.tx = <mmsghdr *>calloc(MAX_BATCH, sizeof(mmsghdr))
        self.tx_iov = <iovec *>calloc(MAX_BATCH, sizeof(iovec))
        if not (self.slot_data and self.slot_views and self.rx and self.rx_iov and self.rx_addr and self.rx_len
                and self.tx and self.tx_iov):
            raise MemoryError()
        cdef int i
        for i in range(batch):
            # pin each slot: an exported bytearray cannot be resized, so its pointer stays valid
            PyObject_GetBuffer(self.slots[i], &self.slot_views[i], PyBUF_ANY_CONTIGUOUS)
            self.pinned = i + 1
            self.slot_data[i] = <uint8_t *>self.slot_views[i].buf
            self.rx_iov[i].iov_base = self.slot_data[i]
            self.rx_iov[i].iov_len = <size_t>slot_length
        self.received = 0
        self.destination_key = None
        self.closed = False

    def __dealloc__(self):
        self._release()

    cdef void _release(self) noexcept:
        cdef int i
        if self.slot_views != NULL:
            for i in range(self.pinned):
                PyBuffer_Release(&self.slot_views[i])
            self.pinned = 0
            free(self.slot_views)
            self.slot_views = NULL
        free(self.slot_data)
        free(self.rx)
        free(self.rx_iov)
        free(self.rx_addr)
        free(self.rx_len)
        free(self.tx)
        free(self.tx_iov)
        free(self.rx_control)
        self.rx_control = NULL
        self.slot_data = NULL
        self.rx = NULL
        self.rx_iov = NULL
        self.rx_addr = NULL
        self.rx_len = NULL
        self.tx = NULL
        self.tx_iov = NULL

    cdef int _check(self) except -1:
        if self.closed:
            raise IllegalStateError(f"transport {self.name} is closed")
        return 0

    def fileno(self):
        return self.fd

    # -- receiving ----------------------------------------------------------------------------------------------
    def receive_batch(self):
        """Receive up to ``batch`` datagrams into the slots; returns how many (0 when none are waiting)."""
        self._check()
        cdef int n
        with nogil:
            n = self.receive_slots()
        return self.received_or_raise(n)

    cdef int receive_slots(self, int most=0) noexcept nogil:
        """One recvmmsg (or recvfrom loop) into the slots, receive timestamps written; the count, or -errno.
        Sets ``received`` (0 on error). The caller holds no GIL and checked the transport is open. ``most`` (0: the
        batch) bounds the datagrams taken: a caller that knows how many it waits for spares the kernel the attempt
        at one more that finds the socket empty."""
        cdef int i, n, err = 0
        cdef int vlen = most if 0 < most < self.batch else self.batch
        cdef socklen_t alen
        cdef ssize_t got
        if self.use_mmsg:
            for i in range(vlen):
                self.rx[i].msg_hdr.msg_name = &self.rx_addr[i]
                self.rx[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage)
                self.rx[i].msg_hdr.msg_iov = &self.rx_iov[i]
                self.rx[i].msg_hdr.msg_iovlen = 1
                if self.rx_control != NULL:
                    self.rx[i].msg_hdr.msg_control = self.rx_control + i * AERON_PY_TIMESTAMP_CONTROL_LENGTH
                    self.rx[i].msg_hdr.msg_controllen = <size_t>AERON_PY_TIMESTAMP_CONTROL_LENGTH
                else:
                    self.rx[i].msg_hdr.msg_control = NULL
                    self.rx[i].msg_hdr.msg_controllen = 0
                self.rx[i].msg_hdr.msg_flags = 0
            n = recvmmsg(self.fd, self.rx, <unsigned int>vlen, MSG_DONTWAIT, NULL)
            if n < 0:
                err = errno
            else:
                for i in range(n):
                    self.rx_len[i] = <int>self.rx[i].msg_len
                self._stamp_received(n, True)
        else:
            n = 0
            while n < vlen:
                alen = sizeof(sockaddr_storage)
                got = recvfrom(self.fd, self.slot_data[n], <size_t>self.slot_length, MSG_DONTWAIT,
                               <sockaddr *>&self.rx_addr[n], &alen)
                if got < 0:
                    if n == 0:
                        err = errno
                        n = -1
                    break
                self.rx_len[n] = <int>got
                n += 1
            if n > 0:
                self._stamp_received(n, False)
        if n < 0:
            self.received = 0
            return -err if err > 0 else -1
        self.received = n
        return n

    cdef int received_or_raise(self, int n) except -1:
        """receive_slots' outcome for Python: the count; 0 for "nothing this time"; a retry without recvmmsg where
        the kernel lacks it; ChannelEndpointError for a real failure."""
        if n >= 0:
            return n
        if -n == ENOSYS and self.use_mmsg:
            self.use_mmsg = False           # no recvmmsg here: single-message fallback from now on
            with nogil:
                n = self.receive_slots()
            return self.received_or_raise(n)
        if nothing_sent(-n):
            return 0
        raise ChannelEndpointError(f"{self.name}: recvmmsg failed: errno {-n}")

    cdef void _stamp_received(self, int count, bint has_control) noexcept nogil:
        """Write the receive timestamps into the DATA frames of the datagrams just received (as
        aeron_publication_image_validate_packet does before inserting them): the kernel's time of each datagram at
        the media offset, the current realtime at the channel offset."""
        cdef int i
        cdef int64_t channel_ns = -1, media_ns
        if self.channel_receive_timestamp_offset != NO_TIMESTAMP:
            channel_ns = aeron_py_realtime_ns()
        for i in range(count):
            if self.media_receive_timestamp_offset != NO_TIMESTAMP and has_control:
                media_ns = aeron_py_message_timestamp_ns(&self.rx[i].msg_hdr)
                if media_ns >= 0:
                    _stamp_datagram(self.slot_data[i], self.rx_len[i], self.media_receive_timestamp_offset, media_ns)
            if channel_ns >= 0:
                _stamp_datagram(self.slot_data[i], self.rx_len[i], self.channel_receive_timestamp_offset, channel_ns)

    def set_timestamp_offsets(self, int32_t media_receive=NO_TIMESTAMP, int32_t channel_receive=NO_TIMESTAMP,
                              int32_t channel_send=NO_TIMESTAMP):
        """Where received and sent DATA frames get their timestamps: ``RESERVED_VALUE_OFFSET`` (-8) for the
        frame's reserved value, an offset >= 0 into the payload (skipped for a payload too short), NO_TIMESTAMP
        (-1) for none. Media receive timestamps need SO_TIMESTAMPNS and recvmmsg: returns False (and leaves them
        off) where the socket refuses it, as the C driver carries on with a warning."""
        self._check()
        self.channel_receive_timestamp_offset = _timestamp_offset(channel_receive)
        self.channel_send_timestamp_offset = _timestamp_offset(channel_send)
        if _timestamp_offset(media_receive) == NO_TIMESTAMP:
            return True
        if aeron_py_enable_receive_timestamps(self.fd) != 0:
            return False
        if self.rx_control == NULL:
            self.rx_control = <uint8_t *>calloc(<size_t>self.batch, <size_t>AERON_PY_TIMESTAMP_CONTROL_LENGTH)
            if self.rx_control == NULL:
                raise MemoryError()
        self.media_receive_timestamp_offset = media_receive
        return True

    def length(self, int slot):
        """Length of the datagram in ``slot`` after the last receive_batch."""
        if slot < 0 or slot >= self.received:
            raise InvalidArgumentError(f"slot {slot} not filled (received {self.received})")
        return self.rx_len[slot]

    def source(self, int slot):
        """Source address (host, port[, flowinfo, scope]) of the datagram in ``slot``."""
        if slot < 0 or slot >= self.received:
            raise InvalidArgumentError(f"slot {slot} not filled (received {self.received})")
        return _from_sockaddr(&self.rx_addr[slot])

    def receive(self):
        """One datagram into ``receive_buffer``: (length, source), or (0, None) when none is waiting."""
        self._check()
        cdef socklen_t alen = sizeof(sockaddr_storage)
        cdef ssize_t got
        cdef int err = 0
        with nogil:
            got = recvfrom(self.fd, self.slot_data[0], <size_t>self.slot_length, MSG_DONTWAIT,
                           <sockaddr *>&self.rx_addr[0], &alen)
            if got < 0:
                err = errno
        if got < 0:
            if nothing_sent(err):
                return 0, None
            raise ChannelEndpointError(f"{self.name}: recvfrom failed: errno {err}")
        self.received = 1
        self.rx_len[0] = <int>got
        return <int>got, _from_sockaddr(&self.rx_addr[0])

    # -- sending ------------------------------------------------------------------------------------------------
    cdef int _destination(self, object address) except -1:
        if address is not self.destination_key and address != self.destination_key:
            to_sockaddr(address, self.family, &self.destination, &self.destination_length)
            self.destination_key = address
        return 0

    def send(self, data, address):
        """Send one datagram; returns the bytes sent, 0 when the socket would block."""
        self._check()
        self._destination(address)
        cdef Py_buffer view
        cdef ssize_t sent
        cdef int err = 0
        PyObject_GetBuffer(data, &view, PyBUF_ANY_CONTIGUOUS)
        try:
            if self.channel_send_timestamp_offset != NO_TIMESTAMP and not view.readonly:
                # a retransmission from a term view: stamped again, as every send of the C driver
                _stamp_first_frame(<uint8_t *>view.buf, <int32_t>view.len, self.channel_send_timestamp_offset,
                                   aeron_py_realtime_ns())
            with nogil:
                sent = sendto(self.fd, view.buf, <size_t>view.len, 0, <sockaddr *>&self.destination,
                              self.destination_length)
                if sent < 0:
                    err = errno
        finally:
            PyBuffer_Release(&view)
        if sent < 0:
            if nothing_sent(err):
                return 0
            raise ChannelEndpointError(f"{self.name}: sendto {address} failed: errno {err}")
        return sent

    def send_term_batch(self, AtomicBuffer term not None, int32_t term_offset, int32_t window, int32_t mtu,
                        int max_datagrams, address):
        """Scan ``term`` from ``term_offset`` for whole frames (scan_for_availability, at most ``mtu`` per datagram,
        at most ``window`` bytes in all) and send up to ``max_datagrams`` datagrams from the term memory in one
        sendmmsg. Returns (bytes sent, bytes the sender position advances by: sent + skipped padding).

        A datagram the socket did not take ends the batch; the position covers only what went out.
        """
        self._check()
        term.check(0, 0)
        if term_offset < 0 or term_offset >= term.length or term_offset & 31:
            raise InvalidArgumentError(f"term offset {term_offset} must be 32-aligned and in [0, {term.length})")
        if mtu < 32 or max_datagrams < 1 or max_datagrams > MAX_BATCH:
            raise InvalidArgumentError(f"bad mtu {mtu} or max_datagrams {max_datagrams} (1..{MAX_BATCH})")
        self._destination(address)
        cdef int count = 0, i, n = 0, err = 0
        cdef int32_t offset = term_offset, available, padding, limit
        cdef int32_t remaining = window
        cdef int32_t term_length = <int32_t>term.length
        cdef int32_t paddings[MAX_BATCH]
        cdef int64_t sent_bytes = 0, advance = 0, send_ns
        cdef uint8_t *data = term.data
        cdef bint single = not self.use_mmsg
        with nogil:
            while count < max_datagrams and remaining > 0 and offset < term_length:
                limit = mtu if mtu < remaining else remaining
                available = term_scanner_scan_for_availability(data + offset, term_length - offset, limit, &padding)
                if available <= 0:
                    break
                self.tx_iov[count].iov_base = data + offset
                self.tx_iov[count].iov_len = <size_t>available
                paddings[count] = padding
                count += 1
                offset += available + padding
                remaining -= available + padding
            if count > 0 and self.channel_send_timestamp_offset != NO_TIMESTAMP:
                # the send time goes into the log itself, as aeron_send_channel_apply_timestamps does
                send_ns = aeron_py_realtime_ns()
                for i in range(count):
                    _stamp_first_frame(<uint8_t *>self.tx_iov[i].iov_base, <int32_t>self.tx_iov[i].iov_len,
                                       self.channel_send_timestamp_offset, send_ns)
            if count > 0:
                if not single:
                    n = send_datagrams(self.fd, self.tx, self.tx_iov, count, &self.destination,
                                       self.destination_length)
                    if n < 0:
                        err = errno
                else:
                    n = 0
                    while n < count:
                        if sendto(self.fd, self.tx_iov[n].iov_base, self.tx_iov[n].iov_len, 0,
                                  <sockaddr *>&self.destination, self.destination_length) < 0:
                            if n == 0:
                                err = errno
                                n = -1
                            break
                        n += 1
                for i in range(n if n > 0 else 0):
                    sent_bytes += <int64_t>self.tx_iov[i].iov_len
                    advance += <int64_t>self.tx_iov[i].iov_len + paddings[i]
        if n < 0:
            if err == ENOSYS and self.use_mmsg:
                self.use_mmsg = False
                return self.send_term_batch(term, term_offset, window, mtu, max_datagrams, address)
            if nothing_sent(err):
                return 0, 0
            raise ChannelEndpointError(f"{self.name}: sendmmsg to {address} failed: errno {err}")
        return sent_bytes, advance

    def close(self):
        """Release the slots and close the socket. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self._release()
        self.receive_buffer = None
        self.slots = []
        self.socket.close()

    @property
    def is_closed(self):
        return self.closed


cdef class ReadySockets:
    """Which of an agent's sockets have something to read, in one ``poll`` with no wait instead of a receive on
    each (Aeron's transport pollers do the same with epoll past a few transports): the duty cycle then reads only
    the groups (an endpoint's sockets) that have datagrams or an error waiting, and those it cannot check (a socket
    that is not compiled: a group of None) every time."""

    cdef pollfd *fds
    cdef int fd_count
    cdef int *first                 # per group: its first fd in fds, -1 for a group read every time
    cdef int *counts
    cdef int groups

    def __dealloc__(self):
        free(self.fds)
        free(self.first)
        free(self.counts)

    def set_groups(self, list groups not None):
        """Each group: a list of file descriptors, or None (read every time)."""
        cdef int total = 0, g = 0, i
        cdef int n = len(groups)
        for group in groups:
            if group is not None:
                total += len(group)
        fds = <pollfd *>calloc(total if total else 1, sizeof(pollfd))
        first = <int *>calloc(n if n else 1, sizeof(int))
        counts = <int *>calloc(n if n else 1, sizeof(int))
        if fds == NULL or first == NULL or counts == NULL:
            free(fds)
            free(first)
            free(counts)
            raise MemoryError()
        total = 0
        for group in groups:
            if group is None:
                first[g] = -1
            else:
                first[g] = total
                counts[g] = len(group)
                for i in range(len(group)):
                    fds[total].fd = group[i]
                    fds[total].events = POLLIN
                    total += 1
            g += 1
        free(self.fds)
        free(self.first)
        free(self.counts)
        self.fds, self.first, self.counts = fds, first, counts
        self.fd_count = total
        self.groups = n

    @property
    def group_count(self):
        """How many groups ``set_groups`` gave."""
        return self.groups

    def poll(self):
        """Look at every socket once, without waiting: the count ready, or -1 when the poll failed (then every group
        is to be read)."""
        cdef int ready, i
        with nogil:
            ready = poll(self.fds, self.fd_count, 0)
        if ready < 0:
            for i in range(self.fd_count):
                self.fds[i].revents = POLLIN
        return ready

    def ready(self, int group):
        """Whether the last ``poll`` found something to read (a datagram, or an error to take) in ``group``."""
        cdef int i, start
        if group < 0 or group >= self.groups:
            raise IndexError(f"group {group} of {self.groups}")
        start = self.first[group]
        if start < 0:
            return True
        for i in range(start, start + self.counts[group]):
            if self.fds[i].revents != 0:
                return True
        return False
