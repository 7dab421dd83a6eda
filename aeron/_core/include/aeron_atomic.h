/* SPDX-License-Identifier: Apache-2.0
 * Atomic loads/stores on shared memory (mmap'd log buffers, cnc.dat) that other processes,
 * written in C or Java, read and write concurrently. GCC/Clang __atomic builtins only. */
#ifndef AERON_PY_ATOMIC_H
#define AERON_PY_ATOMIC_H

#include <stdint.h>

static inline int32_t aeron_load_acquire_i32(const volatile int32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline int64_t aeron_load_acquire_i64(const volatile int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline uint8_t aeron_load_acquire_u8(const volatile uint8_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline int32_t aeron_load_relaxed_i32(const volatile int32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline int64_t aeron_load_relaxed_i64(const volatile int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

static inline void aeron_store_release_i32(volatile int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline void aeron_store_release_i64(volatile int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline void aeron_store_release_u8(volatile uint8_t *p, uint8_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline void aeron_store_relaxed_i32(volatile int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void aeron_store_relaxed_i64(volatile int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void aeron_store_volatile_i64(volatile int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static inline void aeron_store_volatile_i32(volatile int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

static inline int64_t aeron_get_and_add_i64(volatile int64_t *p, int64_t d) { return __atomic_fetch_add(p, d, __ATOMIC_SEQ_CST); }
static inline int32_t aeron_get_and_add_i32(volatile int32_t *p, int32_t d) { return __atomic_fetch_add(p, d, __ATOMIC_SEQ_CST); }

static inline int aeron_cas_i64(volatile int64_t *p, int64_t expected, int64_t desired)
{
    return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ? 1 : 0;
}

static inline int aeron_cas_i32(volatile int32_t *p, int32_t expected, int32_t desired)
{
    return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ? 1 : 0;
}

static inline void aeron_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
static inline void aeron_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
static inline void aeron_fence_full(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* Spin-wait hint for busy loops. */
static inline void aeron_cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

#endif
