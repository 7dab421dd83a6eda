/* SPDX-License-Identifier: Apache-2.0
 * The archive's record checksums, one kernel for recording, replay, verify and the tools: CRC-32 and CRC-32C as
 * Aeron's io.aeron.archive.checksum.Checksums names them (org.agrona.checksum.Crc32 and Crc32c, which are
 * java.util.zip.CRC32 and CRC32C): reflected, started at all ones and complemented at the end, the result taken as a
 * signed int32 as Java's (int) cast does.
 *
 * CRC-32C runs on the SSE4.2 crc32 instruction where the CPU has it (asked once, when the extension is loaded, so
 * it still builds for and runs on any x86-64); otherwise, and for CRC-32, slicing-by-8: eight 256-entry tables
 * per polynomial, built when the extension is loaded, take eight bytes per step. GCC/Clang only (a constructor, the
 * CPU feature builtins), as aeron_atomic.h. */
#ifndef AERON_PY_CRC_H
#define AERON_PY_CRC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* checksum kinds: the values the archive's Python code and our segment tools pass around */
enum
{
    AERON_CHECKSUM_NONE = 0,
    AERON_CHECKSUM_CRC32 = 1,
    AERON_CHECKSUM_CRC32C = 2
};

#define AERON_CRC32_POLYNOMIAL 0xEDB88320u      /* IEEE 802.3, reflected */
#define AERON_CRC32C_POLYNOMIAL 0x82F63B78u     /* Castagnoli, reflected */

/* [kind - 1][k][b]: slicing-by-8 tables, row k the CRC of byte b followed by k zero bytes */
static uint32_t aeron_crc_tables[2][8][256];
static int aeron_crc32c_hardware;

static void aeron_crc_make_tables(uint32_t table[8][256], uint32_t polynomial)
{
    for (uint32_t b = 0; b < 256; b++)
    {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
        {
            c = (c & 1u) ? polynomial ^ (c >> 1) : c >> 1;
        }
        table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
    {
        uint32_t c = table[0][b];
        for (int k = 1; k < 8; k++)
        {
            c = table[0][c & 0xFFu] ^ (c >> 8);
            table[k][b] = c;
        }
    }
}

/* Running CRC state (not complemented) over p[0, length) with the tables of one polynomial. */
static inline uint32_t aeron_crc_update_by_table(const uint32_t table[8][256], uint32_t crc, const uint8_t *p,
                                                 size_t length)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (length >= 8)
    {
        uint64_t word;
        memcpy(&word, p, 8);
        word ^= crc;
        crc = table[7][word & 0xFFu] ^ table[6][(word >> 8) & 0xFFu] ^ table[5][(word >> 16) & 0xFFu] ^
              table[4][(word >> 24) & 0xFFu] ^ table[3][(word >> 32) & 0xFFu] ^ table[2][(word >> 40) & 0xFFu] ^
              table[1][(word >> 48) & 0xFFu] ^ table[0][word >> 56];
        p += 8;
        length -= 8;
    }
#endif
    while (length > 0)
    {
        crc = table[0][(crc ^ *p) & 0xFFu] ^ (crc >> 8);
        p++;
        length--;
    }
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static inline uint32_t aeron_crc32c_update_by_instruction(uint32_t crc, const uint8_t *p, size_t length)
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

static int aeron_crc32c_instruction_available(void)
{
    __builtin_cpu_init();       /* needed before __builtin_cpu_supports in a constructor */
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}
#else
static inline uint32_t aeron_crc32c_update_by_instruction(uint32_t crc, const uint8_t *p, size_t length)
{
    return aeron_crc_update_by_table(aeron_crc_tables[AERON_CHECKSUM_CRC32C - 1], crc, p, length);
}

static int aeron_crc32c_instruction_available(void)
{
    return 0;
}
#endif

__attribute__((constructor))
static void aeron_crc_init(void)
{
    aeron_crc_make_tables(aeron_crc_tables[AERON_CHECKSUM_CRC32 - 1], AERON_CRC32_POLYNOMIAL);
    aeron_crc_make_tables(aeron_crc_tables[AERON_CHECKSUM_CRC32C - 1], AERON_CRC32C_POLYNOMIAL);
    aeron_crc32c_hardware = aeron_crc32c_instruction_available();
}

/* The checksum of p[0, length) as Checksum.compute returns it; kind is AERON_CHECKSUM_CRC32 or _CRC32C. */
static inline int32_t aeron_checksum(int kind, const uint8_t *p, size_t length)
{
    uint32_t crc;
    if (kind == AERON_CHECKSUM_CRC32C && aeron_crc32c_hardware)
    {
        crc = aeron_crc32c_update_by_instruction(0xFFFFFFFFu, p, length);
    }
    else
    {
        crc = aeron_crc_update_by_table(aeron_crc_tables[kind - 1], 0xFFFFFFFFu, p, length);
    }
    return (int32_t)~crc;
}

/* The same by the tables alone (the reference the instruction is tested against). */
static inline int32_t aeron_checksum_by_table(int kind, const uint8_t *p, size_t length)
{
    return (int32_t)~aeron_crc_update_by_table(aeron_crc_tables[kind - 1], 0xFFFFFFFFu, p, length);
}

static inline int aeron_crc32c_in_hardware(void)
{
    return aeron_crc32c_hardware;
}

#endif
