# SPDX-License-Identifier: Apache-2.0
# The archive's record checksums (CRC-32, CRC-32C as Aeron's io.aeron.archive.checksum.Checksums names them): one
# kernel, aeron_crc.h, for recording (archive_io.SegmentWriter), replay (archive_io.ReplayBlockReader), ArchiveTool
# verify / checksum (segment_scanner) and aeron.archive.checksums, and one set of kind constants.
from libc.stdint cimport int32_t, uint8_t

from aeron._core cimport frame_descriptor as fd

cdef extern from "aeron_crc.h" nogil:
    enum:
        KIND_NONE "AERON_CHECKSUM_NONE"
        KIND_CRC32 "AERON_CHECKSUM_CRC32"
        KIND_CRC32C "AERON_CHECKSUM_CRC32C"
    # Checksum.compute of p[0, length) as a signed int32; kind KIND_CRC32 or KIND_CRC32C
    int32_t aeron_checksum(int kind, const uint8_t *p, size_t length)
    # the same by the slicing-by-8 tables alone, whatever the CPU has
    int32_t aeron_checksum_by_table(int kind, const uint8_t *p, size_t length)
    # whether CRC-32C runs on the SSE4.2 crc32 instruction here
    bint aeron_crc32c_in_hardware()


cdef inline bint is_checksum_kind(int kind) noexcept nogil:
    return kind == KIND_CRC32 or kind == KIND_CRC32C


cdef inline int32_t record_checksum(int kind, const uint8_t *frame, Py_ssize_t aligned_length) noexcept nogil:
    # The checksum the archive stores in a recorded DATA frame's session id field: over the frame's aligned body,
    # the bytes [HEADER_LENGTH, align(frame length, FRAME_ALIGNMENT)), as RecordingWriter.computeChecksum takes it.
    return aeron_checksum(kind, frame + fd.HEADER_LENGTH, <size_t>(aligned_length - fd.HEADER_LENGTH))
