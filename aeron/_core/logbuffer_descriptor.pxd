# SPDX-License-Identifier: Apache-2.0
# Log buffer layout: 3 term partitions then a 4096-byte metadata section (port of
# LogBufferDescriptor, aeron_logbuffer_descriptor.h). Header-only helpers over a raw metadata pointer.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from aeron._core.atomic cimport load_acquire_i32, load_acquire_i64, cas_i32, cas_i64

cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil

cdef enum:
    PARTITION_COUNT = 3
    TERM_MIN_LENGTH = 64 * 1024
    TERM_MAX_LENGTH = 1024 * 1024 * 1024
    PAGE_MIN_SIZE = 4 * 1024
    PAGE_MAX_SIZE = 1024 * 1024 * 1024
    LOG_META_DATA_LENGTH = 4096        # always the last 4096 bytes of the file
    LOG_META_DATA_STRUCT_LENGTH = 508

    # metadata field offsets (from the start of the metadata section)
    TERM_TAIL_COUNTERS_OFFSET = 0              # i64[3] raw tails
    LOG_ACTIVE_TERM_COUNT_OFFSET = 24          # i32
    LOG_END_OF_STREAM_POSITION_OFFSET = 128    # i64
    LOG_IS_CONNECTED_OFFSET = 136              # i32
    LOG_ACTIVE_TRANSPORT_COUNT_OFFSET = 140    # i32
    LOG_CORRELATION_ID_OFFSET = 256            # i64
    LOG_INITIAL_TERM_ID_OFFSET = 264           # i32
    LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET = 268   # i32, always 32
    LOG_MTU_LENGTH_OFFSET = 272                # i32
    LOG_TERM_LENGTH_OFFSET = 276               # i32
    LOG_PAGE_SIZE_OFFSET = 280                 # i32
    LOG_PUBLICATION_WINDOW_LENGTH_OFFSET = 284  # i32
    LOG_RECEIVER_WINDOW_LENGTH_OFFSET = 288    # i32
    LOG_SOCKET_SNDBUF_LENGTH_OFFSET = 292      # i32
    LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET = 296
    LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET = 300
    LOG_SOCKET_RCVBUF_LENGTH_OFFSET = 304
    LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET = 308
    LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET = 312
    LOG_MAX_RESEND_OFFSET = 316                # i32
    LOG_DEFAULT_FRAME_HEADER_OFFSET = 320      # 128 bytes; first 32 = default DATA header
    LOG_DEFAULT_FRAME_HEADER_MAX_LENGTH = 128
    LOG_ENTITY_TAG_OFFSET = 448                # i64
    LOG_RESPONSE_CORRELATION_ID_OFFSET = 456   # i64
    LOG_LINGER_TIMEOUT_NS_OFFSET = 464         # i64
    LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET = 472   # i64
    LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET = 480        # i64
    LOG_GROUP_OFFSET = 488                     # u8 booleans from here to 496
    LOG_IS_RESPONSE_OFFSET = 489
    LOG_REJOIN_OFFSET = 490
    LOG_RELIABLE_OFFSET = 491
    LOG_SPARSE_OFFSET = 492
    LOG_SIGNAL_EOS_OFFSET = 493
    LOG_SPIES_SIMULATE_CONNECTION_OFFSET = 494
    LOG_TETHER_OFFSET = 495
    LOG_IS_PUBLICATION_REVOKED_OFFSET = 496
    LOG_TYPE_OFFSET = 497                      # u8: 0 concurrent, 1 exclusive, 2 image
    LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET = 500  # i64 (4-aligned only)

    LOG_TYPE_CONCURRENT = 0
    LOG_TYPE_EXCLUSIVE = 1
    LOG_TYPE_IMAGE = 2


# -- raw tail: term id in the high 32 bits, offset in the low 32 (may run past term_length) -------
cdef inline int32_t term_id_of(int64_t raw_tail) noexcept nogil:
    return <int32_t>(raw_tail >> 32)

cdef inline int32_t term_offset_of(int64_t raw_tail, int64_t term_length) noexcept nogil:
    cdef int64_t tail = <int64_t><uint32_t>raw_tail
    return <int32_t>(tail if tail < term_length else term_length)

cdef inline int64_t pack_tail(int32_t term_id, int32_t term_offset) noexcept nogil:
    return <int64_t>((<uint64_t><uint32_t>term_id) << 32) | <int64_t><uint32_t>term_offset

# -- positions -----------------------------------------------------------------------------------
cdef inline int32_t term_count_of(int32_t term_id, int32_t initial_term_id) noexcept nogil:
    # 32-bit wrapping subtraction: term ids may wrap from 2^31-1 to -2^31
    return <int32_t>(<uint32_t>term_id - <uint32_t>initial_term_id)

cdef inline int64_t compute_term_begin_position(int32_t term_id, int32_t position_bits_to_shift,
                                                int32_t initial_term_id) noexcept nogil:
    return (<int64_t>term_count_of(term_id, initial_term_id)) << position_bits_to_shift

cdef inline int64_t compute_position(int32_t term_id, int32_t term_offset, int32_t position_bits_to_shift,
                                     int32_t initial_term_id) noexcept nogil:
    return compute_term_begin_position(term_id, position_bits_to_shift, initial_term_id) + term_offset

cdef inline int32_t compute_term_id_from_position(int64_t position, int32_t position_bits_to_shift,
                                                  int32_t initial_term_id) noexcept nogil:
    return <int32_t>(<uint32_t>(position >> position_bits_to_shift) + <uint32_t>initial_term_id)

cdef inline int32_t compute_term_offset_from_position(int64_t position, int32_t position_bits_to_shift) noexcept nogil:
    return <int32_t>(position & ((<int64_t>1 << position_bits_to_shift) - 1))

cdef inline int32_t index_by_term_count(int64_t term_count) noexcept nogil:
    return <int32_t>(term_count % PARTITION_COUNT)

cdef inline int32_t index_by_term(int32_t initial_term_id, int32_t active_term_id) noexcept nogil:
    # floor modulo: partitions 1 and 2 start out holding the terms before the initial one
    cdef int32_t r = term_count_of(active_term_id, initial_term_id) % PARTITION_COUNT
    return r + PARTITION_COUNT if r < 0 else r

cdef inline int32_t index_by_position(int64_t position, int32_t position_bits_to_shift) noexcept nogil:
    return <int32_t>((position >> position_bits_to_shift) % PARTITION_COUNT)

cdef inline int32_t position_bits_to_shift(int32_t term_length) noexcept nogil:
    return __builtin_ctz(<unsigned int>term_length)

cdef inline int64_t max_possible_position(int32_t term_length) noexcept nogil:
    return (<int64_t>term_length) << 31

cdef inline int64_t compute_log_length(int64_t term_length, int64_t page_size) noexcept nogil:
    cdef int64_t n = PARTITION_COUNT * term_length + LOG_META_DATA_LENGTH
    return (n + page_size - 1) & ~(page_size - 1)

# -- metadata accessors ----------------------------------------------------------------------------
cdef inline int64_t *tail_counter_ptr(uint8_t *meta, int32_t index) noexcept nogil:
    return <int64_t *>(meta + TERM_TAIL_COUNTERS_OFFSET) + index

cdef inline int64_t raw_tail_volatile(const uint8_t *meta, int32_t index) noexcept nogil:
    return load_acquire_i64(<const int64_t *>(meta + TERM_TAIL_COUNTERS_OFFSET) + index)

cdef inline int32_t active_term_count_volatile(const uint8_t *meta) noexcept nogil:
    return load_acquire_i32(<const int32_t *>(meta + LOG_ACTIVE_TERM_COUNT_OFFSET))

cdef inline int32_t meta_i32(const uint8_t *meta, int32_t offset) noexcept nogil:
    return (<const int32_t *>(meta + offset))[0]

cdef inline int64_t meta_i64(const uint8_t *meta, int32_t offset) noexcept nogil:
    # 8-byte fields at 500 are only 4-aligned; memcpy-style access is safe on x86/arm64
    return (<const int64_t *>(meta + offset))[0]

cdef inline bint is_connected_volatile(const uint8_t *meta) noexcept nogil:
    return load_acquire_i32(<const int32_t *>(meta + LOG_IS_CONNECTED_OFFSET)) == 1

cdef inline bint rotate_log(uint8_t *meta, int32_t current_term_count, int32_t current_term_id) noexcept nogil:
    # Shared by concurrent publishers and the driver's unblocker; the CASes make it idempotent.
    cdef int32_t next_term_id = <int32_t>(<uint32_t>current_term_id + 1)
    cdef int32_t next_term_count = <int32_t>(<uint32_t>current_term_count + 1)
    cdef int32_t next_index = index_by_term_count(next_term_count)
    cdef int32_t expected_term_id = <int32_t>(<uint32_t>next_term_id - PARTITION_COUNT)
    cdef int64_t *tail = tail_counter_ptr(meta, next_index)
    cdef int64_t raw
    while True:
        raw = load_acquire_i64(tail)
        if term_id_of(raw) != expected_term_id:
            break
        if cas_i64(tail, raw, pack_tail(next_term_id, 0)):
            break
    return cas_i32(<int32_t *>(meta + LOG_ACTIVE_TERM_COUNT_OFFSET), current_term_count, next_term_count)
