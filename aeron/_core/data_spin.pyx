# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""DataSpin: a driver thread's spin between duty cycles, in compiled code (docs/wakeup.md).

``set(passes, fds, counters)`` (the driver thread, after each whole duty cycle) takes the send endpoints' compiled
send passes, the receive sockets and, optionally, counters whose every move matters (the subscriber positions of the
images a receiver rebuilds: a reader's progress is what makes a status message due), groups of counters that matter
only once all of them reach a threshold (the readers of an image past the point where its next status message is
due), and a deadline (the next timer of the receiver's images). ``wait(timeout_ns)`` then, with
the GIL released, watches them until one has work or the time is up: a publication of a pass with a frame at its
sender position and room under its sender limit (data offered and not yet sent), a socket with a datagram waiting
(``poll`` with no timeout), or a counter no longer at the value it had at ``set``. It returns True at once when there
is work, for the caller to run the data half of its duty cycle in one go; it sends and reads nothing itself. Each
round costs a few loads per publication and counter and one ``poll`` system call, against several microseconds of
Python for a data half that finds nothing.

``backoff(pause_steps, yield_steps, ring, queues)`` runs a backoff idle strategy's spin and yield phases as one call:
a probe per step (also a record in the to-driver ``ring`` or in one of the command ``queues``), a pause or a
``sched_yield`` between probes, back to the caller as soon as a probe finds something. It may run bound send passes
and receive passes itself (a receive endpoint's compiled dispatch of one batch), and control passes (a send
endpoint's compiled read of one batch of status messages, which it applies to the pass's limits), each as work done.
"""
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp

from aeron._core.atomic cimport cpu_pause, get_and_add_i64, load_acquire_i64
from aeron._core.control_dispatcher cimport ControlFrameReader
from aeron._core.counters cimport AtomicCounter
from aeron._core.data_dispatcher cimport DataPacketDispatcher
from aeron._core.rebuild_pass cimport TRACK_PYTHON, TRACK_WORK, RebuildPass
from aeron._core.ring_buffer cimport ManyToOneRingBuffer, mpsc_rb_size, mpsc_rb_t
from aeron._core.send_pass cimport PassSlot, SendPass
from aeron._core.term_scanner cimport term_scanner_scan_for_availability
from aeron._core.udp_transport cimport (
    AF_INET, AF_INET6, UdpTransport, nothing_sent, sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage, socklen_t,
)

from aeron.common.errors import InvalidArgumentError


cdef extern from "<time.h>" nogil:
    struct timespec:
        long tv_sec
        long tv_nsec
    int CLOCK_MONOTONIC
    int clock_gettime(int clock_id, timespec *tp)

from aeron._core.poll cimport POLLIN, poll

cdef extern from "<poll.h>" nogil:
    short POLLNVAL

cdef extern from "<sched.h>" nogil:
    int sched_yield()

cdef extern from "<sys/socket.h>" nogil:
    int getsockname(int fd, sockaddr *addr, socklen_t *addr_len)


# DataSpin.probe's verdicts (0: nothing)
PROBE_SEND = 1
PROBE_OTHER = 2
PROBE_CONTROL = 3
PROBE_RECEIVE = 4
PROBE_STATUS = 5

cdef enum:
    # run_data's data loop: why it stopped
    DATA_TIMED_OUT = 0
    DATA_BUDGET = 1
    DATA_HAND_BACK = 2
    DATA_RECEIVE_FAILED = 3

cdef enum:
    MOVED_NOTHING = 0
    MOVED_OTHER = 1                 # a watched counter, a group without a rebuild pass, the deadline
    MOVED_STATUS = 2                # only groups whose rebuild pass is due


cdef uint64_t READ_EVERY = <uint64_t>-1       # a pass's reads: every receive socket


cdef bint _lands_on(const sockaddr_storage *to, const sockaddr_storage *local) noexcept nogil:
    """Whether a datagram sent to ``to`` may be received by a socket bound to ``local``: the same port, and the same
    address or a wildcard one (a dual-stack IPv6 socket on the port is taken to get IPv4 too). Taking one too many
    costs a receive that finds nothing; missing one, a round of the spin until its ``poll`` finds the datagram."""
    cdef const sockaddr_in *t4
    cdef const sockaddr_in *l4
    cdef const sockaddr_in6 *t6
    cdef const sockaddr_in6 *l6
    cdef int i
    cdef bint wildcard = True
    if local.ss_family == AF_INET6:
        l6 = <const sockaddr_in6 *>local
        for i in range(16):
            if l6.sin6_addr.s6_addr[i] != 0:
                wildcard = False
                break
        if to.ss_family == AF_INET:
            return (<const sockaddr_in *>to).sin_port == l6.sin6_port
        if to.ss_family != AF_INET6:
            return False
        t6 = <const sockaddr_in6 *>to
        return t6.sin6_port == l6.sin6_port and (wildcard or memcmp(&t6.sin6_addr, &l6.sin6_addr, 16) == 0)
    if local.ss_family != AF_INET or to.ss_family != AF_INET:
        return False
    t4 = <const sockaddr_in *>to
    l4 = <const sockaddr_in *>local
    return t4.sin_port == l4.sin_port and (l4.sin_addr.s_addr == 0 or t4.sin_addr.s_addr == l4.sin_addr.s_addr)


cdef void *_grown(void *table, size_t size) except NULL:
    """``table`` reallocated to ``size`` bytes (MemoryError when it cannot be: ``table`` is then kept as it was)."""
    cdef void *grown = realloc(table, size)
    if grown == NULL:
        raise MemoryError()
    return grown


cdef inline int64_t _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1_000_000_000 + ts.tv_nsec


cdef inline bint _offered(PassSlot *slot) noexcept nogil:
    """A whole frame (or padding) written at the sender position that flow control lets go: what the send pass would
    send. A frame that does not fit the window left (a status message's window rarely ends on a frame boundary) is
    not, nor is one still being written, or the spin would find work that the pass cannot send."""
    cdef int64_t position = load_acquire_i64(slot.snd_pos)
    cdef int64_t window = load_acquire_i64(slot.snd_lmt) - position
    cdef int32_t padding
    if window <= 0:
        return False
    cdef int32_t offset = <int32_t>(position & (slot.term_length - 1))
    return term_scanner_scan_for_availability(slot.terms[(position >> slot.position_bits_to_shift) % 3] + offset,
                                              slot.term_length - offset,
                                              <int32_t>(window if window < slot.mtu else slot.mtu), &padding) > 0


cdef class DataSpin:
    def __cinit__(self):
        self._passes = []
        self._fds = NULL
        self._fd_count = 0
        self._fd_capacity = 0
        self._watched = []
        self._watch_addrs = NULL
        self._watch_values = NULL
        self._watch_count = 0
        self._watch_capacity = 0
        self._grouped = []
        self._group_addrs = NULL
        self._group_ends = NULL
        self._group_thresholds = NULL
        self._group_count = 0
        self._group_capacity = 0
        self._grouped_capacity = 0
        self._deadline_ns = 0
        self._group_passes = []
        self._has_group_passes = False
        self._gaps_covered = False
        self.statuses = 0
        self.status_work = 0
        self._receives = []
        self._controls = []
        self.controls = 0
        self.control_read = 0
        self.control_index = -1
        self._receive_bound = NULL
        self._receive_capacity = 0
        self.receives = 0
        self.received = 0
        self.event_index = -1
        self.rounds = 0
        self.steps = 0
        self.sends = 0
        self.passes_until_ns = 0
        self.sent = 0
        self._pass_refs = NULL
        self._pass_reads = NULL
        self._pass_count = 0
        self._pass_capacity = 0
        self._rx_dispatchers = NULL
        self._rx_transports = NULL
        self._rx_destinations = NULL
        self._rx_local = NULL
        self._rx_local_known = NULL
        self._rx_failed_index = -1
        self._rx_failed_errno = 0
        self.data_passes = 0
        self.data_idle_ns = 0
        self.handed_back = False
        self.unsignalled = 0

    def __dealloc__(self):
        free(self._fds)
        free(self._watch_addrs)
        free(self._watch_values)
        free(self._group_addrs)
        free(self._group_ends)
        free(self._group_thresholds)
        free(self._receive_bound)
        free(self._pass_refs)
        free(self._pass_reads)
        free(self._rx_dispatchers)
        free(self._rx_transports)
        free(self._rx_destinations)
        free(self._rx_local)
        free(self._rx_local_known)

    def set(self, passes, fds, counters=(), int control=0, groups=(), int64_t deadline_ns=0, receives=(),
            controls=(), bint gaps_covered=False):
        """Watch ``passes`` (SendPass objects), ``fds`` (socket descriptors) and ``counters`` (AtomicCounter objects,
        each for a move from its value now) from now on; replaces all of them. The first ``control`` of ``fds`` are a
        sender's control sockets (status messages and NAKs): ``probe`` tells a datagram there alone apart.
        ``groups``: (threshold, counters) pairs, each found once every one of its counters is at ``threshold`` or past
        it (an empty group never); a group may carry a third item, the RebuildPass of the image whose readers its
        counters are (or None), which ``backoff`` may run instead of handing the group back (see ``backoff``).
        ``deadline_ns``: a CLOCK_MONOTONIC time from which every probe finds something (0: none). ``receives``: empty,
        or one entry per socket after the control ones, None or the receive pass of that socket, (DataPacketDispatcher,
        UdpTransport, destination id): ``probe`` tells datagrams on such sockets alone apart and ``backoff`` may run
        their passes. ``controls``: empty, or one entry per control socket, None
        or its control pass, (ControlFrameReader in fast mode, UdpTransport): ``backoff`` may run those.
        ``gaps_covered``: a receive pass that opens a gap in an image need not hand back, every image with readers
        having its rebuild pass in ``groups`` (which then runs for the gap). ``set_sockets`` and ``set_watch`` each
        replace one half."""
        self._check_sockets(passes, fds, control, receives, controls)
        self._check_watch(counters, groups, deadline_ns)
        self.set_sockets(passes, fds, control, receives, controls)
        self.set_watch(counters, groups, deadline_ns, gaps_covered)

    def set_sockets(self, passes, fds, int control=0, receives=(), controls=()):
        """``set``'s passes, sockets, receive and control passes alone (what changes only with a driver thread's
        endpoints and publications); the counters, groups and deadline watched stay."""
        cdef int n = len(fds), i
        self._check_sockets(passes, fds, control, receives, controls)
        self._set_receives(receives, n - control)
        self._controls = list(controls)
        if n > self._fd_capacity:
            self._fds = <pollfd *>_grown(self._fds, n * sizeof(pollfd))
            self._fd_capacity = n
        for i in range(n):
            self._fds[i].fd = int(fds[i])
            self._fds[i].events = POLLIN
            self._fds[i].revents = 0
        self._fd_count = n
        self._control_count = control
        cdef list kept = list(passes)
        cdef int p = len(kept)
        if p > self._pass_capacity:
            # grown before the old passes go: a MemoryError here leaves the borrowed references to live objects
            self._pass_refs = <PyObject **>_grown(self._pass_refs, p * sizeof(PyObject *))
            self._pass_reads = <uint64_t *>_grown(self._pass_reads, p * sizeof(uint64_t))
            self._pass_capacity = p
        self._passes = kept
        for i in range(p):
            self._pass_refs[i] = <PyObject *>self._passes[i]
            self._pass_reads[i] = READ_EVERY            # until run_data aims them (_aim_reads)
        self._pass_count = p

    def set_watch(self, counters=(), groups=(), int64_t deadline_ns=0, bint gaps_covered=False):
        """``set``'s counters (their values now the reference), groups, deadline and ``gaps_covered`` alone; the
        passes and sockets stay."""
        cdef int c = len(counters), i
        cdef AtomicCounter counter
        self._check_watch(counters, groups, deadline_ns)
        self._set_groups(groups)
        self._deadline_ns = deadline_ns
        self._gaps_covered = gaps_covered
        if c > self._watch_capacity:
            self._watch_addrs = <int64_t **>_grown(self._watch_addrs, c * sizeof(int64_t *))
            self._watch_values = <int64_t *>_grown(self._watch_values, c * sizeof(int64_t))
            self._watch_capacity = c
        self._watched = list(counters)
        for i in range(c):
            counter = <AtomicCounter>self._watched[i]
            self._watch_addrs[i] = counter.addr
            self._watch_values[i] = load_acquire_i64(counter.addr)
        self._watch_count = c

    cdef int _check_sockets(self, passes, fds, int control, receives, controls) except -1:
        cdef int n = len(fds)
        if control < 0 or control > n:
            raise InvalidArgumentError(f"control must be within 0..{n}, got {control}")
        for send_pass in passes:
            if not isinstance(send_pass, SendPass):
                raise InvalidArgumentError(f"not a SendPass: {send_pass!r}")
        if len(receives) and len(receives) != n - control:
            raise InvalidArgumentError(f"receives: one per receive socket ({n - control}), got {len(receives)}")
        for entry in receives:
            if entry is None:
                continue
            if not (isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[0], DataPacketDispatcher) and
                    isinstance(entry[1], UdpTransport) and isinstance(entry[2], int)):
                raise InvalidArgumentError(f"not a receive pass (DataPacketDispatcher, UdpTransport, id): {entry!r}")
        if len(controls) and len(controls) != control:
            raise InvalidArgumentError(f"controls: one per control socket ({control}), got {len(controls)}")
        for entry in controls:
            if entry is None:
                continue
            if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], ControlFrameReader) and
                    isinstance(entry[1], UdpTransport)):
                raise InvalidArgumentError(f"not a control pass (ControlFrameReader, UdpTransport): {entry!r}")
        return 0

    cdef int _check_watch(self, counters, groups, int64_t deadline_ns) except -1:
        for item in counters:
            if not isinstance(item, AtomicCounter):
                raise InvalidArgumentError(f"not an AtomicCounter: {item!r}")
            (<AtomicCounter>item)._check()
        for group in groups:
            if not (isinstance(group, tuple) and len(group) in (2, 3) and isinstance(group[0], int) and
                    (len(group) == 2 or group[2] is None or isinstance(group[2], RebuildPass))):
                raise InvalidArgumentError(f"not a group (threshold, counters[, RebuildPass]): {group!r}")
            for item in group[1]:
                if not isinstance(item, AtomicCounter):
                    raise InvalidArgumentError(f"not an AtomicCounter: {item!r}")
                (<AtomicCounter>item)._check()
        if deadline_ns < 0:
            raise InvalidArgumentError(f"deadline_ns must be >= 0, got {deadline_ns}")
        return 0

    cdef int _set_groups(self, groups) except -1:
        cdef list thresholds = []
        cdef list members = []
        cdef list ends = []
        cdef list rebuilds = []
        cdef int g, i, total
        for group in groups:
            group_counters = list(group[1])
            if not group_counters:
                continue
            thresholds.append(int(group[0]))
            members.extend(group_counters)
            ends.append(len(members))
            rebuilds.append(group[2] if len(group) == 3 else None)
        g = len(thresholds)
        total = len(members)
        if g > self._group_capacity:
            self._group_ends = <int *>_grown(self._group_ends, g * sizeof(int))
            self._group_thresholds = <int64_t *>_grown(self._group_thresholds, g * sizeof(int64_t))
            self._group_capacity = g
        if total > self._grouped_capacity:
            self._group_addrs = <int64_t **>_grown(self._group_addrs, total * sizeof(int64_t *))
            self._grouped_capacity = total
        for i in range(g):
            self._group_thresholds[i] = thresholds[i]
            self._group_ends[i] = ends[i]
        for i in range(total):
            self._group_addrs[i] = (<AtomicCounter>members[i]).addr
        self._grouped = members
        self._group_count = g
        self._group_passes = rebuilds
        self._has_group_passes = any(rebuild is not None for rebuild in rebuilds)
        return 0

    cdef int _set_receives(self, receives, int count) except -1:
        cdef list entries = list(receives)
        cdef int i
        if count > self._receive_capacity:
            self._receive_bound = <unsigned char *>_grown(self._receive_bound, count)
            self._rx_dispatchers = <PyObject **>_grown(self._rx_dispatchers, count * sizeof(PyObject *))
            self._rx_transports = <PyObject **>_grown(self._rx_transports, count * sizeof(PyObject *))
            self._rx_destinations = <int64_t *>_grown(self._rx_destinations, count * sizeof(int64_t))
            self._rx_local = <sockaddr_storage *>_grown(self._rx_local, count * sizeof(sockaddr_storage))
            self._rx_local_known = <unsigned char *>_grown(self._rx_local_known, count)
            self._receive_capacity = count
        cdef UdpTransport transport
        cdef socklen_t length
        for i in range(count):
            self._receive_bound[i] = 1 if entries and entries[i] is not None else 0
            self._rx_local_known[i] = 0
            if self._receive_bound[i]:
                entry = entries[i]
                transport = <UdpTransport>entry[1]
                self._rx_dispatchers[i] = <PyObject *>entry[0]
                self._rx_transports[i] = <PyObject *>transport
                self._rx_destinations[i] = entry[2]
                length = sizeof(sockaddr_storage)
                # where a send of this thread lands when it is aimed here (run_data reads it right after the send)
                if not transport.closed and \
                        getsockname(transport.fd, <sockaddr *>&self._rx_local[i], &length) == 0:
                    self._rx_local_known[i] = 1
            else:
                self._rx_dispatchers[i] = NULL
                self._rx_transports[i] = NULL
                self._rx_destinations[i] = 0
        self._receives = entries
        return 0

    cdef int64_t _receive_pass(self, int64_t now_ns, bint *hand_back) except -1:
        """One batch from each receive socket the last probe found readable (every one of them has a pass): the
        datagrams read. ``hand_back`` when a pass left events for Python (``event_index`` names it; its slots are
        valid until its next receive, so no other socket is read) or opened a gap (the loss scan should see it)."""
        cdef int j, control = self._control_count
        cdef int64_t total = 0
        cdef DataPacketDispatcher dispatcher
        for j in range(control, self._fd_count):
            if not (self._fds[j].revents & POLLIN):
                continue
            entry = self._receives[j - control]
            dispatcher = <DataPacketDispatcher>entry[0]
            total += dispatcher.poll(entry[1], entry[2], now_ns, None)
            if dispatcher.event_count:
                self.event_index = j - control
                hand_back[0] = True
                break
            if dispatcher.gaps and not self._gaps_covered:
                hand_back[0] = True
        return total

    cdef int64_t _control_pass(self, int64_t now_ns, bint *hand_back) except -1:
        """One batch from each control socket the last probe found readable (every one of them has a pass): the
        datagrams read. ``hand_back`` when a pass left records for Python (``control_index`` names it; the records
        and their slots are valid until its next read, so no other socket is read)."""
        cdef int j
        cdef int64_t total = 0
        cdef ControlFrameReader reader
        for j in range(self._control_count):
            if not (self._fds[j].revents & POLLIN):
                continue
            entry = self._controls[j]
            reader = <ControlFrameReader>entry[0]
            total += reader.poll(entry[1], now_ns)
            if reader.record_count:
                self.control_index = j
                hand_back[0] = True
                break
        return total

    cdef void _aim_reads(self) noexcept:
        """Each bound pass's reads (``_pass_reads``), its transport aimed already (``_prepare_sends``): the receive
        sockets with a pass that its destination lands on, none when it lands on none of them (a remote receiver's);
        every one for a multi-destination pass, or when a socket past the 64th or one whose address is not known
        might be it."""
        cdef int i, j, control = self._control_count
        cdef uint64_t reads
        cdef SendPass send_pass
        for i in range(self._pass_count):
            send_pass = <SendPass>self._pass_refs[i]
            reads = 0
            if send_pass.multi_destination:
                reads = READ_EVERY
            else:
                for j in range(self._fd_count - control):
                    if self._rx_dispatchers[j] == NULL:
                        continue
                    if not self._rx_local_known[j] or j >= 64:
                        reads = READ_EVERY
                        break
                    if _lands_on(&send_pass.bound_transport.destination, &self._rx_local[j]):
                        reads |= <uint64_t>1 << j
            self._pass_reads[i] = reads

    cdef void _clear_passes(self) noexcept:
        # what the send and receive passes of a call did, before it runs any
        self.sends = 0
        self.sent = 0
        self.receives = 0
        self.received = 0
        self.event_index = -1

    cdef bint _prepare_sends(self) except -1:
        """Whether every watched pass is bound (SendPass.bind), each then made ready to run from compiled code."""
        for item in self._passes:
            if (<SendPass>item).bound_transport is None:
                return False
        for item in self._passes:
            (<SendPass>item).prepare_bound()
        return True

    cdef bint _controls_bound(self) noexcept:
        # every control socket with a datagram (or an error) has a control pass
        cdef int j
        if not self._controls:
            return False
        for j in range(self._control_count):
            if self._fds[j].revents and (self._controls[j] is None or self._fds[j].revents & POLLNVAL):
                return False
        return True

    def ready(self):
        """One look, without waiting: True when a watched pass has data to send, a counter has moved or a socket has
        a datagram. For a probe between duty cycles; cheaper than ``wait(0)`` (no allocation, no clock, the GIL
        kept: the ``poll`` has no timeout)."""
        return self.probe() != 0

    def probe(self):
        """``ready()`` told apart, for a probe that may send without a whole duty cycle: 0 when nothing is found,
        PROBE_SEND when the only thing found is data a watched pass can send (no socket has a datagram, no counter
        moved: the send pass alone has work), PROBE_CONTROL when the only datagrams waiting are on the control
        sockets (``set``'s ``control``: what the sender's control poll reads) and no counter moved, whatever the
        passes have, PROBE_RECEIVE when they are only on receive sockets that have a receive pass (``set``'s
        ``receives``), PROBE_STATUS when the only thing found is groups whose rebuild pass is due (its readers at the
        threshold, a gap opened in its image, its deadline come: ``RebuildPass.deadline``), PROBE_OTHER when another
        socket has a datagram, or datagrams wait on both kinds, or a counter moved, a group without a rebuild pass
        reached its threshold or the deadline came."""
        return self._probe()

    cdef int _probe(self) except -1:
        cdef SendPass send_pass
        cdef int j
        cdef int moved = self._moved_kind() if self._has_group_passes else (MOVED_OTHER if self._moved() else 0)
        if moved == MOVED_OTHER:
            return PROBE_OTHER
        if moved == MOVED_STATUS:
            return PROBE_STATUS
        cdef bint control_ready = False, receive_ready = False
        cdef int control = self._control_count
        if self._fd_count > 0 and poll(self._fds, <unsigned long>self._fd_count, 0) > 0:
            for j in range(control):
                if self._fds[j].revents:
                    control_ready = True
                    break
            for j in range(control, self._fd_count):
                if self._fds[j].revents:
                    if not self._receive_bound[j - control] or self._fds[j].revents & POLLNVAL:
                        return PROBE_OTHER
                    receive_ready = True
            if receive_ready:
                return PROBE_OTHER if control_ready else PROBE_RECEIVE
            return PROBE_CONTROL if control else PROBE_OTHER
        for item in self._passes:
            send_pass = <SendPass>item
            for j in range(send_pass.count):
                if _offered(&send_pass.slots[j]):
                    return PROBE_SEND
        return 0

    def backoff(self, int pause_steps, int yield_steps, ManyToOneRingBuffer ring=None, tuple queues=(),
                int sends=0, int full_pause_steps=0, int full_yield_steps=0, int receives=0,
                int64_t passes_until_ns=0, int64_t passes_defer_ns=0, int controls=0, int statuses=0):
        """A backoff idle strategy's remaining spin and yield phases in one call: ``pause_steps`` probes each followed
        by a CPU pause, ``yield_steps`` probes each followed by ``sched_yield`` (the GIL released), then one last
        probe (the strategy's step into parking). A probe is ``probe()``, with PROBE_OTHER also for a record in
        ``ring`` (the to-driver ring: a client command) or in any of ``queues`` (sized containers: the command queues
        of the agents). Returns the first probe's verdict that is not 0, or 0 when all found nothing; ``steps`` then
        says how many steps went by before it (pause_steps + yield_steps + 1 when none found anything), for the
        strategy to count as its own.

        With ``sends`` > 0 and every watched pass bound (SendPass.bind), a PROBE_SEND runs the passes here, up to
        ``sends`` times: each is work done, after which the phases start over (``full_pause_steps`` pauses,
        ``full_yield_steps`` yields, as the strategy after work) and ``steps`` counts from there. ``sends`` and
        ``sent`` say how many passes ran and the bytes they sent (added to each pass's bytes-sent counter). A pass
        that sends nothing (a full socket) or fails ends the call with PROBE_OTHER: the duty cycle retries it and
        reports its error.

        With ``receives`` > 0, a PROBE_RECEIVE runs the receive passes of the readable sockets here (one batch each,
        subscribers woken by the dispatcher), up to ``receives`` times, each as work done as above; ``receives`` and
        ``received`` say how many passes ran and the datagrams they read. A pass that leaves events for Python (a
        SETUP, an unknown session, ...: ``event_index``) or opens a gap in an image ends the call with PROBE_OTHER;
        a receive error is raised (ChannelEndpointError) as the endpoint's poll raises it.

        With ``controls`` > 0, a PROBE_CONTROL whose sockets all have a control pass (``set``'s ``controls``) runs
        those passes here (one batch each: the status messages the reader takes in fast mode move the send passes'
        limits), up to ``controls`` times, each as work done; ``controls`` and ``control_read`` say how many ran and
        the datagrams they read. A pass that leaves records for Python (a NAK, a status message it does not take, an
        error frame: ``control_index``) ends the call with PROBE_OTHER, before that socket is read again.

        With ``statuses`` > 0, a PROBE_STATUS runs the due rebuild passes of the groups here (RebuildPass.run: the
        loss scan, a NAK, the receiver position, the status message), up to ``statuses`` passes in all; those that sent
        something are work done as above. ``statuses`` and ``status_work`` say how many ran and how many sent. A pass
        that hands its image back to Python ends the call with PROBE_OTHER.

        With ``passes_until_ns`` > 0 (a CLOCK_MONOTONIC time), a send, receive or control pass due from then on is not
        run: the
        call ends with PROBE_OTHER (the rest of the caller's duty cycle has waited long enough). With it 0 and
        ``passes_defer_ns`` > 0, the first pass sets it to the pass's time + ``passes_defer_ns`` (the rest of the
        cycle is owed from then). ``passes_until_ns`` says what it was at the end, for the caller's next call."""
        cdef int total = pause_steps + yield_steps
        cdef int step = 0
        cdef int verdict = 0
        cdef int err = 0
        cdef mpsc_rb_t *rb = NULL
        cdef SendPass send_pass
        cdef UdpTransport transport
        cdef int64_t now_ns, bytes_sent, pass_sent
        cdef int64_t got
        cdef bint hand_back = False
        if pause_steps < 0 or yield_steps < 0 or sends < 0 or full_pause_steps < 0 or full_yield_steps < 0 or \
                receives < 0 or passes_until_ns < 0 or passes_defer_ns < 0 or controls < 0 or statuses < 0:
            raise InvalidArgumentError(f"steps, sends, receives and times must be >= 0, got {pause_steps}, "
                                       f"{yield_steps}, {sends}, {full_pause_steps}, {full_yield_steps}, {receives}, "
                                       f"{passes_until_ns}, {passes_defer_ns}, {controls}, {statuses}")
        if ring is not None:
            ring._check()
            rb = &ring.rb
        if sends and not self._prepare_sends():
            sends = 0                       # a pass with nowhere to go: the caller sends them all
        self._clear_passes()
        self.controls = 0
        self.control_read = 0
        self.control_index = -1
        self.statuses = 0
        self.status_work = 0
        while True:
            if rb != NULL and mpsc_rb_size(rb) > 0:
                verdict = PROBE_OTHER
            else:
                for queue in queues:
                    if queue:
                        verdict = PROBE_OTHER
                        break
                else:
                    verdict = self._probe()
            if verdict == PROBE_SEND and self.sends < sends or \
                    verdict == PROBE_RECEIVE and self.receives < receives or \
                    verdict == PROBE_CONTROL and self.controls < controls and self._controls_bound() or \
                    verdict == PROBE_STATUS and self.statuses < statuses:
                now_ns = _now_ns()
                if passes_until_ns == 0:
                    if passes_defer_ns:
                        passes_until_ns = now_ns + passes_defer_ns     # the rest of the cycle owed from now
                elif now_ns >= passes_until_ns:
                    verdict = PROBE_OTHER
                    break
                if verdict == PROBE_SEND:
                    bytes_sent = 0
                    for item in self._passes:
                        send_pass = <SendPass>item
                        transport = send_pass.bound_transport
                        with nogil:
                            pass_sent = send_pass.run(transport, now_ns, &err)
                        if pass_sent:
                            get_and_add_i64(send_pass.bytes_sent, pass_sent)
                            bytes_sent += pass_sent
                        if err:
                            break
                    self.sends += 1
                    self.sent += bytes_sent
                    if err or bytes_sent == 0:
                        verdict = PROBE_OTHER
                        break
                    got = bytes_sent
                elif verdict == PROBE_RECEIVE:
                    got = self._receive_pass(now_ns, &hand_back)
                    if got:
                        self.receives += 1
                        self.received += got
                elif verdict == PROBE_STATUS:
                    got = self._status_pass(now_ns, &hand_back)
                else:
                    got = self._control_pass(now_ns, &hand_back)
                    if got:
                        self.controls += 1
                        self.control_read += got
                if hand_back:
                    verdict = PROBE_OTHER
                    break
                verdict = 0
                if got:
                    # work done: the strategy's phases start over
                    step = 0
                    pause_steps = full_pause_steps
                    total = full_pause_steps + full_yield_steps
                    continue
            if verdict or step == total:
                break
            if step < pause_steps:
                cpu_pause()
            else:
                with nogil:
                    sched_yield()
            step += 1
        self.steps = step if verdict else total + 1
        self.passes_until_ns = passes_until_ns
        return verdict

    cdef bint _pass_due(self, int g, bint reached, int64_t *now_ns) noexcept:
        """Whether group ``g``'s rebuild pass is due: its readers at the threshold, a gap opened in its image since its
        last scan, or its deadline come (``now_ns`` read once, when first needed)."""
        cdef RebuildPass rebuild = <RebuildPass>self._group_passes[g]
        if reached or rebuild.state.entry.gaps != rebuild.gaps_seen:
            return True
        if now_ns[0] == 0:
            now_ns[0] = _now_ns()
        return now_ns[0] >= rebuild.deadline_ns()

    cdef bint _counter_moved(self) noexcept nogil:
        cdef int i
        for i in range(self._watch_count):
            if load_acquire_i64(self._watch_addrs[i]) != self._watch_values[i]:
                return True
        return False

    cdef bint _group_reached(self, int g, int start) noexcept nogil:
        # every counter of group g (from ``start`` in _group_addrs) at its threshold or past it
        cdef int i
        for i in range(start, self._group_ends[g]):
            if load_acquire_i64(self._group_addrs[i]) < self._group_thresholds[g]:
                return False
        return True

    cdef int _moved_kind(self) except -1:
        # _moved with the groups that have a rebuild pass told apart (the GIL held: their passes are read)
        cdef int g, start = 0
        cdef bint reached, due = False
        cdef int64_t now_ns = 0
        if self._counter_moved():
            return MOVED_OTHER
        for g in range(self._group_count):
            reached = self._group_reached(g, start)
            start = self._group_ends[g]
            if self._group_passes[g] is None:
                if reached:
                    return MOVED_OTHER
            elif not due and self._pass_due(g, reached, &now_ns):
                due = True
        if self._deadline_ns != 0:
            if now_ns == 0:
                now_ns = _now_ns()
            if now_ns >= self._deadline_ns:
                return MOVED_OTHER
        return MOVED_STATUS if due else MOVED_NOTHING

    cdef int _status_pass(self, int64_t now_ns, bint *hand_back) except -1:
        """Every due rebuild pass of the groups run once (with the lowest and highest of its readers' positions), its
        group's threshold moved to its next status message's: the passes that sent something. ``hand_back`` when one
        left its image to Python (nothing changed there, nothing more run)."""
        cdef int i, g, start = 0, outcome, work = 0
        cdef int64_t position, lowest, highest
        cdef RebuildPass rebuild
        for g in range(self._group_count):
            if self._group_passes[g] is None:
                start = self._group_ends[g]
                continue
            lowest = (<int64_t>1 << 62)
            highest = 0
            for i in range(start, self._group_ends[g]):
                position = load_acquire_i64(self._group_addrs[i])
                if position < lowest:
                    lowest = position
                if position > highest:
                    highest = position
            start = self._group_ends[g]
            if not self._pass_due(g, lowest >= self._group_thresholds[g], &now_ns):
                continue
            rebuild = <RebuildPass>self._group_passes[g]
            with nogil:
                outcome = rebuild.run(lowest, highest, now_ns)
            self.statuses += 1
            if outcome == TRACK_PYTHON:
                hand_back[0] = True
                break
            self._group_thresholds[g] = rebuild.sm_threshold()
            if outcome == TRACK_WORK:
                work += 1
        self.status_work += work
        return work

    cdef bint _moved(self) noexcept nogil:
        cdef int g, start = 0
        if self._counter_moved():
            return True
        for g in range(self._group_count):
            if self._group_reached(g, start):
                return True
            start = self._group_ends[g]
        return self._deadline_ns != 0 and _now_ns() >= self._deadline_ns

    def wait(self, int64_t timeout_ns):
        """True as soon as a watched pass has data to send or a socket has a datagram, False once ``timeout_ns``
        passed with neither (at least one round either way). The GIL is released meanwhile."""
        cdef list passes = self._passes
        cdef int pass_count = len(passes), i, j
        cdef PassSlot **slots = NULL
        cdef int *slot_counts = NULL
        cdef bint ready = False
        cdef int64_t deadline
        cdef int64_t rounds = 0
        if pass_count:
            slots = <PassSlot **>malloc(pass_count * sizeof(PassSlot *))
            slot_counts = <int *>malloc(pass_count * sizeof(int))
            if slots == NULL or slot_counts == NULL:
                free(slots)
                free(slot_counts)
                raise MemoryError()
            for i in range(pass_count):
                slots[i] = (<SendPass>passes[i]).slots
                slot_counts[i] = (<SendPass>passes[i]).count
        try:
            with nogil:
                deadline = _now_ns() + timeout_ns
                while True:
                    rounds += 1
                    for i in range(pass_count):
                        for j in range(slot_counts[i]):
                            if _offered(&slots[i][j]):
                                ready = True
                                break
                        if ready:
                            break
                    if ready:
                        break
                    if self._moved():
                        ready = True
                        break
                    if self._fd_count and poll(self._fds, <unsigned long>self._fd_count, 0) > 0:
                        ready = True
                        break
                    if _now_ns() >= deadline:
                        break
                    cpu_pause()
        finally:
            free(slots)
            free(slot_counts)
        self.rounds = rounds
        return ready

    def run_data(self, int64_t wait_ns, int64_t spin_ns=0, int passes_left=1, int64_t defer_ns=0):
        """A driver thread's data spin in one call, the GIL released: waits up to ``wait_ns`` (as ``wait``) for data a
        watched pass can send or a datagram on a receive socket, then runs the send passes (bound: SendPass.bind) and
        one batch of the receive passes (``set``'s ``receives``: each dispatcher inserts what it reads and wakes its
        subscribers on its wake board), after a send the receive sockets its destinations land on (a datagram to
        this driver is in its socket when the send returns; the others at the next round's ``poll``, or all of them
        after two sends with no ``poll`` between), and waits on up to ``spin_ns`` after each pass that moved data, until
        ``passes_left`` such passes ran or ``defer_ns`` passed since the first of them. No Python runs from the
        offer seen to the subscriber woken. Returns those passes; ``data_idle_ns`` says how long it then waited with
        nothing (0 when it stopped for its budget), ``sends``/``sent``/``receives``/``received`` what the passes did,
        and ``unsignalled`` the wake-up bits of data inserted that no wake board signalled.

        Stops with ``handed_back`` set, for the caller's own data half, at anything else: a datagram on a socket
        without a receive pass (or an error on it), a counter moved, a pass not bound, failed or sending nothing
        (a full socket), or a receive pass that left events for Python (``event_index``: handled before its socket
        is read again). A receive error is raised as DataPacketDispatcher.poll raises it."""
        cdef int verdict, j
        cdef bint can_send
        cdef DataPacketDispatcher dispatcher
        cdef UdpTransport transport
        cdef int n
        if wait_ns < 0 or spin_ns < 0 or passes_left < 1:
            raise InvalidArgumentError(f"wait_ns and spin_ns must be >= 0 and passes_left >= 1, got {wait_ns}, "
                                       f"{spin_ns}, {passes_left}")
        can_send = self._prepare_sends()    # else a pass with nowhere to go: the caller sends them all
        if can_send:
            self._aim_reads()
        for j in range(self._fd_count - self._control_count):
            if self._rx_transports[j] != NULL:
                (<UdpTransport>self._rx_transports[j])._check()
        self._clear_passes()
        self.data_passes = 0
        self.data_idle_ns = 0
        self.handed_back = False
        self.unsignalled = 0
        self.rounds = 0
        with nogil:
            verdict = self._data_loop(wait_ns, spin_ns, passes_left, defer_ns, can_send)
        if verdict == DATA_RECEIVE_FAILED:
            # as DataPacketDispatcher.poll: a retry without recvmmsg, nothing this time, or the error raised
            j = self._rx_failed_index
            dispatcher = <DataPacketDispatcher>self._rx_dispatchers[j]
            transport = <UdpTransport>self._rx_transports[j]
            n = dispatcher.receive_failed(transport, self._rx_destinations[j], _now_ns(), None, self._rx_failed_errno)
            if n > 0:
                self.receives += 1
                self.received += n
                self.data_passes += 1
                self.unsignalled |= dispatcher.take_unsignalled()
                if dispatcher.event_count:
                    self.event_index = j    # its SETUPs and unknown sessions, handled before the socket is read again
            self.handed_back = True     # the rest of that batch's sockets: the caller's data half
        elif verdict == DATA_HAND_BACK:
            self.handed_back = True
        return self.data_passes

    cdef int _data_loop(self, int64_t wait_ns, int64_t spin_ns, int passes_left, int64_t defer_ns,
                        bint can_send) noexcept nogil:
        cdef int64_t now_ns = _now_ns()
        cdef int64_t deadline = now_ns + wait_ns, until = 0, last = 0, bytes_sent, pass_sent, got
        cdef int control = self._control_count, i, j, n, err = 0
        cdef bint offered, readable
        cdef bint polled = True         # every socket polled (or read) since the last send: the caller's did
        cdef uint64_t reads = 0
        cdef int expected = 0           # datagrams a round's sends aimed at the sockets it reads (0: a whole batch)
        cdef PyObject *ref
        while True:
            self.rounds += 1
            offered = False
            for i in range(self._pass_count):
                ref = self._pass_refs[i]
                for j in range((<SendPass>ref).count):
                    if _offered(&(<SendPass>ref).slots[j]):
                        offered = True
                        break
                if offered:
                    break
            if self._moved():
                return DATA_HAND_BACK
            # data offered goes first: the poll (a system call, a microsecond or more on a VM) waits for the next
            # round, and the receive sockets are read right after the send anyway
            readable = not offered and self._fd_count > 0 and poll(self._fds, <unsigned long>self._fd_count, 0) > 0
            if not offered:
                polled = True
            if readable:
                for j in range(self._fd_count):
                    if self._fds[j].revents and (j < control or self._rx_dispatchers[j - control] == NULL or
                                                 self._fds[j].revents & POLLNVAL):
                        return DATA_HAND_BACK
            if not offered and not readable:
                now_ns = _now_ns()
                if now_ns >= deadline:
                    if self.data_passes:
                        self.data_idle_ns = now_ns - last
                    return DATA_TIMED_OUT
                cpu_pause()
                continue
            now_ns = _now_ns()
            got = 0
            if offered:
                if not can_send:
                    return DATA_HAND_BACK
                bytes_sent = 0
                reads = 0
                expected = 0
                for i in range(self._pass_count):
                    ref = self._pass_refs[i]
                    pass_sent = (<SendPass>ref).run((<SendPass>ref).bound_transport, now_ns, &err)
                    if pass_sent:
                        get_and_add_i64((<SendPass>ref).bytes_sent, pass_sent)
                        bytes_sent += pass_sent
                        reads |= self._pass_reads[i]
                        expected += (<SendPass>ref).datagrams_sent
                    if err:
                        break
                if not polled:
                    # a send in the round before too, and no poll between: every socket is read this time, so that
                    # a stream offered in every round holds no other socket's datagrams back
                    reads = READ_EVERY
                if reads == READ_EVERY:
                    expected = 0
                polled = False
                if bytes_sent:
                    self.sends += 1
                    self.sent += bytes_sent
                    got += bytes_sent
                if err or bytes_sent == 0:
                    self._count_pass(got, now_ns, &last)
                    return DATA_HAND_BACK       # the caller's data half retries it, and reports its error
            for j in range(control, self._fd_count):
                if self._rx_dispatchers[j - control] == NULL:
                    continue
                if offered:
                    # after a send (no poll this round): the sockets it may have landed in, its datagrams there when
                    # the send returns on one host; the others wait for the next round's poll
                    if reads != READ_EVERY and (j - control >= 64 or not (reads >> (j - control)) & 1):
                        continue
                elif not self._fds[j].revents:
                    continue                    # (an error on it is read too: the receive takes it off the socket)
                ref = self._rx_dispatchers[j - control]
                # after a send, as many as it sent there: no attempt at one more in an empty socket
                n = (<DataPacketDispatcher>ref).receive(<UdpTransport>self._rx_transports[j - control],
                                                        self._rx_destinations[j - control], now_ns, None,
                                                        expected if offered else 0)
                if n < 0 and nothing_sent(-n):
                    # nothing there (a send's socket read before its datagram arrived, a socket of a round read in
                    # full), an interrupt or a refused port: nothing this time, as UdpTransport.received_or_raise
                    # says; handing that back cost a data half of Python per pass, with the next datagram waiting
                    continue
                if n < 0:
                    self._rx_failed_index = j - control
                    self._rx_failed_errno = n
                    self._count_pass(got, now_ns, &last)
                    return DATA_RECEIVE_FAILED
                if n:
                    self.receives += 1
                    self.received += n
                    got += n
                    # what the Python half's take_data_mask does after a poll: the next insert wakes again
                    self.unsignalled |= (<DataPacketDispatcher>ref).take_unsignalled()
                    if (<DataPacketDispatcher>ref).event_count:
                        self.event_index = j - control
                        self._count_pass(got, now_ns, &last)
                        return DATA_HAND_BACK
            if got:
                self._count_pass(got, now_ns, &last)
                if until == 0:
                    until = now_ns + defer_ns
                if self.data_passes >= passes_left or now_ns >= until:
                    return DATA_BUDGET
                deadline = now_ns + spin_ns
            elif _now_ns() >= deadline:
                if self.data_passes:
                    self.data_idle_ns = _now_ns() - last
                return DATA_TIMED_OUT

    cdef inline void _count_pass(self, int64_t got, int64_t now_ns, int64_t *last) noexcept nogil:
        if got:
            self.data_passes += 1
            last[0] = now_ns
