# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The wake-up board: how a parked agent is woken by whoever just wrote its work (docs/wakeup.md).

A side file in the aeron dir (``wakeup.dat``, not an Aeron file: official tools never open it) holds a header
and SLOT_COUNT slots. A sleeper owns a slot: its state, its pid, the mask of writes that concern it and the
token naming its abstract AF_UNIX datagram socket (``\\0aeron-py-wakeup-<token hex>``). Parking is:

    sleeper: state = PARKED; parked_count += 1 (full fence)    writer: write the data (release)
             re-check for work (one more duty cycle)                    full fence
             poll(socket, its other fds, bounded timeout)              if parked_count != 0: scan the slots,
             state = AWAKE; parked_count -= 1                            CAS PARKED -> WOKEN, send 1 datagram

Either the sleeper's re-check sees the data or the writer sees the parked count (both sides fence between
their store and their load), so no wake-up is lost; a writer that does not take part (an official client or
driver) is picked up by the bounded timeout, exactly as a backoff park. The CAS means one datagram per park,
whoever many writers there are; while nobody is parked a writer pays a fence and a load.

A futex sleeper (kind FUTEX: a thread that waits on nothing but its wake-up, such as a client's poll loop) sleeps
in FUTEX_WAIT on its slot's state word, expecting PARKED, instead of in ``poll``; its writer's CAS to WOKEN is
then followed by FUTEX_WAKE instead of a datagram. The kernel compares the word before it sleeps, so a CAS that
came first ends the wait at once: no wake-up is lost either way. The futex is not private (other processes map
the board), and, unlike a socket's, its wake-up is not a "sync" one: the kernel need not run the woken thread on
the waker's core.

A futex sleeper may yield before it sleeps (``wait(..., yield_ns)``: right after work, when the next message is
likely within tens of microseconds): it CASes PARKED -> YIELDING and calls sched_yield in a loop, watching its
state word; a writer CASes YIELDING -> WOKEN and makes no system call, and the sleeper sees it on its next turn.
When the time is up it CASes YIELDING -> PARKED (a failed CAS: it was woken) and sleeps in FUTEX_WAIT as above.
A vCPU whose thread yields never halts, so the next wake-up on it does not wait for the host to run it again
(docs/wakeup.md); a yield that took long (another process had the CPU) ends the phase and holds off the next
ones, since a thread that yielded is behind that process when its data comes, where a parked one would be woken
ahead of it.

Header: magic i32 @0, version i32 @4, slot count i32 @8, slot length i32 @12, parked count i32 @64.
Slot i at SLOTS_OFFSET + i * SLOT_LENGTH: state i32 @0, pid i32 @4, mask i64 @8, token i64 @16, kind i32 @24
(SOCKET 0: woken by a datagram to its socket; FUTEX 1: by FUTEX_WAKE on its state word).
"""
from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memset
from libc.stdio cimport snprintf

from aeron._core.atomic cimport (cas_i32, fence_full, get_and_add_i32, load_acquire_i32, load_acquire_i64,
                                 store_release_i32, store_release_i64)
from aeron._core.poll cimport POLLIN, pollfd
from aeron.common.errors import IllegalStateError

cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t
    struct sockaddr:
        pass
    ssize_t sendto(int fd, const void *buf, size_t n, int flags, const sockaddr *addr, socklen_t addr_len)
    ssize_t recv(int fd, void *buf, size_t n, int flags)
    int MSG_DONTWAIT
    int MSG_NOSIGNAL

cdef extern from "<sys/un.h>" nogil:
    struct sockaddr_un:
        unsigned short sun_family
        char sun_path[108]

cdef extern from "<time.h>" nogil:
    struct timespec:
        long tv_sec
        long tv_nsec
    int CLOCK_MONOTONIC
    int clock_gettime(int clock_id, timespec *tp)

cdef extern from "<sched.h>" nogil:
    int sched_yield()

cdef extern from "<linux/futex.h>" nogil:
    int FUTEX_WAIT
    int FUTEX_WAKE

cdef extern from "<sys/syscall.h>" nogil:
    long SYS_futex

cdef extern from "<unistd.h>" nogil:
    long syscall(long number, ...)

cdef extern from "<poll.h>" nogil:
    int ppoll(pollfd *fds, unsigned long nfds, const timespec *timeout, const void *sigmask)

cdef enum:
    AF_UNIX_ = 1
    MAX_WAIT_FDS = 64

MAGIC = 0x454B4157            # "WAKE"
VERSION = 4                   # 2: 59 stream bits, bit 59 for client conductors; 3: a slot's kind (futex); 4: YIELDING
SLOT_COUNT = 64
SLOT_LENGTH = 64
PARKED_COUNT_OFFSET = 64
SLOTS_OFFSET = 128
FILE_LENGTH = SLOTS_OFFSET + SLOT_COUNT * SLOT_LENGTH
cdef enum:
    SLOT_FREE = 0
    SLOT_AWAKE = 1
    SLOT_PARKED = 2
    SLOT_WOKEN = 3
    SLOT_YIELDING = 5       # 4 is wakeup.py's CLIENT
FREE = SLOT_FREE
AWAKE = SLOT_AWAKE
PARKED = SLOT_PARKED
WOKEN = SLOT_WOKEN
YIELDING = SLOT_YIELDING
cdef enum:
    KIND_SOCKET = 0
    KIND_FUTEX = 1
    KIND_OFFSET = 24
SOCKET = KIND_SOCKET
FUTEX = KIND_FUTEX
SOCKET_NAME_PREFIX = b"\0aeron-py-wakeup-"
STREAM_BITS = STREAM_BITS_C     # mask bits 0..58: subscribers, by stream id modulo 59; 59..63: wakeup.py's


def stream_bit(int32_t stream_id):
    """The mask bit of subscribers of ``stream_id`` (streams share bits modulo STREAM_BITS: a spurious wake-up
    costs a poll)."""
    cdef int bit = stream_id % STREAM_BITS_C        # C's modulo (cdivision): negative for a negative id
    if bit < 0:
        bit += STREAM_BITS_C
    return (<int64_t>1) << bit

cdef int SLOT_COUNT_C = SLOT_COUNT
cdef int SLOT_LENGTH_C = SLOT_LENGTH
cdef int SLOTS_OFFSET_C = SLOTS_OFFSET
cdef int PARKED_OFFSET_C = PARKED_COUNT_OFFSET


cdef inline uint8_t *slot_at(uint8_t *base, int index) noexcept nogil:
    return base + SLOTS_OFFSET_C + index * SLOT_LENGTH_C


cdef socklen_t socket_address(sockaddr_un *addr, int64_t token) noexcept nogil:
    memset(addr, 0, sizeof(sockaddr_un))
    addr.sun_family = AF_UNIX_
    # abstract name: a leading NUL, no file; its length is exactly what bind() got from Python
    cdef int n = snprintf(addr.sun_path + 1, 100, "aeron-py-wakeup-%016llx", <unsigned long long>token)
    return <socklen_t>(sizeof(unsigned short) + 1 + n)     # sun_path follows the 2-byte family


def socket_name(int64_t token) -> bytes:
    """The abstract socket name of the sleeper with ``token`` (what it binds)."""
    return SOCKET_NAME_PREFIX + b"%016x" % (<uint64_t>token)


cdef class WakeupBoard:
    """The mapped board. ``mapping`` is a writable buffer of at least FILE_LENGTH bytes (the side file's mmap)
    with a valid header; ``send_socket`` an AF_UNIX datagram socket, not bound, non-blocking."""

    def __cinit__(self):
        self._has_pin = False
        self.base = NULL
        self.send_fd = -1
        self.closed = True

    def __init__(self, mapping, send_socket):
        """Use ``mapping`` (kept pinned until :meth:`close`) and send wake-ups on ``send_socket``."""
        PyObject_GetBuffer(mapping, &self._pin, PyBUF_WRITABLE)
        self._has_pin = True
        if self._pin.len < FILE_LENGTH:
            PyBuffer_Release(&self._pin)
            self._has_pin = False
            raise ValueError(f"wake-up board needs {FILE_LENGTH} bytes, got {self._pin.len}")
        self.base = <uint8_t *>self._pin.buf
        self.mapping = mapping
        self._send_socket = send_socket
        self.send_fd = send_socket.fileno()
        self.closed = False

    def __dealloc__(self):
        if self._has_pin:
            PyBuffer_Release(&self._pin)

    def close(self):
        """Stop sending wake-ups and close the send socket. Idempotent. The mapping stays pinned (it is 4 KiB)
        until the board and every WakeSignal and Waiter on it are gone, so a writer still holding a signal
        never touches unmapped memory."""
        self.closed = True
        if self._send_socket is not None:
            self._send_socket.close()
            self._send_socket = None
        self.send_fd = -1

    @property
    def is_closed(self):
        """True after :meth:`close`."""
        return self.closed

    cdef void wake(self, int64_t mask) noexcept nogil:
        cdef uint8_t *slot
        cdef int i
        cdef int32_t state
        if self.send_fd < 0:
            return
        for i in range(SLOT_COUNT_C):
            slot = slot_at(self.base, i)
            state = load_acquire_i32(<int32_t *>slot)
            if state != SLOT_PARKED and state != SLOT_YIELDING:
                continue
            if (load_acquire_i64(<int64_t *>(slot + 8)) & mask) == 0:
                continue
            self._wake_slot(slot, state)

    cdef void _wake_slot(self, uint8_t *slot, int32_t state) noexcept nogil:
        # ``state``: what this writer read, PARKED or YIELDING. A failed CAS looks again: the sleeper may have gone
        # from yielding to parked since, and must still be woken; woken by another writer, or up by itself, it is
        # neither, and needs nothing
        cdef sockaddr_un addr
        cdef socklen_t length
        cdef char byte = 1
        while not cas_i32(<int32_t *>slot, state, SLOT_WOKEN):
            state = load_acquire_i32(<int32_t *>slot)
            if state != SLOT_PARKED and state != SLOT_YIELDING:
                return
        if state == SLOT_YIELDING:
            self.wakeups_sent += 1          # it sees WOKEN between its yields: no system call
            return
        if load_acquire_i32(<int32_t *>(slot + KIND_OFFSET)) == KIND_FUTEX:
            # not FUTEX_PRIVATE: the sleeper is in another process; a sleeper gone wakes no one, harmlessly
            if syscall(SYS_futex, <int32_t *>slot, FUTEX_WAKE, 1, NULL, NULL, 0) >= 0:
                self.wakeups_sent += 1
            return
        length = socket_address(&addr, load_acquire_i64(<int64_t *>(slot + 16)))
        # a full socket queue (EAGAIN) already holds a wake-up; a vanished sleeper (ECONNREFUSED) needs none
        if sendto(self.send_fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL, <sockaddr *>&addr, length) == 1:
            self.wakeups_sent += 1

    cdef void notify(self, int64_t mask) noexcept nogil:
        fence_full()
        if load_acquire_i32(<int32_t *>(self.base + PARKED_OFFSET_C)) != 0:
            self.wake(mask)

    # -- cold: header, slots ---------------------------------------------------------------------------------
    cdef int _check(self) except -1:
        if self.closed:
            raise IllegalStateError("wake-up board is closed")
        return 0

    def init_header(self):
        """Write the header of a new (zeroed) board."""
        self._check()
        cdef int32_t *h = <int32_t *>self.base
        h[1] = VERSION
        h[2] = SLOT_COUNT
        h[3] = SLOT_LENGTH
        store_release_i32(h, MAGIC)

    def header_ok(self):
        """True when the header names this layout (magic, version, slot count and length)."""
        self._check()
        cdef int32_t *h = <int32_t *>self.base
        return (load_acquire_i32(h) == MAGIC and h[1] == VERSION and h[2] == SLOT_COUNT
                and h[3] == SLOT_LENGTH)

    @property
    def parked_count(self):
        """Sleepers parked now (0 means writers pay only a fence and a load)."""
        self._check()
        return load_acquire_i32(<int32_t *>(self.base + PARKED_OFFSET_C))

    def slot_state(self, int index):
        """(state, pid, mask, token) of slot ``index``."""
        self._check()
        if not 0 <= index < SLOT_COUNT_C:
            raise IndexError(index)
        cdef uint8_t *slot = slot_at(self.base, index)
        return (load_acquire_i32(<int32_t *>slot), (<int32_t *>slot)[1], load_acquire_i64(<int64_t *>(slot + 8)),
                load_acquire_i64(<int64_t *>(slot + 16)))

    def claim(self, int32_t pid, int64_t mask, int64_t token, bint futex=False):
        """Take a free slot for a sleeper (woken by FUTEX_WAKE when ``futex``, else by a datagram to the socket
        ``token`` names): returns its index, or -1 when every slot is taken."""
        self._check()
        cdef uint8_t *slot
        cdef int i
        for i in range(SLOT_COUNT_C):
            slot = slot_at(self.base, i)
            if load_acquire_i32(<int32_t *>slot) == FREE and cas_i32(<int32_t *>slot, FREE, AWAKE):
                (<int32_t *>slot)[1] = pid
                store_release_i32(<int32_t *>(slot + KIND_OFFSET), KIND_FUTEX if futex else KIND_SOCKET)
                store_release_i64(<int64_t *>(slot + 16), token)
                store_release_i64(<int64_t *>(slot + 8), mask)
                return i
        return -1

    def reclaim(self, int index, int32_t state):
        """Free slot ``index`` of a sleeper that died in ``state`` (its pid is gone); True if this call freed it.
        A dead sleeper that was parked no longer counts as parked."""
        self._check()
        cdef uint8_t *slot = slot_at(self.base, index)
        if state == FREE or not cas_i32(<int32_t *>slot, state, FREE):
            return False
        if state == PARKED or state == WOKEN or state == YIELDING:
            get_and_add_i32(<int32_t *>(self.base + PARKED_OFFSET_C), -1)
        return True

    def set_mask(self, int index, int64_t mask):
        """Change what wakes slot ``index`` (e.g. a subscription was added)."""
        self._check()
        store_release_i64(<int64_t *>(slot_at(self.base, index) + 8), mask)

    def wake_slot_seen(self, int index, int32_t seen):
        """A writer's wake-up of slot ``index`` from the point where it had read the state ``seen`` (PARKED or
        YIELDING), whatever the state is now: for tests of a sleeper that changed state between that read and the
        writer's CAS, a window too short to hit on purpose."""
        self._check()
        if not 0 <= index < SLOT_COUNT_C:
            raise IndexError(index)
        if seen != SLOT_PARKED and seen != SLOT_YIELDING:
            raise ValueError(f"a writer wakes a slot it saw PARKED or YIELDING, not {seen}")
        if self.send_fd >= 0:
            self._wake_slot(slot_at(self.base, index), seen)

    def signal(self, int64_t mask):
        """Wake the parked sleepers whose mask meets ``mask`` (what a WakeSignal does, from Python)."""
        if self.closed:
            return
        self.notify(mask)

    def signaller(self, int64_t mask):
        """A WakeSignal for writes that concern ``mask``."""
        self._check()
        cdef WakeSignal signal = WakeSignal.__new__(WakeSignal)
        signal.board = self
        signal.parked = <int32_t *>(self.base + PARKED_OFFSET_C)
        signal.mask = mask
        return signal


cdef class WakeSignal:
    """A writer's handle (made by :meth:`WakeupBoard.signaller`): ``signal()`` after writing."""

    def signal(self):
        """Wake the parked sleepers this writer's mask concerns; a fence and a load when none is parked."""
        self.notify()

    def __repr__(self):
        return f"WakeSignal(mask={self.mask:#x})"


# A yield that took this long or longer had another process on the CPU for a time slice (a woken partner, or a
# driver's whole duty cycle, runs for microseconds to tens of them): the phase ends, and the next phases are held
# off: HOLDOFF_MIN, doubling up to HOLDOFF_MAX while the first phase after each hold-off is contended too (a
# process that keeps the CPU busy), back to HOLDOFF_MIN after a phase that was not (a one-off: a start-up).
cdef int64_t YIELD_CONTENDED_NS_C = 500_000
cdef int64_t YIELD_HOLDOFF_MIN_NS_C = 100_000_000
cdef int64_t YIELD_HOLDOFF_MAX_NS_C = 1_600_000_000
YIELD_CONTENDED_NS = YIELD_CONTENDED_NS_C
YIELD_HOLDOFF_MIN_NS = YIELD_HOLDOFF_MIN_NS_C
YIELD_HOLDOFF_MAX_NS = YIELD_HOLDOFF_MAX_NS_C


cdef inline int64_t _monotonic_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec * 1_000_000_000 + ts.tv_nsec


cdef class Waiter:
    """A sleeper's slot: ``prepare()``, re-check for work, then ``wait()`` or ``cancel()`` (module docstring).

    ``sock`` is the bound, non-blocking AF_UNIX datagram socket named after the slot's token; the waiter owns
    it and the slot until :meth:`close`. None for a slot claimed as a futex sleeper's: it then waits on the
    slot's state word (no ``fileno()``, no other descriptors)."""

    cdef readonly WakeupBoard board
    cdef readonly int index
    cdef readonly bint futex           # waits in FUTEX_WAIT on its state word, not on a socket
    cdef int fd
    cdef object _socket
    cdef uint8_t *slot
    cdef readonly bint prepared
    cdef readonly int64_t wakeups      # parks ended by a wake-up datagram
    cdef readonly int64_t timeouts     # parks ended by the bounded timeout
    # a wait ended by one of the caller's descriptors alone (not a wake-up) leaves the slot parked: writers still
    # wake the caller while it reads that socket, and its next duty cycle is the re-check of the next park
    cdef public bint stay_parked_on_fds
    cdef pollfd fds[MAX_WAIT_FDS + 1]
    cdef readonly int64_t yield_wakeups       # of ``wakeups``: those seen while yielding (no system call for either side)
    cdef readonly int64_t yields_contended    # yield phases ended because another process had the CPU
    cdef readonly int64_t yield_phases        # yield phases begun
    cdef readonly int64_t yields_timed_out    # yield phases that ran their time out: the wait went on asleep
    cdef readonly int64_t yield_holdoff_ns    # the current hold-off after a contended phase (0: none yet)
    cdef readonly int64_t yield_resume_ns     # no yield phase before this (on the yield clock)
    cdef bint _last_phase_contended
    cdef object _clock                        # the yield clock when not CLOCK_MONOTONIC (a test's)
    cdef bint _has_clock

    def __init__(self, WakeupBoard board not None, int index, sock):
        """Own slot ``index`` of ``board`` (claimed by the caller) and ``sock``."""
        board._check()
        self.board = board
        self.index = index
        self.slot = slot_at(board.base, index)
        self.futex = load_acquire_i32(<int32_t *>(self.slot + KIND_OFFSET)) == KIND_FUTEX
        if self.futex != (sock is None):
            raise ValueError("a futex slot takes no socket; a socket slot needs one")
        self._socket = sock
        self.fd = -1 if sock is None else sock.fileno()
        self.prepared = False
        self.stay_parked_on_fds = False

    @property
    def clock(self):
        """What a yield phase reads the time by: None for CLOCK_MONOTONIC (nanoseconds, as ``time.monotonic_ns``),
        else a callable returning nanoseconds that must not raise. A test sets one so that the phase's length, its
        contention (a yield the clock saw take YIELD_CONTENDED_NS or more) and the hold-offs follow the test, not
        the machine's load; each reading then takes the GIL."""
        return self._clock

    @clock.setter
    def clock(self, value):
        if value is not None and not callable(value):
            raise TypeError(f"a yield clock is a callable returning nanoseconds, or None: {value!r}")
        self._clock = value
        self._has_clock = value is not None

    cdef int64_t _now_ns(self) noexcept nogil:
        if not self._has_clock:
            return _monotonic_ns()
        with gil:
            return <int64_t>self._clock()

    def fileno(self):
        """The socket a wake-up arrives on (for an event loop's add_reader); -1 for a futex waiter."""
        return self.fd

    def prepare(self):
        """Say "parked" (the writers will now wake us); the caller re-checks for work next."""
        self._prepare()

    cdef inline void _prepare(self) noexcept:
        if self.prepared or self.slot == NULL or self.board.closed:
            return
        store_release_i32(<int32_t *>self.slot, PARKED)
        get_and_add_i32(<int32_t *>(self.board.base + PARKED_OFFSET_C), 1)     # a full fence
        self.prepared = True

    def cancel(self):
        """Back to awake without waiting (the re-check found work, or the wait ended)."""
        self._cancel()

    cdef inline void _cancel(self) noexcept:
        if not self.prepared:
            return
        self.prepared = False
        if not cas_i32(<int32_t *>self.slot, PARKED, AWAKE):
            store_release_i32(<int32_t *>self.slot, AWAKE)      # WOKEN: a datagram is, or soon will be, queued
            if not self.futex:
                self._drain()
        get_and_add_i32(<int32_t *>(self.board.base + PARKED_OFFSET_C), -1)

    def drain(self):
        """Read every queued wake-up datagram; returns how many."""
        return self._drain()

    cdef int _drain(self) noexcept:
        cdef char buf[16]
        cdef int n = 0
        if self.fd < 0:
            return 0
        with nogil:
            while recv(self.fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0:
                n += 1
        return n

    def wait(self, int64_t timeout_ns, fds=None, int64_t yield_ns=0):
        """Sleep until a wake-up, one of ``fds`` (socket descriptors) is readable, or ``timeout_ns`` passed;
        the GIL is released meanwhile. Call after :meth:`prepare` (and a re-check). Returns True when woken
        (datagram or fd), False on timeout. Ends awake (what :meth:`cancel` does, with the one datagram of a
        wake-up read rather than the socket drained), except when woken by ``fds`` alone with
        ``stay_parked_on_fds`` set: then still prepared (:attr:`prepared`).

        ``yield_ns`` (a futex waiter only): first yield the CPU in a loop for up to that long, woken without a
        system call on either side, then sleep (module docstring). Skipped while held off after a contended
        phase (:attr:`yield_holdoff_ns`, until :attr:`yield_resume_ns` on the yield :attr:`clock`)."""
        cdef unsigned long count = 1
        cdef timespec ts
        cdef int ready
        cdef object fd
        cdef char buf[16]
        if yield_ns > 0 and not self.futex:
            raise IllegalStateError("only a futex waiter yields before it sleeps")
        if not self.prepared:
            return True
        if self.futex:
            if fds:
                raise IllegalStateError("a futex waiter waits on no descriptors")
            return self._wait_futex(timeout_ns, yield_ns)
        self.fds[0].fd = self.fd
        self.fds[0].events = POLLIN
        self.fds[0].revents = 0
        if fds is not None:
            for fd in fds:
                if count > MAX_WAIT_FDS:
                    break
                self.fds[count].fd = <int>fd
                self.fds[count].events = POLLIN
                self.fds[count].revents = 0
                count += 1
        if timeout_ns < 0:
            timeout_ns = 0
        ts.tv_sec = <long>(timeout_ns // 1_000_000_000)
        ts.tv_nsec = <long>(timeout_ns % 1_000_000_000)
        with nogil:
            ready = ppoll(self.fds, count, &ts, NULL)
            if ready > 0 and self.fds[0].revents & POLLIN:
                recv(self.fd, buf, sizeof(buf), MSG_DONTWAIT)     # a wake-up is one datagram: one read, no drain
        if self.slot == NULL:
            self.prepared = False       # closed by another thread meanwhile: close() took the slot out of its park
            return True
        if ready > 0 and self.stay_parked_on_fds and not (self.fds[0].revents & POLLIN):
            self.wakeups += 1
            return True
        self.prepared = False
        if not cas_i32(<int32_t *>self.slot, PARKED, AWAKE):
            # WOKEN: its datagram was just read, or is on its way (a later wait reads it when it returns early)
            store_release_i32(<int32_t *>self.slot, AWAKE)
        get_and_add_i32(<int32_t *>(self.board.base + PARKED_OFFSET_C), -1)
        if ready > 0:
            self.wakeups += 1
            return True
        self.timeouts += 1
        return False

    cdef bint _wait_futex(self, int64_t timeout_ns, int64_t yield_ns) except -1:
        cdef timespec ts
        cdef long result = -1
        cdef int32_t *word = <int32_t *>self.slot
        cdef bint yielding = False, woken_yielding = False, contended = False
        cdef int64_t start = 0, before, after = 0, limit
        if timeout_ns < 0:
            timeout_ns = 0
        if yield_ns > 0:
            with nogil:
                start = after = self._now_ns()
                if start >= self.yield_resume_ns and cas_i32(word, SLOT_PARKED, SLOT_YIELDING):
                    yielding = True
                    limit = yield_ns if yield_ns < timeout_ns else timeout_ns
                    while True:
                        if load_acquire_i32(word) != SLOT_YIELDING:
                            woken_yielding = True
                            break
                        if after - start >= limit:
                            break
                        before = after
                        sched_yield()
                        after = self._now_ns()
                        if after - before >= YIELD_CONTENDED_NS_C:
                            contended = True
                            break
                    # a failed CAS: a writer's CAS to WOKEN came first
                    if not woken_yielding and not cas_i32(word, SLOT_YIELDING, SLOT_PARKED):
                        woken_yielding = True
                    timeout_ns = timeout_ns - (after - start) if after - start < timeout_ns else 0
        if yielding:
            self.yield_phases += 1
            if contended:
                self.yields_contended += 1
                if self._last_phase_contended:
                    self.yield_holdoff_ns = min(self.yield_holdoff_ns * 2, YIELD_HOLDOFF_MAX_NS_C)
                else:
                    self.yield_holdoff_ns = YIELD_HOLDOFF_MIN_NS_C
                self.yield_resume_ns = after + self.yield_holdoff_ns
            elif not woken_yielding:
                self.yields_timed_out += 1
            self._last_phase_contended = contended
        if not woken_yielding:
            ts.tv_sec = <long>(timeout_ns // 1_000_000_000)
            ts.tv_nsec = <long>(timeout_ns % 1_000_000_000)
            with nogil:
                # sleeps only while the word is still PARKED: a writer's CAS to WOKEN before this returns at once
                result = syscall(SYS_futex, word, FUTEX_WAIT, <int>SLOT_PARKED, &ts, NULL, 0)
        self.prepared = False
        if self.slot == NULL:
            return True                 # closed by another thread meanwhile: close() took the slot out of its park
        # still PARKED: timed out, a signal, or a FUTEX_WAKE meant for an earlier park of this slot
        cdef bint woken = not cas_i32(word, PARKED, AWAKE)
        if woken:
            store_release_i32(word, AWAKE)
        get_and_add_i32(<int32_t *>(self.board.base + PARKED_OFFSET_C), -1)
        if woken or result == 0:
            self.wakeups += 1
            if woken_yielding:
                self.yield_wakeups += 1
            return True
        self.timeouts += 1
        return False

    def set_mask(self, int64_t mask):
        """Change what wakes this waiter."""
        if self.slot != NULL:
            store_release_i64(<int64_t *>(self.slot + 8), mask)

    @property
    def mask(self):
        """What wakes this waiter."""
        return load_acquire_i64(<int64_t *>(self.slot + 8)) if self.slot != NULL else 0

    def close(self):
        """Free the slot and close the socket. Idempotent. A wait in progress on another thread ends (a futex
        waiter's at once, a socket waiter's by its timeout) without touching the slot again: the slot is taken out of
        its park here, once, and the parked count with it (the GIL orders this against the wait's return)."""
        cdef int32_t *word
        if self.slot != NULL:
            self.cancel()
            word = <int32_t *>self.slot
            store_release_i64(<int64_t *>(self.slot + 8), 0)
            store_release_i32(word, FREE)
            self.slot = NULL
            if self.futex:
                syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0)    # a sleeper on the word: not PARKED now
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self.fd = -1

    @property
    def is_closed(self):
        """True after :meth:`close`."""
        return self.slot == NULL

    def __repr__(self):
        return f"<Waiter slot={self.index} wakeups={self.wakeups} timeouts={self.timeouts}>"


cdef class QuietBound:
    """How long a client's wake-up park may grow to (``Aeron.quiet_park_ns``), called as ``quiet(quiet_ns)``, and
    read by a compiled idle (WakeupIdleCore) without a call into Python or an allocation: at most ``brief_ns`` while
    :attr:`holds` is positive or an async command awaits its answer (``awaits()``, asked only while ``pending``, the
    client conductor's dict of commands, is not empty), else ``long_ns`` (at least ``quiet_ns``) while the board's
    header word at ``all_signal_offset`` is 1 (the driver says every client of it signals), else ``quiet_ns``."""

    cdef WakeupBoard board             # pins the mapping the header word is in
    cdef int32_t *all_signal_word
    cdef dict pending
    cdef object awaits
    cdef public int64_t holds
    cdef readonly int64_t long_ns
    cdef readonly int64_t brief_ns

    def __init__(self, WakeupBoard board not None, int all_signal_offset, int64_t long_ns, int64_t brief_ns,
                 dict pending not None, awaits):
        """The bound of a client on ``board`` (see the class docstring)."""
        board._check()
        if not 0 <= all_signal_offset <= SLOTS_OFFSET_C - 4:
            raise ValueError(f"the all-signal word must be in the header: {all_signal_offset}")
        self.board = board
        self.all_signal_word = <int32_t *>(board.base + all_signal_offset)
        self.long_ns = long_ns
        self.brief_ns = brief_ns
        self.pending = pending
        self.awaits = awaits

    cdef int64_t bound(self, int64_t quiet_ns) except? -1:
        if self.holds > 0 or (len(self.pending) != 0 and self.awaits()):
            return quiet_ns if quiet_ns < self.brief_ns else self.brief_ns
        if load_acquire_i32(self.all_signal_word) == 1:
            return quiet_ns if quiet_ns > self.long_ns else self.long_ns
        return quiet_ns

    def __call__(self, int64_t quiet_ns):
        """The bound for a park whose own quiet bound is ``quiet_ns``."""
        return self.bound(quiet_ns)

    def all_signal(self):
        """The driver's verdict: every live client of it signals (ClientRegistry.all_signal); an AutoIdleCore given
        this method reads the word without a call into Python."""
        return load_acquire_i32(self.all_signal_word) == 1


# aeron.common.agent's idle states (BackoffIdleStrategy.state: NOT_IDLE, SPINNING, YIELDING, PARKING), which
# WakeupIdleCore keeps
cdef enum:
    IDLE_NOT_IDLE = 0
    IDLE_SPINNING = 1
    IDLE_YIELDING = 2
    IDLE_PARKING = 3
# WakeupIdleStrategy.SPIN_GIVE_UP_MISSES and SPIN_PROBE_EVERY (see its docstring)
cdef int64_t SPIN_GIVE_UP_MISSES_C = 4
cdef int64_t SPIN_PROBE_EVERY_C = 8
SPIN_GIVE_UP_MISSES = SPIN_GIVE_UP_MISSES_C
SPIN_PROBE_EVERY = SPIN_PROBE_EVERY_C


cdef class WakeupIdleCore:
    """The state of a client's WakeupIdleStrategy (aeron.common.wakeup.ClientWakeupIdleStrategy keeps its attributes
    here) and its per-message path compiled: :meth:`idle` of a strategy bound to a waiter with no timers (a client's
    poll loop) runs here, in one call per poll with no Python frame, no allocation and the GIL released while it
    yields or sleeps; any other mode (unbound: backoff; bound with a driver agent's timers) calls ``python_idle``, the
    strategy's Python ``idle``. The steps are WakeupIdleStrategy.idle's, in the same order (docs/wakeup.md): spin
    after work for ``spin_ns`` (given up after SPIN_GIVE_UP_MISSES misses but for one spin in SPIN_PROBE_EVERY),
    prepare the park and return (the caller's next poll is the re-check), then wait on the waiter bounded by
    ``park_bound_ns``, doubling up to the quiet bound (``quiet(quiet_park_ns)`` when set), yielding first for
    ``yield_ns`` in the first park after work while every writer signals.

    ``waiter`` is an aeron._core.wakeup.Waiter (its slot is then driven directly) or any object with its methods
    (tests' fakes); ``clock`` None reads CLOCK_MONOTONIC (``time.perf_counter_ns``'s clock), else a callable
    returning nanoseconds."""

    cdef public int state
    cdef public int64_t spins
    cdef public int64_t yields
    cdef public int64_t min_park_ns
    cdef public int64_t max_park_ns
    cdef public int64_t park_period_ns
    cdef public int64_t spin_ns
    cdef public int64_t yield_ns
    cdef public int64_t quiet_park_ns
    cdef public int64_t park_bound_ns
    cdef public int64_t spin_start_ns
    cdef public int64_t parks
    cdef public int64_t spin_misses
    cdef public int64_t spin_skips
    cdef public int64_t spins_given_up
    cdef public bint prepared
    cdef public bint after_work
    cdef public bint client            # bound to a waiter, no timers: idle() runs here
    cdef object _quiet
    cdef QuietBound _quiet_bound        # _quiet when it is a QuietBound (else None)
    cdef public object fds
    cdef public object python_idle
    cdef object _waiter
    cdef Waiter _slot_waiter            # _waiter when it is a Waiter (else None)
    cdef object _clock
    cdef bint _has_clock

    def __init__(self, python_idle=None):
        """``python_idle(work_count)``: what :meth:`idle` runs while not in client mode."""
        self.python_idle = python_idle

    @property
    def waiter(self):
        """The waiter parks wait on (None: unbound)."""
        return self._waiter

    @waiter.setter
    def waiter(self, value):
        self._waiter = value
        self._slot_waiter = value if isinstance(value, Waiter) else None

    @property
    def quiet(self):
        """``quiet(quiet_park_ns)``: how long a park may grow to (None: ``quiet_park_ns``); a QuietBound is read
        without a call into Python."""
        return self._quiet

    @quiet.setter
    def quiet(self, value):
        self._quiet = value
        self._quiet_bound = value if isinstance(value, QuietBound) else None

    @property
    def clock(self):
        """The spin clock: None for CLOCK_MONOTONIC, else a callable returning nanoseconds."""
        return self._clock

    @clock.setter
    def clock(self, value):
        if value is not None and not callable(value):
            raise TypeError(f"a spin clock is a callable returning nanoseconds, or None: {value!r}")
        self._clock = value
        self._has_clock = value is not None

    cdef inline int64_t _now(self) except? -1:
        if self._has_clock:
            return <int64_t>self._clock()
        return _monotonic_ns()

    # The waiter is passed in, read once per call: a close on another thread (bind(None)) while this one parks leaves
    # the call with the waiter it began with, as WakeupIdleStrategy.idle's local does.
    cdef inline int _prepare(self, Waiter slot, object waiter) except -1:
        if slot is not None:
            slot._prepare()
        else:
            waiter.prepare()
        self.prepared = True
        return 0

    cdef inline int _cancel(self, Waiter slot, object waiter) except -1:
        self.prepared = False
        if slot is not None:
            slot._cancel()
        else:
            waiter.cancel()
        return 0

    cdef bint _wait(self, Waiter slot, object waiter, int64_t timeout_ns, int64_t yield_ns) except -1:
        cdef object fds = self.fds
        if slot is not None and slot.futex and fds is None:
            if not slot.prepared:
                return True
            return slot._wait_futex(timeout_ns, yield_ns)
        if yield_ns:
            return bool(waiter.wait(timeout_ns, None, yield_ns))
        return bool(waiter.wait(timeout_ns, fds() if fds is not None else None))

    def idle(self, int64_t work_count=0):
        """WakeupIdleStrategy.idle: here in client mode, else ``python_idle``."""
        if not self.client or self._waiter is None:
            self.python_idle(work_count)
            return
        self._idle(self._slot_waiter, self._waiter, work_count)

    cdef int _idle(self, Waiter slot, object waiter, int64_t work_count) except -1:
        cdef bint woken, signalled
        cdef int64_t bound, cap, longest, yield_ns
        if work_count > 0:
            if self.state == IDLE_SPINNING:
                self.spin_misses = 0            # the spin was answered
            self.after_work = True
            # the work came straight after a park (a wake-up), not from the re-check of one or a spin
            woken = self.state == IDLE_PARKING and not self.prepared
            if self.prepared:
                self._cancel(slot, waiter)
            if self.state != IDLE_NOT_IDLE:
                self._reset()
            if woken and self.spin_ns == 0:
                # no spin (a client of network streams) and a message after a wake-up: the park is prepared now and
                # the caller's next poll is its re-check (WakeupIdleStrategy.idle says why)
                self.state = IDLE_PARKING
                self._prepare(slot, waiter)
            return 0
        if self.state == IDLE_NOT_IDLE:
            if self.spin_ns > 0 and self.spin_misses >= SPIN_GIVE_UP_MISSES_C:
                self.spin_skips += 1
                if self.spin_skips % SPIN_PROBE_EVERY_C:
                    self.spins_given_up += 1
                    self.state = IDLE_PARKING       # straight to the park: the spin only held the core
            if self.state == IDLE_NOT_IDLE:
                self.state = IDLE_SPINNING
                if self.spin_ns > 0:
                    self.spin_start_ns = self._now()
                    return 0
        if self.state == IDLE_SPINNING:
            if self.spin_ns > 0:
                if self._now() - self.spin_start_ns < self.spin_ns:
                    return 0
                self.spin_misses += 1
            self.state = IDLE_PARKING
        if not self.prepared:
            self._prepare(slot, waiter)
            return 0                    # the caller's next poll is the re-check
        self.prepared = False
        self.parks += 1
        bound = self.park_bound_ns
        cap = self.quiet_park_ns
        signalled = self._quiet is None     # unless told otherwise (a test's waiter), writers are taken to signal
        if self._quiet is not None:
            if self._quiet_bound is not None:
                longest = self._quiet_bound.bound(cap)
            else:
                longest = self._quiet(cap)
            if longest > cap:
                signalled = True        # every writer signals: the long bound (WakeupIdleStrategy.idle says why)
                bound = longest
            elif bound > longest:
                bound = self.park_bound_ns = longest
            cap = longest
        yield_ns = self.yield_ns if self.after_work and signalled else 0
        self.after_work = False
        if not self._wait(slot, waiter, bound, yield_ns):
            if bound < cap:
                self.park_bound_ns = bound * 2 if bound * 2 < cap else cap
            # nothing woke us: the caller's next poll doubles as the re-check of the next park
            self._prepare(slot, waiter)
            return 0
        if (slot.prepared if slot is not None else waiter.prepared):
            self.prepared = True        # woken by a descriptor of ours alone, still parked (stay_parked_on_fds)
        return 0

    cdef inline void _reset(self) noexcept:
        self.spins = 0
        self.yields = 0
        self.park_period_ns = self.min_park_ns
        self.state = IDLE_NOT_IDLE
        self.park_bound_ns = self.max_park_ns


cdef class AutoIdleCore:
    """AutoIdleStrategy.idle compiled (aeron.common.wakeup.AutoIdleStrategy keeps its state here): while on
    ``wakeup`` and the driver's verdict holds, one C call runs the wakeup strategy's idle (compiled when ``wakeup``
    is a WakeupIdleCore in client mode); while on the fallback, the verdict is read after each message and every
    ``check_every`` calls, and ``fallback_idle`` called. A change of verdict calls ``switch(to_wakeup, work_count)``
    (the strategy's Python: a cold path). ``all_signal``: the verdict, a callable; a QuietBound's ``all_signal`` is
    read without a call into Python."""

    cdef WakeupIdleCore wakeup_core     # the wakeup strategy's compiled core, or None (a Python strategy)
    cdef object wakeup                  # the wakeup strategy (its state and idle, when it has no core)
    cdef object _all_signal
    cdef QuietBound _verdict
    cdef public object fallback_idle
    cdef public object switch
    cdef public bint on_wakeup
    cdef public int64_t calls
    cdef public int64_t switches
    cdef public int64_t check_every

    def __init__(self, wakeup, fallback_idle, all_signal, switch, int64_t check_every):
        """Idle on ``wakeup`` or ``fallback_idle`` as ``all_signal()`` says (see the class docstring)."""
        core = getattr(wakeup, "_core", None)
        self.wakeup_core = core if isinstance(core, WakeupIdleCore) else None
        self.wakeup = wakeup
        self.fallback_idle = fallback_idle
        self._all_signal = all_signal
        verdict = getattr(all_signal, "__self__", None)
        self._verdict = verdict if isinstance(verdict, QuietBound) and all_signal == verdict.all_signal else None
        self.switch = switch
        self.check_every = check_every
        self.on_wakeup = self._signals()

    cdef bint _signals(self) except -1:
        if self._verdict is not None:
            return load_acquire_i32(self._verdict.all_signal_word) == 1
        return bool(self._all_signal())

    def idle(self, int64_t work_count=0):
        """AutoIdleStrategy.idle."""
        cdef WakeupIdleCore core = self.wakeup_core
        cdef int state
        if self.on_wakeup:
            state = core.state if core is not None else self.wakeup.state
            if (work_count > 0 or state == IDLE_PARKING) and not self._signals():
                self.switch(False, work_count)
                return
            if core is None:
                self.wakeup.idle(work_count)
            elif core.client and core._waiter is not None:
                core._idle(core._slot_waiter, core._waiter, work_count)
            else:
                core.python_idle(work_count)
            return
        self.calls += 1
        if work_count > 0 or self.calls >= self.check_every:
            self.calls = 0
            if self._signals():
                self.switch(True, work_count)
                return
        self.fallback_idle(work_count)
