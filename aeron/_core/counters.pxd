# SPDX-License-Identifier: Apache-2.0
# Counters: a values buffer of 128-byte records (one int64 value + registration/owner/reference ids)
# and a metadata buffer of 512-byte records (state, type id, reuse deadline, key, label) with the
# same id. One writer (CountersManager, the driver conductor) and many readers in other processes.
from libc.stdint cimport int32_t, int64_t, uint8_t
from aeron._core.atomic cimport load_acquire_i64, store_release_i64, get_and_add_i64, cas_i64
from aeron._core.atomic_buffer cimport AtomicBuffer
from cpython.buffer cimport Py_buffer

cdef enum:
    COUNTERS_COUNTER_LENGTH = 128                 # values record stride (two cache lines)
    COUNTERS_REGISTRATION_ID_OFFSET = 8           # values record: int64 registration id
    COUNTERS_OWNER_ID_OFFSET = 16                 # values record: int64 owner id
    COUNTERS_REFERENCE_ID_OFFSET = 24             # values record: int64 reference id
    COUNTERS_METADATA_LENGTH = 512                # metadata record stride
    COUNTERS_TYPE_ID_OFFSET = 4                   # metadata: int32 type id (state is at 0)
    COUNTERS_FREE_FOR_REUSE_DEADLINE_OFFSET = 8   # metadata: int64 epoch ms, INT64_MAX while allocated
    COUNTERS_KEY_OFFSET = 16                      # metadata: opaque key bytes
    COUNTERS_LABEL_OFFSET = 128                   # metadata: int32 label length then the label bytes
    COUNTERS_MAX_KEY_LENGTH = 112
    COUNTERS_MAX_LABEL_LENGTH = 380
    COUNTERS_RECORD_UNUSED = 0
    COUNTERS_RECORD_ALLOCATED = 1
    COUNTERS_RECORD_RECLAIMED = -1


# Address of a counter's int64 value; the caller has checked the id against max_counter_id.
cdef inline int64_t *counter_addr(uint8_t *values, int32_t counter_id) noexcept nogil:
    return <int64_t *>(values + <Py_ssize_t>counter_id * COUNTERS_COUNTER_LENGTH)


cdef inline int64_t counter_get_volatile(const int64_t *addr) noexcept nogil:
    return load_acquire_i64(addr)


cdef inline void counter_set_release(int64_t *addr, int64_t value) noexcept nogil:
    store_release_i64(addr, value)


# Single writer "propose max": only moves the counter forward, release store when it does.
cdef inline bint counter_propose_max_release(int64_t *addr, int64_t proposed) noexcept nogil:
    if load_acquire_i64(addr) < proposed:
        store_release_i64(addr, proposed)
        return True
    return False


cdef class CountersReader:
    cdef readonly AtomicBuffer metadata_buffer   # metadata section (512 bytes per counter)
    cdef readonly AtomicBuffer values_buffer     # values section (128 bytes per counter)
    cdef readonly int32_t max_counter_id         # values length / 128 - 1

    cdef int check_id(self, int32_t counter_id) except -1
    cdef uint8_t *meta_ptr(self, int32_t counter_id) noexcept     # after check_id only
    cdef uint8_t *value_ptr(self, int32_t counter_id) noexcept    # after check_id only
    cdef object read_label(self, int32_t counter_id)


cdef class CountersManager(CountersReader):
    cdef readonly int32_t high_water_mark_id     # highest id ever handed out, -1 when none
    cdef readonly int64_t free_to_reuse_timeout_ms
    cdef list free_list                          # freed ids in the order they were freed
    cdef object clock_ms                         # callable returning epoch ms
    cdef int32_t next_counter_id(self) except -2


cdef class AtomicCounter:
    cdef int64_t *addr              # the counter's value (pinned by _view)
    cdef readonly int32_t counter_id
    cdef Py_buffer _view            # export of the values buffer: its memory cannot be unmapped under us
    cdef bint _has_view             # _view must be released
    cdef int _check(self) except -1
