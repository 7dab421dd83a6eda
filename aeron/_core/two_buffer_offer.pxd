# SPDX-License-Identifier: Apache-2.0
# One message gathered from two ranges (Aeron's two-buffer Publication.offer): for compiled callers that prefix a
# protocol header to a payload (a cluster session's messages) without joining them.
from libc.stdint cimport int64_t, uint8_t
from aeron._core.term_appender cimport TermAppender

# Append one[0:length_one] then two[0:length_two] as one message through the appender (its length check, its
# wake-up signal); the new position or a negative status (CLOSED when the appender is closed).
cdef int64_t term_appender_offer_two(TermAppender appender, const uint8_t *one, Py_ssize_t length_one,
                                     const uint8_t *two, Py_ssize_t length_two, object supplier) except? -100
