# SPDX-License-Identifier: Apache-2.0
# Archive data path kernels (archive_io.pyx): term blocks into segment files, segment frames into a replay
# publication. Declared here so that other compiled modules may cimport them.
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef class SegmentWriter:
    cdef public int fd                    # open segment file, -1 when none
    cdef public int64_t segment_offset    # where the next block goes in it
    cdef public int sync_level            # 0 none, 1 fdatasync, 2 fsync after each block
    cdef readonly int checksum            # CHECKSUM_* kind of the per-frame record checksum
    cdef uint8_t *scratch                 # block copy whose session id fields get the checksums
    cdef Py_ssize_t scratch_length

    cdef int write_block(self, const uint8_t *src, int32_t length) noexcept nogil

cdef class ReplayBlockReader:
    cdef readonly Py_ssize_t max_block_length     # longest run copied at once (file io max length)
    cdef int populated                            # bit per log partition already mapped in (populate)
