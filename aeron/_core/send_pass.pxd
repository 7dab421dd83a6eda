# SPDX-License-Identifier: Apache-2.0
# The sender's data path in compiled code: one call sends every publication of a send channel endpoint.
from libc.stdint cimport int32_t, int64_t, uint8_t

from aeron._core.udp_transport cimport MAX_BATCH, UdpTransport, sockaddr_storage, socklen_t


cdef enum:
    NAK_NOT_TAKEN = 0                 # SendPass.on_nak: the publication's own handling reads it
    NAK_TAKEN = 1                     # handled here (resent, ignored while lingering, or out of range)
    NAK_INVALID = 2                   # its range runs past the term: counted as an invalid packet, dropped


cdef struct PassSlot:
    uint8_t *terms[3]               # the publication's three term partitions
    int64_t *snd_pos                # snd-pos: written here (the sender thread owns it)
    int64_t *snd_lmt                # snd-lmt: how far flow control lets it send
    int32_t term_length
    int32_t position_bits_to_shift
    int32_t mtu
    int32_t max_messages            # datagrams per pass (the driver's max messages per send)
    int64_t sent                    # bytes the last pass sent for it
    int64_t position                # its sender position while the pass runs
    uint8_t *meta                   # its log's metadata (producer position), NULL: no back-pressure count here
    int64_t *snd_bpe                # snd-bpe: bumped when data waits behind a closed window (sender thread)
    int32_t initial_term_id
    int64_t due_ns                  # when its Python part (setup, heartbeat, timers) runs next
    int64_t last_sent_ns            # when a pass last sent data of it
    int64_t total_sent              # bytes sent by passes since the publication last took them
    int32_t session_id              # set_fast_status: status messages of this receiver handled in compiled code
    int32_t stream_id
    bint fast_status
    int64_t fast_receiver_id
    int64_t last_status_ns          # when compiled code last took a status message of it (INT64_MIN: never)
    bint fast_naks                  # set_fast_retransmit: its NAKs resent in compiled code (with fast_status)
    int64_t *snd_naks               # snd-naks-received
    int64_t *retransmits_sent       # the RETRANSMITS_SENT and RETRANSMITTED_BYTES system counters (or NULL)
    int64_t *retransmitted_bytes
    int64_t linger_ns               # how long a range just resent ignores NAKs for it
    int32_t resend_estimate         # the most one retransmit covers: the receiver window estimate x rrwm
    int32_t max_message_length
    bint rtx_active                 # unicast's one retransmit action: a range resent, lingering until rtx_expiry_ns
    int32_t rtx_term_id
    int32_t rtx_term_offset
    int32_t rtx_length
    int64_t rtx_expiry_ns


cdef class SendPass:
    cdef PassSlot *slots
    cdef readonly int count
    cdef int capacity
    cdef int round_robin
    cdef list _owners                # the term buffers and counters the slots point into: kept open
    cdef int32_t *due_slots          # the publications whose Python part is due after the last pass
    cdef readonly int due_count
    cdef readonly int datagrams_sent  # datagrams the last run took to the socket (every destination's counted)
    cdef int32_t datagram_slot[MAX_BATCH]
    cdef int64_t datagram_advance[MAX_BATCH]

    cdef UdpTransport bound_transport  # bind(): where a pass run from compiled code sends (DataSpin.backoff)
    cdef object bound_address
    cdef object _bound_counter
    cdef int64_t *bytes_sent         # the endpoint's bytes-sent counter (bind), NULL when unbound
    cdef list _retransmit_owners     # per slot: the counters set_fast_retransmit points it at (kept open)
    cdef readonly int resend_errno   # a resend's sendmmsg failed with this (0: none); take_resend_errno clears it
    # set_destinations: a manual multi-destination-cast endpoint's destinations, each sent every gathered batch
    cdef readonly bint multi_destination
    cdef sockaddr_storage *destinations
    cdef socklen_t *destination_lengths
    cdef int destination_count
    cdef int destination_capacity
    cdef int destination_round_robin

    cdef int _send_to_destinations(self, UdpTransport transport, int count, int *err) noexcept nogil
    cdef int _flush(self, UdpTransport transport, int count, int *err) noexcept nogil
    cdef int64_t run(self, UdpTransport transport, int64_t now_ns, int *err) noexcept nogil
    cdef int prepare_bound(self) except -1
    cdef bint on_status_message(self, int32_t session_id, int32_t stream_id, int32_t term_id, int32_t term_offset,
                                int32_t window, int64_t receiver_id, int64_t now_ns) noexcept nogil
    cdef int on_nak(self, int32_t session_id, int32_t stream_id, int32_t term_id, int32_t term_offset, int32_t length,
                    int64_t now_ns) noexcept nogil
    cdef int64_t _resend(self, PassSlot *slot, int32_t term_id, int32_t term_offset, int32_t length) noexcept nogil
