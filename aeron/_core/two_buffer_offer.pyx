# SPDX-License-Identifier: Apache-2.0
"""One message gathered from two buffers (Aeron's ``Publication.offer(bufferOne, offsetOne, lengthOne, bufferTwo,
offsetTwo, lengthTwo, reservedValueSupplier)``): a protocol header and the application's payload offered together
without joining them first, as Aeron Cluster's ingress and egress prefix every message with a session header.

It is one compiled call with no allocation: both ranges are taken from the buffers in place (``offerv`` would need
a slice object for a payload range), the appender's own ``_append`` writes them, and its wake-up signal is given
as its ``offer`` gives it.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, int64_t, uint8_t

from aeron._core.atomic_buffer cimport check_span
from aeron._core.term_appender cimport (APPEND_BACK_PRESSURED, APPEND_CLOSED, TermAppender, appender_iov_t)

cdef int64_t CONDUCTOR_WAKE_MASK = 1 << 62     # as term_appender's: the conductor parks on this bit


cdef int64_t term_appender_offer_two(TermAppender appender, const uint8_t *one, Py_ssize_t length_one,
                                     const uint8_t *two, Py_ssize_t length_two, object supplier) except? -100:
    if appender.closed:
        return APPEND_CLOSED
    cdef appender_iov_t iov[2]
    appender._check_length(length_one + length_two)
    iov[0].base = one
    iov[0].length = length_one
    iov[1].base = two
    iov[1].length = length_two
    cdef int64_t result = appender._append(iov, <int32_t>(length_one + length_two), supplier)
    if appender._wake is not None:
        if result > 0:
            appender._wake.notify()
        elif result == APPEND_BACK_PRESSURED:
            appender._wake.board.signal(CONDUCTOR_WAKE_MASK)
    return result


def two_buffer_offer(TermAppender appender not None, buffer_one, Py_ssize_t offset_one, Py_ssize_t length_one,
                     buffer_two, Py_ssize_t offset_two=0, Py_ssize_t length_two=-1, reserved_value_supplier=None):
    """Append ``buffer_one[offset_one:offset_one + length_one]`` followed by ``buffer_two[offset_two:offset_two +
    length_two]`` as one message (a length of -1 means to the buffer's end), fragmenting it over the appender's
    ``max_payload_length`` as ``offer`` does.

    Returns the new stream position (> 0) or NOT_CONNECTED, BACK_PRESSURED, ADMIN_ACTION (retry), CLOSED or
    MAX_POSITION_EXCEEDED. Raises InvalidArgumentError (too long, bad length) or OutOfBoundsError (a range outside
    its buffer).
    """
    if appender.closed:
        return APPEND_CLOSED
    cdef Py_buffer one
    cdef Py_buffer two
    PyObject_GetBuffer(buffer_one, &one, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(buffer_two, &two, PyBUF_SIMPLE)
        try:
            length_one = check_span(offset_one, length_one, one.len)
            length_two = check_span(offset_two, length_two, two.len)
            return term_appender_offer_two(appender, <const uint8_t *>one.buf + offset_one, length_one,
                                           <const uint8_t *>two.buf + offset_two, length_two,
                                           reserved_value_supplier)
        finally:
            PyBuffer_Release(&two)
    finally:
        PyBuffer_Release(&one)
