# SPDX-License-Identifier: Apache-2.0
from libc.stdint cimport int64_t, uint8_t

# end offset of the whole frames in data[offset:limit] (frame length <= 0 ends them); last_length gets the aligned
# length of the last one
cdef int64_t walk_frames(const uint8_t *data, int64_t offset, int64_t limit, int64_t *last_length) noexcept nogil
