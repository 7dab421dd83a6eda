# SPDX-License-Identifier: Apache-2.0
# Loss generators at the transport seam, ports of the C driver's receive interceptors
# (media/aeron_udp_channel_transport_loss.c, _fixed_loss.c, _multi_gap_loss.c), plus reordering and duplication
# at the same seam (ours: Aeron has no interceptor for them): a nogil decision per datagram, state preallocated at
# construction, nothing allocated per datagram.
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from aeron._core.udp_transport cimport UdpTransport, sockaddr_storage

cdef enum:
    LOSS_RANDOM = 1                 # "loss": rate, seed, recv-msg-mask
    LOSS_FIXED = 2                  # "fixed-loss": term-id, term-offset, length
    LOSS_MULTI_GAP = 3              # "multi-gap-loss": term-id, gap-radix, gap-length, total-gaps
    LOSS_REORDER = 4                # "reorder": rate, seed, recv-msg-mask, depth (held back past `depth` more)
    LOSS_DUPLICATE = 5              # "duplicate": rate, seed, recv-msg-mask, depth (the copy after `depth` more)
    LOSS_TRACKING_CAPACITY = 64     # (stream, session) pairs tracked by fixed / multi-gap; more are never dropped
    LOSS_HOLD_CAPACITY = 8          # reorder / duplicate: datagrams held at once; more pass through untouched
    LOSS_HOLD_SLOT_LENGTH = 65504   # reorder / duplicate: bytes per held datagram (the transport's largest slot)


@cython.final
cdef class LossGenerator:
    cdef readonly int kind                  # LOSS_*
    cdef double rate                        # random: drop when the next draw <= rate
    cdef uint64_t rand_state                # random: erand48 state (48 bits), seeded as the C interceptor does
    cdef uint32_t msg_type_mask             # random: bit (1 << frame type) selects the types that may drop
    cdef int32_t term_id                    # fixed / multi-gap: the only term affected
    cdef int64_t term_offset                # fixed: start of the range to drop
    cdef int64_t length                     # fixed: length of the range to drop
    cdef int gap_radix_bits                 # multi-gap: log2(gap radix)
    cdef int64_t gap_radix                  # multi-gap: gap every gap_radix bytes (power of two)
    cdef int64_t gap_length                 # multi-gap: bytes dropped at each gap
    cdef int64_t last_gap_limit             # multi-gap: nothing past total_gaps * radix + gap_length drops
    cdef int64_t track_key[LOSS_TRACKING_CAPACITY]      # (stream id << 32 | session id) per tracked pair
    cdef int64_t track_offset[LOSS_TRACKING_CAPACITY]   # tracked term offset per pair
    cdef bint track_used[LOSS_TRACKING_CAPACITY]        # slot in use
    cdef int64_t depth                      # reorder / duplicate: datagrams that arrive before the held one goes
    cdef uint8_t *held_data                 # reorder / duplicate: LOSS_HOLD_CAPACITY slots (NULL for the others)
    cdef int32_t held_length[LOSS_HOLD_CAPACITY]
    cdef sockaddr_storage held_address[LOSS_HOLD_CAPACITY]
    cdef int64_t held_due[LOSS_HOLD_CAPACITY]          # due once `seen` reaches it
    cdef int held_head                      # oldest held datagram (a ring: all wait the same depth, FIFO)
    cdef readonly int held_count            # datagrams held now
    cdef readonly int64_t seen              # datagrams examined
    cdef readonly int64_t dropped           # datagrams dropped
    cdef readonly int64_t delayed           # reorder: datagrams held back (each delivered later)
    cdef readonly int64_t duplicated        # duplicate: datagrams delivered twice
    cdef readonly LossGenerator next_generator   # the next interceptor of a chain (what this one lets through)

    cdef double _next_double(self) noexcept nogil
    cdef int _track(self, int64_t key, int64_t initial) noexcept nogil
    cdef bint should_drop(self, const uint8_t *datagram, Py_ssize_t length) noexcept nogil
    cdef int filter_slots(self, uint8_t **slot_data, int *slot_length, int count) noexcept nogil
    cdef bint _selected(self, const uint8_t *datagram, Py_ssize_t length) noexcept nogil
    cdef int filter_batch(self, UdpTransport transport, int count) noexcept nogil
    cdef int64_t chain_dropped(self) noexcept nogil
