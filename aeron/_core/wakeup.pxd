# SPDX-License-Identifier: Apache-2.0
# Wake-up board: a small side file in the aeron dir where sleeping agents say what wakes them, and the writers
# that have just made work for them (an offer, a command, an image write) send one datagram to each sleeper.
# Layout and protocol: wakeup.pyx's docstring and docs/wakeup.md.
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int32_t, int64_t, uint8_t

from aeron._core.atomic cimport fence_full, load_acquire_i32

cdef enum:
    STREAM_BITS_C = 59                # mask bits 0..58: subscribers, by stream id modulo 59; 59: our client
                                      # conductors; 60..62: driver agents; 63: spies


cdef class WakeupBoard:
    cdef uint8_t *base                # the mapped side file (FILE_LENGTH bytes)
    cdef Py_buffer _pin               # export on the mapping, so it cannot be unmapped under us
    cdef bint _has_pin
    cdef readonly bint closed
    cdef int send_fd                  # unbound AF_UNIX datagram socket the wake-ups go out on
    cdef object _send_socket
    cdef readonly object mapping
    cdef readonly int64_t wakeups_sent   # datagrams this process sent (diagnostics, tests)

    cdef void wake(self, int64_t mask) noexcept nogil
    cdef void _wake_slot(self, uint8_t *slot, int32_t state) noexcept nogil
    cdef void notify(self, int64_t mask) noexcept nogil      # a writer's signal: fence, parked count, wake
    cdef int _check(self) except -1


cdef class WakeSignal:
    # What a writer holds: its board and the mask of the sleepers its writes concern. notify() costs a full
    # fence and one load while no one sleeps (the compiled writers call it; Python calls signal()).
    cdef readonly WakeupBoard board
    cdef int32_t *parked
    cdef readonly int64_t mask

    cdef inline void notify(self) noexcept nogil:
        fence_full()
        if load_acquire_i32(self.parked) != 0:
            self.board.wake(self.mask)
