# SPDX-License-Identifier: Apache-2.0
"""Waking instead of spinning: the wake-up board in the aeron dir, the masks that say who wakes whom, and how a
driver agent or a client gets a waiter or a signal (docs/wakeup.md; the compiled half is aeron._core.wakeup).

The board is ``<aeron dir>/wakeup.dat``, a file of ours that no Aeron tool opens; every Aeron file keeps its
official layout. Whoever gets there first creates it (our driver recreates it with the directory); a board
that cannot be opened or has another layout means "no wake-ups": sleepers then time out as a backoff park
does, and writers signal nothing.

Masks (one 64-bit word per sleeper): bit ``stream_id % STREAM_BITS`` for subscribers of that stream, one bit per
driver agent: CONDUCTOR (client commands), SENDER (data in a network publication), RECEIVER (commands from the
conductor; its sockets wake it by themselves), and SPIES for spy subscribers.
"""
from __future__ import annotations

import logging
import mmap
import os
import random
import socket

from aeron._core import wakeup as _wk
from aeron._core.wakeup import WakeSignal, Waiter, WakeupBoard, stream_bit

__all__ = ["WAKEUP_FILE", "STREAM_BITS", "ALL_STREAMS", "CONDUCTOR", "SENDER", "RECEIVER", "SPIES", "stream_bit",
           "streams_mask", "open_board", "new_waiter", "WakeSignal", "Waiter", "WakeupBoard"]

WAKEUP_FILE = "wakeup.dat"
STREAM_BITS = _wk.STREAM_BITS
ALL_STREAMS = (1 << STREAM_BITS) - 1
RECEIVER = 1 << 60
SENDER = 1 << 61
CONDUCTOR = 1 << 62
# bit 63 (the sign bit of the int64 mask): spy subscribers, the only readers of a network publication's log. A
# network publication's offers signal SENDER | SPIES, not their stream's bit: its data reaches that stream's
# subscribers only through the driver's receiver, which wakes them when it has inserted it.
SPIES = -(1 << 63)

_log = logging.getLogger("aeron.wakeup")


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


def new_waiter(board: WakeupBoard, mask: int) -> Waiter | None:
    """Claim a slot of ``board`` for a sleeper woken by ``mask``; None when every slot is held by a live process
    (the caller then parks with bounded sleeps only). Slots of processes that died are taken back."""
    token = random.getrandbits(63)
    index = board.claim(os.getpid(), mask, token)
    if index < 0:
        for i in range(_wk.SLOT_COUNT):
            state, pid, _, _ = board.slot_state(i)
            if state != _wk.FREE and not _pid_alive(pid):
                board.reclaim(i, state)
        index = board.claim(os.getpid(), mask, token)
        if index < 0:
            return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        sock.bind(_wk.socket_name(token))
    except OSError:
        sock.close()
        board.reclaim(index, _wk.AWAKE)
        raise
    return Waiter(board, index, sock)
