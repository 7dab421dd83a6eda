# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""PublicationLimit: the conductor's per duty cycle update of a network publication's publisher position and limit
(aeron_network_publication_update_pub_pos_and_lmt), in compiled code, with the same decisions as
NetworkPublication.update_pub_pos_and_lmt's Python path: pub-pos set from the log's tail; while connected (receivers
and the flow control's required ones, or spies that simulate a connection) the limit a window past the slowest of
the sender position and the working spies once that passes the trip limit, the log cleaned a term behind it; not
connected, a limit ahead of the sender position is left to Python (the log's connected flag flips: once).

The Python side keeps what it reads in step (the state, has_receivers, the spies' positions) and shares the trip limit
and consumer position through it. A flow control whose required receivers only Python can tell (a group's minimum
size) makes every update Python's (``python_only``).
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc

from aeron._core.atomic cimport load_acquire_i64, store_release_i64
from aeron._core.counters cimport AtomicCounter
from aeron._core.logbuffer cimport LogBuffers
cimport aeron._core.logbuffer_descriptor as ld

HAND_BACK = LIMIT_PYTHON


cdef class PublicationLimit:
    """``PublicationLimit(log, pub_pos, pub_lmt, snd_pos, window_length)``: the publication's log and its pub-pos,
    pub-lmt and snd-pos counters, and the publisher window (the trip gain is an eighth of it)."""

    def __init__(self, LogBuffers log not None, AtomicCounter pub_pos not None, AtomicCounter pub_lmt not None,
                 AtomicCounter snd_pos not None, int64_t window_length):
        log.check_open()
        for counter in (pub_pos, pub_lmt, snd_pos):
            counter._check()
        self.log = log
        self._counters = [pub_pos, pub_lmt, snd_pos]
        self.pub_pos = pub_pos.addr
        self.pub_lmt = pub_lmt.addr
        self.snd_pos = snd_pos.addr
        self.window_length = window_length
        self.trip_gain = window_length // 8
        self.term_length = log.term_length
        self._spies = []
        self.active = True

    def __dealloc__(self):
        free(self.spies)

    def set_spies(self, list positions not None, Py_ssize_t count):
        """The sub-pos counters of the spies that hold the publication back (not resting), and how many spies it
        has in all; called whenever they change (conductor thread, as the updates)."""
        cdef Py_ssize_t i, working = len(positions)
        cdef int64_t **table = NULL
        cdef AtomicCounter counter
        for counter in positions:
            counter._check()
        if working:
            table = <int64_t **>malloc(working * sizeof(int64_t *))
            if table == NULL:
                raise MemoryError()
            for i in range(working):
                table[i] = (<AtomicCounter>positions[i]).addr
        free(self.spies)
        self.spies = table
        self.spy_working = working
        self._spies = list(positions)
        self.spy_count = count

    def update(self):
        """One duty cycle's update: 1 when the limit moved, 0 when not, HAND_BACK (-1, nothing changed) when it is
        Python's."""
        return self.run()

    cdef int run(self) except -2:
        cdef int64_t snd_pos, min_position, position, new_limit, target, raw_tail
        cdef uint8_t *meta
        cdef Py_ssize_t i
        if self.python_only or self.cleaner is None:
            return LIMIT_PYTHON
        if not self.active:
            return 0
        self.log.check_open()
        snd_pos = load_acquire_i64(self.snd_pos)
        if not (self.has_receivers or (self.spies_simulate_connection and self.spy_count > 0)):
            if load_acquire_i64(self.pub_lmt) > snd_pos:
                return LIMIT_PYTHON         # the connection is over: the log's flag flips, in Python
        meta = self.log.meta
        raw_tail = ld.raw_tail_volatile(meta, ld.index_by_term_count(ld.active_term_count_volatile(meta)))
        store_release_i64(self.pub_pos, ld.compute_position(
            ld.term_id_of(raw_tail), ld.term_offset_of(raw_tail, self.log.term_length),
            self.log.position_bits_to_shift, self.log.initial_term_id))
        if not (self.has_receivers or (self.spies_simulate_connection and self.spy_count > 0)):
            return 0
        min_position = snd_pos
        for i in range(self.spy_working):
            position = load_acquire_i64(self.spies[i])
            if position < min_position:
                min_position = position
        self.consumer_position = snd_pos
        new_limit = min_position + self.window_length
        if new_limit < self.trip_limit:
            return 0
        target = min_position - self.term_length
        if self.cleaner.clean_position < target:
            self.cleaner.clean(target)
        store_release_i64(self.pub_lmt, new_limit)
        self.trip_limit = new_limit + self.trip_gain
        return 1
