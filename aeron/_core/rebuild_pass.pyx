# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""RebuildPass: what the receiver does for an image between data (aeron_publication_image_track_rebuild and the
sending of its status messages and NAKs), in compiled code, for the common image: a static receiver window, reliable,
fixed NAK delays, one sender, a compiled socket.

``run(min_sub, max_sub, now_ns)`` (the caller has read the positions of the image's subscribers that hold it back):
the loss scan from the rebuild position to the high-water mark, a NAK when the gap's timer has expired (and the loss
report's observation of what it had not had yet), the receiver position moved up to the first gap, the terms behind
the slowest subscriber cleaned, and the status message when the slowest subscriber has moved a quarter window since
the last one or its interval is up. The decisions are those of
the image's Python path (aeron.driver.publication_image), whose scheduling state lives here so that both paths share
it: the next status message's position and window, its pending flag, the time of the last one, and the loss
detector.

The pass runs only while the image's Python side has aimed it (``aim``: where status messages and NAKs go, and the
loss report's entry). Whatever it cannot decide alone hands back (TRACK_PYTHON) with nothing changed: a first NAK
while the loss report has no entry for the image yet, a sender that has gone quiet (the image's transports count
then changes), a second connection. A send that fails for another reason than a full socket or a refused port is
kept (``send_errno``) for the Python side to raise, and also hands back, the status message pending again.
"""
from libc.errno cimport errno
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc

from aeron._core.atomic cimport get_and_add_i64, load_acquire_i64, store_release_i32, store_release_i64
from aeron._core.counters cimport AtomicCounter
from aeron._core.data_dispatcher cimport ImageEntry, ImageReceiveState
from aeron._core.frames cimport frames_write_nak, frames_write_status_message
from aeron._core.logbuffer cimport LogBuffers
from aeron._core.logbuffer_descriptor cimport LOG_ACTIVE_TRANSPORT_COUNT_OFFSET
from aeron._core.loss_detector cimport LOSS_NAK_DUE, LossDetector
from aeron._core.loss_report cimport (
    LOSS_REPORT_LAST_OBSERVATION_OFFSET, LOSS_REPORT_OBSERVATION_COUNT_OFFSET, LOSS_REPORT_TOTAL_BYTES_LOST_OFFSET,
    LossReport,
)
from aeron._core.term_scanner cimport LogCleaner
from aeron._core.udp_transport cimport UdpTransport, nothing_sent, sendto, sockaddr, to_sockaddr

from aeron.common.errors import InvalidArgumentError

TRACK_NOTHING = TRACK_IDLE
TRACK_SENT = TRACK_WORK
TRACK_HAND_BACK = TRACK_PYTHON
HAND_BACK_NOTHING = HAND_BACK_NONE
HAND_BACK_TRACK = HAND_BACK_ALL
HAND_BACK_STATUS = HAND_BACK_SEND
LIFECYCLE_ACTIVE = IMAGE_ACTIVE
LIFECYCLE_DRAINING = IMAGE_DRAINING
LIFECYCLE_LINGER = IMAGE_LINGER
LIFECYCLE_DONE = IMAGE_DONE


cdef extern from "<time.h>" nogil:
    struct timespec:
        long tv_sec
        long tv_nsec
    int CLOCK_REALTIME
    int clock_gettime(int clock_id, timespec *tp)


cdef inline int64_t _epoch_ms() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1_000_000


cdef inline int32_t _term_id(ImageEntry *e, int64_t position) noexcept nogil:
    return <int32_t>(<uint32_t>(position >> e.position_bits_to_shift) + <uint32_t>e.initial_term_id)


cdef class RebuildPass:
    """``RebuildPass(state, loss, cleaner, log, rcv_pos, naks_sent, nak_messages_sent, status_messages_sent,
    bytes_sent, receiver_id, group_tag, window, join_position, liveness_timeout_ns, sm_timeout_ns)``: the image's
    ImageReceiveState, LossDetector, LogCleaner and LogBuffers, its rcv-pos and rcv-naks-sent counters, the system's
    NAKs-sent and status-messages-sent counters and the endpoint's bytes-sent, the receiver id and group tag (None:
    none) its status messages carry, the receiver window, where the stream joined, the image liveness timeout and the
    status message interval."""

    def __init__(self, ImageReceiveState state not None, LossDetector loss not None, LogCleaner cleaner not None,
                 LogBuffers log not None, AtomicCounter rcv_pos not None, AtomicCounter naks_sent not None,
                 AtomicCounter nak_messages_sent not None, AtomicCounter status_messages_sent not None,
                 AtomicCounter bytes_sent not None, int64_t receiver_id, group_tag, int32_t window,
                 int64_t join_position, int64_t liveness_timeout_ns, int64_t sm_timeout_ns):
        log.check_open()
        if window <= 0 or liveness_timeout_ns <= 0 or sm_timeout_ns <= 0:
            raise InvalidArgumentError(f"window {window}, liveness timeout {liveness_timeout_ns} and status "
                                       f"message interval {sm_timeout_ns} must be > 0")
        if log.term_length != state.entry.term_length:
            raise InvalidArgumentError(f"the log's terms ({log.term_length}) are not the image's "
                                       f"({state.entry.term_length})")
        for counter in (rcv_pos, naks_sent, nak_messages_sent, status_messages_sent, bytes_sent):
            counter._check()
        self.state = state
        self.loss = loss
        self.cleaner = cleaner
        self.log = log
        self._counters = [rcv_pos, naks_sent, nak_messages_sent, status_messages_sent, bytes_sent]
        self.rcv_pos = rcv_pos.addr
        self.naks_sent = naks_sent.addr
        self.nak_messages_sent = nak_messages_sent.addr
        self.status_messages_sent = status_messages_sent.addr
        self.bytes_sent = bytes_sent.addr
        self.receiver_id = receiver_id
        self.has_group_tag = group_tag is not None
        self.group_tag = group_tag if group_tag is not None else 0
        self.next_sm_position = join_position
        self.next_sm_window = window
        self.time_of_last_sm_ns = 0             # the first status message goes at once (aeron_publication_image_create)
        self.sm_pending = True
        self.liveness_timeout_ns = liveness_timeout_ns
        self.sm_timeout_ns = sm_timeout_ns
        self.report_entry = -1
        self._positions = []
        self.tracked_inserts = self.tracked_hwm = self.tracked_min_sub = self.tracked_max_sub = -1

    def __dealloc__(self):
        free(self.positions)

    def set_positions(self, list positions not None):
        """The sub-pos counters of the image's subscribers that hold it back (not resting), for ``cycle``; called
        whenever they change (the conductor links or unlinks a subscriber, an untethered one rests or comes back)."""
        cdef Py_ssize_t i, count = len(positions)
        cdef int64_t **table = NULL
        cdef AtomicCounter counter
        if count:
            table = <int64_t **>malloc(count * sizeof(int64_t *))
            if table == NULL:
                raise MemoryError()
        for i in range(count):
            counter = positions[i]
            try:
                counter._check()
            except BaseException:
                free(table)
                raise
            table[i] = counter.addr
        # swapped in one step under the GIL, which the receiver's cycle holds while it reads them
        free(self.positions)
        self.positions = table
        self.position_count = count
        self._positions = list(positions)

    def set_tracked(self, int64_t inserts, int64_t hwm, int64_t min_sub, int64_t max_sub):
        """What a rebuild scan (the image's Python path) has just seen: the cycle skips the next one until one of
        them moves."""
        self.tracked_inserts = inserts
        self.tracked_hwm = hwm
        self.tracked_min_sub = min_sub
        self.tracked_max_sub = max_sub

    def run_cycle(self, int64_t now_ns):
        """``cycle`` from Python (tests): the work done; ``hand_back`` says what is left to Python."""
        return self.cycle(now_ns)

    cdef int cycle(self, int64_t now_ns) except -1:
        """The image's part of a receiver duty cycle, as its Python path (PublicationImage.track_rebuild, then
        send_pending_status_message) would do it, with the GIL held while it reads the subscribers' positions: the
        rebuild scan only when something it depends on has moved (data inserted, the high-water mark, a subscriber,
        a gap's NAK timer due), in compiled code while the pass is armed; the status message when it is pending or
        its interval (less the timer slack) is up. What only Python may do is left in ``hand_back``."""
        cdef ImageEntry *e = &self.state.entry
        cdef int64_t min_sub = INT64_MAX, max_sub = 0, position, hwm, inserts
        cdef Py_ssize_t i
        cdef int outcome, work = 0
        self.hand_back = HAND_BACK_NONE
        if self.send_errno != 0 or self.rejected:
            self.hand_back = HAND_BACK_ALL          # the Python path raises the failed send, or sends error frames
            return 0
        if self.lifecycle <= IMAGE_DRAINING:
            for i in range(self.position_count):
                position = load_acquire_i64(self.positions[i])
                if position < min_sub:
                    min_sub = position
                if position > max_sub:
                    max_sub = position
            if min_sub != INT64_MAX:
                hwm = load_acquire_i64(e.rcv_hwm)
                inserts = e.inserts
                if inserts != self.tracked_inserts or hwm != self.tracked_hwm or min_sub != self.tracked_min_sub or \
                        max_sub != self.tracked_max_sub or not self.static_window or \
                        (self.loss.gap_open and now_ns >= self.loss.expiry_ns):
                    if not self.armed:
                        self.hand_back = HAND_BACK_ALL
                        return 0
                    with nogil:
                        outcome = self.run(min_sub, max_sub, now_ns, False)
                    if outcome == TRACK_PYTHON:
                        self.hand_back = HAND_BACK_ALL
                        return 0
                    self.tracked_inserts = inserts
                    self.tracked_hwm = hwm
                    self.tracked_min_sub = min_sub
                    self.tracked_max_sub = max_sub
                    work = outcome
        if self.lifecycle == IMAGE_DONE:
            return work
        if self.sm_pending or now_ns + self.timer_slack_ns >= self.time_of_last_sm_ns + self.sm_timeout_ns:
            self.hand_back = HAND_BACK_SEND
        return work

    def aim(self, UdpTransport transport not None, address, LossReport report, Py_ssize_t report_entry,
            int64_t connection_floor_ns):
        """Make the pass runnable: status messages and NAKs go to ``address`` through ``transport``; a new loss is
        recorded in ``report`` at ``report_entry`` (-1: the image has none yet, so a new loss hands back; ``report``
        None: no loss report); ``connection_floor_ns`` is the time of the connection's last frame as the Python
        side knows it (the compiled receive keeps its own)."""
        transport._check()
        if not self.loss.static:
            raise InvalidArgumentError("the loss detector's delays are not fixed: only Python may draw them")
        if report is not None and report_entry != -1:
            report.check_entry(report_entry)
        if address is not self.address_key or transport is not self.transport:
            to_sockaddr(address, transport.family, &self.address, &self.address_length)
            self.address_key = address
            self.transport = transport
        self.report = report
        self.report_entry = report_entry if report is not None else -1
        self.connection_floor_ns = connection_floor_ns
        self.gaps_seen = self.state.entry.gaps    # the Python path has just scanned what came before
        self.armed = True

    def disarm(self):
        """Only the Python path tracks the image until the next ``aim``."""
        self.armed = False
        self.disarms += 1

    def track(self, int64_t min_sub, int64_t max_sub, int64_t now_ns, bint on_interval=True):
        """``run`` from Python (tests, and the receiver's duty cycle): a TRACK_* outcome. With ``on_interval`` False
        a status message goes only when the readers' progress makes it due, its interval left to the caller."""
        cdef int outcome
        with nogil:
            outcome = self.run(min_sub, max_sub, now_ns, on_interval)
        return outcome

    def take_send_errno(self):
        """The errno of the last send that failed (0: none), cleared."""
        cdef int err = self.send_errno
        self.send_errno = 0
        return err

    @property
    def deadline(self):
        """When the pass must run even if no subscriber moves: a gap's NAK timer, the status message interval."""
        return self.deadline_ns()

    @property
    def status_message_threshold(self):
        """The position every holding subscriber must reach for the next status message to fall due."""
        return self.sm_threshold()

    cdef int64_t sm_threshold(self) noexcept nogil:
        return self.next_sm_position + (self.next_sm_window >> 2) + 1

    cdef int64_t deadline_ns(self) noexcept nogil:
        cdef int64_t deadline = self.time_of_last_sm_ns + self.sm_timeout_ns
        if self.loss.gap_open and self.loss.expiry_ns < deadline:
            deadline = self.loss.expiry_ns
        return deadline

    cdef int _send(self, int32_t length) noexcept nogil:
        """1 when the datagram went or only met a full socket or a refused port (as the Python path's sends, which
        count it either way), 0 with send_errno set when it failed."""
        cdef ssize_t sent = sendto(self.transport.fd, self.frame, <size_t>length, 0, <sockaddr *>&self.address,
                                   self.address_length)
        if sent < 0:
            if nothing_sent(errno):
                return 1
            self.send_errno = errno
            return 0
        get_and_add_i64(self.bytes_sent, sent)
        return 1

    cdef int run(self, int64_t min_sub, int64_t max_sub, int64_t now_ns, bint on_interval=True) noexcept nogil:
        cdef ImageEntry *e = &self.state.entry
        cdef int64_t connection_ns, hwm, rcv_pos, rebuild, new_rebuild, target
        cdef int32_t rebuild_offset, rebuild_term_id, gap_offset, gap_length = 0, length
        cdef int32_t mask = e.term_length - 1
        cdef int flags, work = TRACK_IDLE
        cdef bint new_gap
        cdef int64_t lost
        cdef uint8_t *entry
        if not self.armed or e.connection_count != 1 or self.transport.closed:
            return TRACK_PYTHON
        connection_ns = e.connections[0].time_of_last_frame_ns
        if connection_ns < self.connection_floor_ns:
            connection_ns = self.connection_floor_ns
        if now_ns - connection_ns >= self.liveness_timeout_ns:
            return TRACK_PYTHON                 # the sender has gone quiet: the image's transports count changes
        hwm = load_acquire_i64(e.rcv_hwm)
        rcv_pos = load_acquire_i64(self.rcv_pos)
        rebuild = rcv_pos if rcv_pos > max_sub else max_sub
        rebuild_offset = <int32_t>(rebuild & mask)
        rebuild_term_id = _term_id(e, rebuild)
        gap_offset = self.loss.find_gap(e.terms[(rebuild >> e.position_bits_to_shift) % 3], e.term_length,
                                   rebuild_term_id, rebuild_offset, _term_id(e, hwm), <int32_t>(hwm & mask),
                                   &gap_length)
        if gap_length == 0:
            self.loss.gap_open = False
        else:
            if self.report is not None and self.report_entry < 0:
                # a NAK now that the loss report must hear of: the image's first, whose entry is made in Python
                new_gap = self.loss.is_new(rebuild_term_id, gap_offset, gap_length)
                if (self.loss.first_delay_ns <= 0 if new_gap else now_ns >= self.loss.expiry_ns) and \
                        self.loss.loss_to_report(rebuild_term_id, gap_offset, gap_length) > 0:
                    return TRACK_PYTHON
            flags = self.loss.on_gap(rebuild_term_id, gap_offset, gap_length, now_ns, self.loss.first_delay_ns)
            if flags & LOSS_NAK_DUE:
                # the loss report hears of a gap when it is NAKed, only the bytes it has not had yet
                lost = self.loss.loss_to_report(self.loss.active_term_id, self.loss.active_term_offset,
                                                self.loss.active_length)
                if lost > 0:
                    self.loss.reported(self.loss.active_term_id, self.loss.active_term_offset,
                                       self.loss.active_length)
                    if self.report is not None:
                        entry = self.report.buffer.data + self.report_entry
                        store_release_i64(<int64_t *>(entry + LOSS_REPORT_LAST_OBSERVATION_OFFSET), _epoch_ms())
                        get_and_add_i64(<int64_t *>(entry + LOSS_REPORT_TOTAL_BYTES_LOST_OFFSET), lost)
                        get_and_add_i64(<int64_t *>(entry + LOSS_REPORT_OBSERVATION_COUNT_OFFSET), 1)
                length = frames_write_nak(self.frame, e.session_id, e.stream_id, self.loss.active_term_id,
                                          self.loss.active_term_offset, self.loss.active_length)
                if not self._send(length):
                    self.armed = False          # the NAK stays due: the Python path sends it again, and raises
                    self.disarms += 1
                    return TRACK_PYTHON
                get_and_add_i64(self.naks_sent, 1)
                get_and_add_i64(self.nak_messages_sent, 1)
                self.loss.expiry_ns = now_ns + self.loss.retry_delay_ns
                work = TRACK_WORK
        self.gaps_seen = e.gaps                 # what the receive path inserted so far has been scanned
        new_rebuild = rebuild - rebuild_offset + gap_offset
        if new_rebuild > rcv_pos:
            store_release_i64(self.rcv_pos, new_rebuild)
        if min_sub >= self.sm_threshold():       # a quarter window past the last one
            target = min_sub - e.term_length
            if self.cleaner.clean_position < target:
                self.cleaner.clean(target)
            self.next_sm_position = min_sub
            self.sm_pending = True
        if self.sm_pending or on_interval and now_ns >= self.time_of_last_sm_ns + self.sm_timeout_ns:
            length = frames_write_status_message(
                self.frame, 0, e.session_id, e.stream_id, _term_id(e, self.next_sm_position),
                <int32_t>(self.next_sm_position & mask), self.next_sm_window, self.receiver_id, self.has_group_tag,
                self.group_tag)
            if not self._send(length):
                self.sm_pending = True
                self.armed = False
                self.disarms += 1
                return TRACK_PYTHON
            get_and_add_i64(self.status_messages_sent, 1)
            e.last_sm_position = self.next_sm_position
            self.time_of_last_sm_ns = now_ns
            # disarmed meanwhile by another thread, which may have made a status message pending (draining): the
            # Python path sends it again, as the image's state has it
            self.sm_pending = not self.armed
            # one connection, with a frame within the liveness timeout (checked above)
            store_release_i32(<int32_t *>(self.log.meta + LOG_ACTIVE_TRANSPORT_COUNT_OFFSET), 1)
            work = TRACK_WORK
        return work


cdef class ImageTracking:
    """The rebuild tracking and status messages of all of a receiver's images in one call per duty cycle
    (RebuildPass.cycle for each of ``passes``), leaving to Python only the images whose pass says so."""

    def __init__(self):
        self.passes = []

    def settled(self):
        """Whether the subscribers holding each image back (not resting) have read it up to its high-water mark: no
        read still under way would owe a status message that only a duty cycle sends, so the receiver's thread may
        park long (SignallingAgent.quiet_park_ns asks at every park)."""
        cdef RebuildPass rebuild
        cdef int64_t hwm
        cdef Py_ssize_t i
        for rebuild in self.passes:
            hwm = load_acquire_i64(rebuild.state._rcv_hwm.addr)
            for i in range(rebuild.position_count):
                if load_acquire_i64(rebuild.positions[i]) < hwm:
                    return False
        return True

    def track(self, int64_t now_ns):
        """Each image's cycle; returns the work done (status messages and NAKs sent in compiled code).
        ``hand_backs`` counts the images with something left to their Python path."""
        cdef list passes = self.passes
        cdef Py_ssize_t i
        cdef RebuildPass rebuild
        cdef int work = 0, hand_backs = 0
        for i in range(len(passes)):
            rebuild = <RebuildPass>passes[i]
            work += rebuild.cycle(now_ns)
            if rebuild.hand_back != HAND_BACK_NONE:
                hand_backs += 1
        self.hand_backs = hand_backs
        return work
