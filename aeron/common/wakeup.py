# SPDX-License-Identifier: Apache-2.0
"""Waking instead of spinning: the wake-up board in the aeron dir, the masks that say who wakes whom, and how a
driver agent or a client gets a waiter or a signal (docs/wakeup.md; the compiled half is aeron._core.wakeup).

The board is ``<aeron dir>/wakeup.dat``, a file of ours that no Aeron tool opens; every Aeron file keeps its
official layout. Whoever gets there first creates it (our driver recreates it with the directory); a board
that cannot be opened or has another layout means "no wake-ups": sleepers then time out as a backoff park
does, and writers signal nothing.

Masks (one 64-bit word per sleeper): bit ``stream_id % STREAM_BITS`` for subscribers of that stream, one bit per
driver agent: CONDUCTOR (client commands), SENDER (data in a network publication), RECEIVER (commands from the
conductor; its sockets wake it by themselves), SPIES for spy subscribers, and CLIENTS for our client conductors
(our driver wrote to the clients' broadcast).

Clients of ours also register on the board (a slot in state CLIENT naming their client id, never woken): they
signal every command and offer, so a driver of ours whose every client is registered need not poll for them; it
says so in the header (ALL_SIGNAL_OFFSET), and every sleeper may then park longer (LONG_QUIET_PARK_NS).
"""
from __future__ import annotations

import logging
import mmap
import os
import random
import socket

from aeron._core import wakeup as _wk
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.wakeup import WakeSignal, Waiter, WakeupBoard, stream_bit

__all__ = ["WAKEUP_FILE", "STREAM_BITS", "ALL_STREAMS", "CLIENTS", "CONDUCTOR", "SENDER", "RECEIVER", "SPIES", "stream_bit",
           "streams_mask", "open_board", "new_waiter", "WakeSignal", "Waiter", "WakeupBoard", "ClientRegistry",
           "LONG_QUIET_PARK_NS"]

WAKEUP_FILE = "wakeup.dat"
STREAM_BITS = _wk.STREAM_BITS
ALL_STREAMS = (1 << STREAM_BITS) - 1
CLIENTS = 1 << 59
RECEIVER = 1 << 60
SENDER = 1 << 61
CONDUCTOR = 1 << 62
# bit 63 (the sign bit of the int64 mask): spy subscribers, the only readers of a network publication's log. A
# network publication's offers signal SENDER | SPIES, not their stream's bit: its data reaches that stream's
# subscribers only through the driver's receiver, which wakes them when it has inserted it.
SPIES = -(1 << 63)

_log = logging.getLogger("aeron.wakeup")

# A slot's state while it registers a client of ours (FREE, AWAKE, PARKED, WOKEN, YIELDING are the sleepers'
# states): its token is the client id, its mask 0; a writer's scan skips it (only PARKED and YIELDING slots are
# woken), and a dead process's slot is taken back as any other (new_waiter).
CLIENT = 4
# Header word (i32) our driver keeps: 1 while every live client of the driver is registered (each signals what it
# writes), 0 otherwise; 0 on aeronmd, which never writes it.
ALL_SIGNAL_OFFSET = 16
# The bound a park grows to while nothing happens and ALL_SIGNAL holds (instead of the 16 ms quiet bound, which
# is there for writers that never signal): Aeron's heartbeat interval. What still needs polling then (a reader
# that moved a publisher's limit or a status message's position) is picked up within it.
LONG_QUIET_PARK_NS = 100_000_000


def streams_mask(stream_ids: object, spies: bool = False) -> int:
    """The OR of the bits of ``stream_ids``, with SPIES when ``spies`` (a spy subscription is among them);
    every stream and the spies when ``stream_ids`` is None."""
    if stream_ids is None:
        return ALL_STREAMS | SPIES
    mask = SPIES if spies else 0
    for stream_id in stream_ids:        # type: ignore[attr-defined]
        mask |= stream_bit(int(stream_id))
    return mask


def _send_socket() -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    return sock


def open_board(aeron_dir: str, *, create: bool = False, file_mode: int | None = None) -> WakeupBoard | None:
    """Map ``aeron_dir``'s board. ``create``: make a fresh one (the driver, in its just-recreated directory).
    Otherwise an existing board is opened, or made when there is none (our clients on aeronmd). None when the
    board cannot be had (no such directory, no permission, another layout): then nothing wakes and nothing
    signals, and every park is bounded as before."""
    path = os.path.join(aeron_dir, WAKEUP_FILE)
    try:
        if create:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666 if file_mode is None else file_mode)
    except OSError as exc:
        _log.debug("no wake-up board at %s: %s", path, exc)
        return None
    try:
        if file_mode is not None:
            os.fchmod(fd, file_mode)
        fresh = os.fstat(fd).st_size == 0
        if fresh:
            os.ftruncate(fd, _wk.FILE_LENGTH)       # zeroed: all slots free; two creators write the same
        elif os.fstat(fd).st_size < _wk.FILE_LENGTH:
            return None
        mapping = mmap.mmap(fd, _wk.FILE_LENGTH)
    except OSError as exc:
        _log.debug("no wake-up board at %s: %s", path, exc)
        return None
    finally:
        os.close(fd)
    board = WakeupBoard(mapping, _send_socket())
    if fresh:
        board.init_header()
    elif not board.header_ok():
        board.close()
        _log.debug("wake-up board %s has another layout: not used", path)
        return None
    return board


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def new_waiter(board: WakeupBoard, mask: int, *, futex: bool = False) -> Waiter | None:
    """Claim a slot of ``board`` for a sleeper woken by ``mask``; None when every slot is held by a live process
    (the caller then parks with bounded sleeps only). Slots of processes that died are taken back.

    ``futex``: the sleeper waits on its slot's state word (a futex) and writers wake it with FUTEX_WAKE, for a
    thread that waits on nothing else (a client's poll loop); it has no socket, so no ``fileno()`` for an event
    loop and no other descriptors to wait on. Otherwise it waits in ``ppoll`` on its own socket."""
    token = random.getrandbits(63)
    index = board.claim(os.getpid(), mask, token, futex)
    if index < 0:
        for i in range(_wk.SLOT_COUNT):
            state, pid, _, _ = board.slot_state(i)
            if state != _wk.FREE and not _pid_alive(pid):
                board.reclaim(i, state)
        index = board.claim(os.getpid(), mask, token, futex)
        if index < 0:
            return None
    if futex:
        return Waiter(board, index, None)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        sock.bind(_wk.socket_name(token))
    except OSError:
        sock.close()
        board.reclaim(index, _wk.AWAKE)
        raise
    return Waiter(board, index, sock)


class ClientRegistry:
    """The clients of ours on ``board`` (slots in state CLIENT) and the driver's ALL_SIGNAL verdict; a view of
    the board's mapping (cold: per client and per park, not per message)."""

    __slots__ = ("_buffer",)

    def __init__(self, board: WakeupBoard) -> None:
        """View ``board``'s mapping (pinned by the board for as long as anyone holds it)."""
        self._buffer = AtomicBuffer(board.mapping, 0, _wk.FILE_LENGTH)

    @staticmethod
    def _slot(index: int) -> int:
        return _wk.SLOTS_OFFSET + index * _wk.SLOT_LENGTH

    def register(self, client_id: int) -> int:
        """Take a slot naming ``client_id`` as ours; its index, or -1 when the board is full of live slots."""
        buffer = self._buffer
        for attempt in range(2):
            for index in range(_wk.SLOT_COUNT):
                offset = self._slot(index)
                if buffer.get_i32_volatile(offset) == _wk.FREE and buffer.compare_and_set_i32(offset, _wk.FREE, _wk.AWAKE):
                    buffer.put_i32_ordered(offset + 4, os.getpid())
                    buffer.put_i64_ordered(offset + 8, 0)
                    buffer.put_i64_ordered(offset + 16, client_id)
                    buffer.put_i32_ordered(offset, CLIENT)
                    return index
            if attempt == 0:
                self._reclaim_dead()
        return -1

    def _reclaim_dead(self) -> None:
        buffer = self._buffer
        for index in range(_wk.SLOT_COUNT):
            offset = self._slot(index)
            state = buffer.get_i32_volatile(offset)
            if state == CLIENT and not _pid_alive(buffer.get_i32_volatile(offset + 4)):
                buffer.compare_and_set_i32(offset, CLIENT, _wk.FREE)

    def release(self, index: int, client_id: int) -> None:
        """Free slot ``index`` if it still registers ``client_id``."""
        offset = self._slot(index)
        if self._buffer.get_i64_volatile(offset + 16) == client_id:
            self._buffer.compare_and_set_i32(offset, CLIENT, _wk.FREE)

    def is_registered(self, client_id: int) -> bool:
        """True when a live slot registers ``client_id`` (a client of ours: it signals what it writes)."""
        buffer = self._buffer
        for index in range(_wk.SLOT_COUNT):
            offset = self._slot(index)
            if (buffer.get_i32_volatile(offset) == CLIENT and buffer.get_i64_volatile(offset + 16) == client_id
                    and _pid_alive(buffer.get_i32_volatile(offset + 4))):
                return True
        return False

    @property
    def all_signal(self) -> bool:
        """The driver's verdict: every live client of it signals (see ALL_SIGNAL_OFFSET)."""
        return self._buffer.get_i32_volatile(ALL_SIGNAL_OFFSET) == 1

    @all_signal.setter
    def all_signal(self, value: bool) -> None:
        self._buffer.put_i32_ordered(ALL_SIGNAL_OFFSET, 1 if value else 0)

    def quiet_park_ns(self, quiet_ns: int) -> int:
        """The bound a park may grow to: LONG_QUIET_PARK_NS while the driver says every client signals (at least
        ``quiet_ns``), else ``quiet_ns``."""
        return max(LONG_QUIET_PARK_NS, quiet_ns) if self.all_signal else quiet_ns

    def close(self) -> None:
        """Release the view of the mapping."""
        self._buffer.close()
