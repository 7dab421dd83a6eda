# SPDX-License-Identifier: Apache-2.0
# PublicationLimit: a network publication's publisher limit, moved by the conductor every duty cycle in compiled code.
from libc.stdint cimport int64_t

from aeron._core.logbuffer cimport LogBuffers
from aeron._core.term_scanner cimport LogCleaner

cdef enum:
    LIMIT_PYTHON = -1               # the update is Python's (nothing was changed)


cdef class PublicationLimit:
    cdef LogBuffers log
    cdef public LogCleaner cleaner  # the publication's: it cleans behind the slowest reader
    cdef list _counters             # pub-pos, pub-lmt, snd-pos, kept alive
    cdef int64_t *pub_pos
    cdef int64_t *pub_lmt
    cdef int64_t *snd_pos
    cdef int64_t **spies            # the sub-pos of the spies that hold it back (not resting)
    cdef Py_ssize_t spy_working
    cdef list _spies                # the AtomicCounters behind spies, kept alive
    cdef public Py_ssize_t spy_count            # every spy, resting or not (spies simulate a connection)
    cdef public bint active                     # the publication is ACTIVE
    cdef public bint has_receivers
    cdef public bint spies_simulate_connection
    cdef public bint python_only                # a flow control whose required receivers only Python can tell
    cdef public int64_t trip_limit
    cdef public int64_t consumer_position
    cdef readonly int64_t window_length
    cdef readonly int64_t trip_gain
    cdef readonly int64_t term_length

    cdef int run(self) except -2
