# SPDX-License-Identifier: Apache-2.0
# A driver thread's spin between duty cycles in compiled code: waits for offered data or a datagram.
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t

from aeron._core.poll cimport pollfd
from aeron._core.udp_transport cimport sockaddr_storage


cdef class DataSpin:
    cdef list _passes               # the SendPass objects watched: kept alive, their slots read
    cdef pollfd *_fds
    cdef int _fd_count
    cdef int _fd_capacity
    cdef int _control_count         # the first this many fds: a sender's control sockets
    cdef list _watched              # the AtomicCounter objects watched: kept alive, their values read
    cdef int64_t **_watch_addrs
    cdef int64_t *_watch_values     # each one's value when set() was called
    cdef int _watch_count
    cdef int _watch_capacity
    cdef list _grouped              # the AtomicCounter objects of the groups, kept alive
    cdef int64_t **_group_addrs     # every group's counters, one group after another
    cdef int *_group_ends           # where each group's counters end in _group_addrs
    cdef int64_t *_group_thresholds # a group is found once every one of its counters is at its threshold or past it
    cdef int _group_count
    cdef int _group_capacity
    cdef int _grouped_capacity
    cdef int64_t _deadline_ns       # CLOCK_MONOTONIC time from which a probe finds something; 0: none
    cdef list _group_passes         # per group: None, or the RebuildPass of the image whose readers the group holds
    cdef bint _has_group_passes
    cdef bint _gaps_covered         # every image a receive pass may open a gap in has its rebuild pass in a group
    cdef readonly int statuses      # rebuild passes the last backoff ran itself
    cdef readonly int status_work   # of those, the ones that sent a status message or a NAK
    cdef list _receives             # per receive socket (the fds after the control ones): a receive pass or None
    cdef list _controls             # per control socket: its control pass (ControlFrameReader, UdpTransport) or None
    cdef readonly int controls      # control passes the last backoff ran itself
    cdef readonly int64_t control_read  # the datagrams they read
    cdef readonly int control_index # the control socket whose last pass left records for Python (-1: none)
    cdef unsigned char *_receive_bound  # per receive socket: 1 when it has a receive pass
    cdef int _receive_capacity
    cdef readonly int receives      # receive passes the last backoff ran itself
    cdef readonly int64_t received  # the datagrams they read
    cdef readonly int event_index   # the receive socket whose last pass left events for Python (-1: none)
    cdef readonly int64_t rounds    # rounds of the last wait (tests, measurements)
    cdef readonly int steps         # steps of the last backoff that found nothing before its verdict
    cdef readonly int sends         # send passes the last backoff ran itself
    cdef readonly int64_t sent      # the bytes they sent
    cdef readonly int64_t passes_until_ns   # the last backoff's bound on passes at its end (0: none)
    # run_data's view of _passes and of the receive passes, for its loop with no GIL: borrowed references (the
    # lists _passes and _receives keep the objects alive)
    cdef PyObject **_pass_refs
    cdef int _pass_count
    cdef int _pass_capacity
    cdef uint64_t *_pass_reads          # per pass: the receive sockets its datagrams may land in (bit j: the j-th
                                        # after the control ones; every bit: all of them), read right after it sends
    cdef PyObject **_rx_dispatchers     # per receive socket: its pass's DataPacketDispatcher, NULL: no receive pass
    cdef PyObject **_rx_transports
    cdef int64_t *_rx_destinations
    cdef sockaddr_storage *_rx_local    # per receive socket: the address it is bound to
    cdef unsigned char *_rx_local_known # per receive socket: 1 when _rx_local holds it
    cdef int _rx_failed_index           # the receive socket whose receive failed in the last data loop
    cdef int _rx_failed_errno           # what it returned (-errno)
    cdef readonly int data_passes       # passes of the last run_data that moved data
    cdef readonly int64_t data_idle_ns  # how long the last run_data waited after its last such pass
    cdef readonly bint handed_back      # the last run_data stopped at something for the caller's Python half
    cdef readonly int64_t unsignalled   # wake-up bits the last run_data's receive passes inserted for and did not signal
    cdef int _data_loop(self, int64_t wait_ns, int64_t spin_ns, int passes_left, int64_t defer_ns,
                        bint can_send) noexcept nogil
    cdef void _count_pass(self, int64_t got, int64_t now_ns, int64_t *last) noexcept nogil
    cdef int _probe(self) except -1
    cdef int _set_groups(self, groups) except -1
    cdef int _set_receives(self, receives, int count) except -1
    cdef int _check_sockets(self, passes, fds, int control, receives, controls) except -1
    cdef int64_t _control_pass(self, int64_t now_ns, bint *hand_back) except -1
    cdef bint _controls_bound(self) noexcept
    cdef bint _prepare_sends(self) except -1
    cdef void _aim_reads(self) noexcept
    cdef void _clear_passes(self) noexcept
    cdef int _check_watch(self, counters, groups, int64_t deadline_ns) except -1
    cdef int64_t _receive_pass(self, int64_t now_ns, bint *hand_back) except -1
    cdef bint _counter_moved(self) noexcept nogil
    cdef bint _group_reached(self, int g, int start) noexcept nogil
    cdef int _moved_kind(self) except -1
    cdef bint _pass_due(self, int g, bint reached, int64_t *now_ns) noexcept
    cdef int _status_pass(self, int64_t now_ns, bint *hand_back) except -1
    cdef bint _moved(self) noexcept nogil      # a watched counter is off the value it had at set(), a group at its
                                               # threshold, or the deadline come (a rebuild pass's group as any)
