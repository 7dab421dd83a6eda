# SPDX-License-Identifier: Apache-2.0
# The receive data path in compiled code (aeron_data_packet_dispatcher.c and the insert half of
# aeron_publication_image.c): one call per batch receives, validates and inserts DATA/PAD datagrams into the
# images found by (session id, stream id); whatever needs Python comes back as an event naming its slot.
from libc.stdint cimport int32_t, int64_t, uint8_t

from aeron._core.counters cimport AtomicCounter
from aeron._core.loss_generator cimport LossGenerator
from aeron._core.udp_transport cimport MAX_BATCH, UdpTransport
from aeron._core.wakeup cimport WakeupBoard

cdef enum:
    MAX_FAST_CONNECTIONS = 8        # image connections matched in C; an image with more goes to Python for the rest
    ADDRESS_KEY_LENGTH = 28         # family, port, address, v6 flow info and scope: see address_key()

    # what a datagram needs from Python (event kinds); OK: handled (inserted, counted or dropped) in C
    DISPATCH_OK = 0
    DISPATCH_DATA = 1               # DATA/PAD for no fast image (unknown session, rejected image, new source, EOS)
    DISPATCH_SETUP = 2
    DISPATCH_RTTM = 3


cdef struct FastConnection:
    int64_t destination_id
    int64_t time_of_last_frame_ns
    int32_t address_length          # 0: a fixed address (control group, explicit control): any source matches
    uint8_t address[ADDRESS_KEY_LENGTH]


cdef struct ImageEntry:
    int64_t key                     # (session id << 32) | stream id, as unsigned halves
    int32_t session_id
    int32_t stream_id
    int32_t initial_term_id
    int32_t term_length
    int32_t position_bits_to_shift
    uint8_t *terms[3]
    int64_t *rcv_hwm
    int64_t last_sm_position        # what the last status message said (written by Python when it sends one)
    int64_t time_of_last_packet_ns
    int64_t inserts                 # data frames inserted so far: the receiver's rebuild scan runs only after a change
    int64_t gaps                    # data frames inserted past the high-water mark (each opened a gap before it)
    int64_t heartbeats              # heartbeats taken in so far: with inserts, what proves the source is real
    int64_t wake_bit                # the wake-up board's bit of this stream: who to wake when data lands
    bint accepting                  # False once rejected: everything goes to Python, which drops it
    int connection_count
    FastConnection connections[MAX_FAST_CONNECTIONS]


cdef class ImageReceiveState:
    cdef ImageEntry entry
    cdef list _terms                # the AtomicBuffers behind entry.terms, kept alive
    cdef AtomicCounter _rcv_hwm


cdef class DataPacketDispatcher:
    cdef ImageEntry **table         # open addressing on ImageEntry.key, NULL = empty
    cdef int capacity               # power of two
    cdef int size
    cdef dict _states               # key -> ImageReceiveState: owns what the table points at
    cdef int32_t events_slot[MAX_BATCH]
    cdef int32_t events_kind[MAX_BATCH]
    cdef readonly int event_count
    cdef readonly int64_t inserted  # bytes inserted by the last call
    cdef readonly int dropped       # datagrams the loss generator dropped in the last poll
    cdef readonly int gaps          # data frames the last poll inserted past an image's high-water mark (a gap)
    cdef readonly int64_t data_mask # wake bits of the streams data was inserted into, until take_data_mask()
    cdef WakeupBoard wake_board     # when set, poll() wakes the subscribers of data_mask's new bits at once
    cdef int64_t signalled_mask     # the bits of data_mask poll() has already signalled
    cdef readonly int64_t unsignalled_mask   # the bits the last take_data_mask() returned that poll() did not signal
    cdef int64_t *bytes_received
    cdef int64_t *invalid_packets
    cdef int64_t *heartbeats_received
    cdef int64_t *flow_control_over_runs
    cdef int64_t *flow_control_under_runs
    cdef list _counters             # the AtomicCounters behind those addresses, kept alive

    cdef ImageEntry *find(self, int64_t key) noexcept nogil
    cdef int grow(self) except -1
    cdef int dispatch_one(self, uint8_t *datagram, int32_t length, const uint8_t *address, int32_t address_length,
                          int64_t destination_id, int64_t now_ns) noexcept nogil
    cdef void _dispatch_slots(self, UdpTransport transport, int count, int64_t destination_id,
                              int64_t now_ns) noexcept nogil
    cdef int receive(self, UdpTransport transport, int64_t destination_id, int64_t now_ns,
                     LossGenerator loss, int most=*) noexcept nogil
    cdef int receive_failed(self, UdpTransport transport, int64_t destination_id, int64_t now_ns, LossGenerator loss,
                            int n) except -1
    cdef int _dispatched(self, UdpTransport transport, int n, int64_t destination_id, int64_t now_ns,
                         LossGenerator loss) noexcept nogil
    cdef int64_t take_unsignalled(self) noexcept nogil
