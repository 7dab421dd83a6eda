# SPDX-License-Identifier: Apache-2.0
# Atomic operations on shared memory; see include/aeron_atomic.h. Every cross-process field
# (frame lengths, tails, counters) goes through these, never through plain loads and stores.
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef extern from "aeron_atomic.h" nogil:
    int32_t load_acquire_i32 "aeron_load_acquire_i32"(const int32_t *p)
    int64_t load_acquire_i64 "aeron_load_acquire_i64"(const int64_t *p)
    uint8_t load_acquire_u8 "aeron_load_acquire_u8"(const uint8_t *p)
    int32_t load_relaxed_i32 "aeron_load_relaxed_i32"(const int32_t *p)
    int64_t load_relaxed_i64 "aeron_load_relaxed_i64"(const int64_t *p)
    void store_release_i32 "aeron_store_release_i32"(int32_t *p, int32_t v)
    void store_release_i64 "aeron_store_release_i64"(int64_t *p, int64_t v)
    void store_release_u8 "aeron_store_release_u8"(uint8_t *p, uint8_t v)
    void store_relaxed_i32 "aeron_store_relaxed_i32"(int32_t *p, int32_t v)
    void store_relaxed_i64 "aeron_store_relaxed_i64"(int64_t *p, int64_t v)
    void store_volatile_i32 "aeron_store_volatile_i32"(int32_t *p, int32_t v)
    void store_volatile_i64 "aeron_store_volatile_i64"(int64_t *p, int64_t v)
    int64_t get_and_add_i64 "aeron_get_and_add_i64"(int64_t *p, int64_t delta)
    int32_t get_and_add_i32 "aeron_get_and_add_i32"(int32_t *p, int32_t delta)
    bint cas_i64 "aeron_cas_i64"(int64_t *p, int64_t expected, int64_t desired)
    bint cas_i32 "aeron_cas_i32"(int32_t *p, int32_t expected, int32_t desired)
    void fence_acquire "aeron_fence_acquire"()
    void fence_release "aeron_fence_release"()
    void fence_full "aeron_fence_full"()
    void cpu_pause "aeron_cpu_pause"()

cdef extern from "aeron_debug.h":
    const bint AERON_PY_DEBUG
