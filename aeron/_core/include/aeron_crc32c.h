/* SPDX-License-Identifier: Apache-2.0
 * CRC-32C with the SSE4.2 crc32 instruction where the CPU has it (checked at run time, so the extension still
 * builds for and runs on any x86-64); elsewhere the caller falls back to its table-driven version. */
#ifndef AERON_PY_CRC32C_H
#define AERON_PY_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static uint32_t aeron_crc32c_hw_update(uint32_t crc, const uint8_t *p, size_t length)
{
    uint64_t c = crc;
    while (length >= 8)
    {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (length > 0)
    {
        c32 = _mm_crc32_u8(c32, *p);
        p++;
        length--;
    }
    return c32;
}

static int aeron_crc32c_hw_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}
#else
static uint32_t aeron_crc32c_hw_update(uint32_t crc, const uint8_t *p, size_t length)
{
    (void)p;
    (void)length;
    return crc;
}

static int aeron_crc32c_hw_available(void)
{
    return 0;
}
#endif

#endif
