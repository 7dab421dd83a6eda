# SPDX-License-Identifier: Apache-2.0
"""UnconfirmedImages: how much a receive channel endpoint lets sources that have not proven themselves take.

A SETUP frame costs its sender 40 bytes and the receiver an image: a log of three terms, reserved in the images
directory (192 MiB on /dev/shm for a 64 MiB term), its counters, and an available-image event for every subscriber.
Aeron's C driver bounds that only by the stream session limit (aeron_data_packet_dispatcher_on_setup), so forged
SETUPs can take a machine's shared memory. Here each endpoint keeps a budget for them:

- An image is **unconfirmed** from the SETUP that asks for it until it takes in its first frame from its source: a
  DATA, PAD or heartbeat frame within its window (ImageReceiveState ``inserts`` and ``heartbeats``). A real sender
  sends one as soon as it hears the image's first status message; a SETUP alone never makes one.
- The unconfirmed images of an endpoint, and of each source (address and port) on it, are bounded in number and in
  log bytes. An image holds its share from its SETUP until it is confirmed, or else until its log file is deleted,
  so the bound is on what the images directory holds, lingering logs included. An endpoint or a source that holds
  nothing takes any one image: a log longer than the byte bound (three 1 GiB terms) connects, one at a time.
- A SETUP beyond the bounds makes no image: it is counted in ``Unconfirmed images rejected`` and dropped. Its sender
  asks again: Aeron senders repeat a SETUP every 100 ms until a status message answers.
- While an endpoint refuses SETUPs for want of room (its last refusal less than ``image_timeout_ns`` ago) it is
  **contended**; so is a source refused for want of room in its own share, without slowing the others. Then the
  unconfirmed images older than ``image_timeout_ns`` (all of the endpoint's, or the source's) are reclaimed as if
  their liveness had timed out (PublicationImage.on_time_event), and the first SETUP of a session is refused: only a
  session that asks again (same source, stream and session id) may take the room that frees. Real senders repeat
  their SETUP; a flood of made-up sessions does not, so it gets no image while it lasts, and what it got before ages
  out. Uncontended, an unconfirmed image lives by the image liveness timeout and every SETUP that fits is taken, as
  in Aeron.

Refused sessions are remembered for REFUSAL_MEMORY_NS, at most REFUSED_SESSIONS_PER_SOURCE per source and
REFUSED_SOURCES sources, the least recently refused forgotten first.

Its limits: a forger that also sends a frame for each session it makes up, or repeats each SETUP, passes for a real
sender. It then holds no more than a source's share while unconfirmed, and its confirmed images are bounded by the
stream session limit and the image liveness timeout, as in Aeron. Source addresses can be forged too: the per-source
bounds stop one honest address, the endpoint's bounds hold whatever the datagrams claim.

Threads: the receiver admits SETUPs (``admit``) and looks for confirmations (``sweep``); the conductor attaches the
image it made and releases a hold when the creation fails or the log is deleted; the conductor also asks whether an
image is to be reclaimed. A lock keeps the totals whole: every call is on a cold path (a SETUP, a sweep, a timer).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from aeron._core.logbuffer import PAGE_MIN_SIZE, compute_log_length

DEFAULT_IMAGES_MAX = 64
DEFAULT_LOG_BYTES_MAX = 1 << 30
DEFAULT_SOURCE_IMAGES_MAX = 16
DEFAULT_SOURCE_LOG_BYTES_MAX = 512 << 20
DEFAULT_IMAGE_TIMEOUT_NS = 2_000_000_000
# how long a refused session counts as having asked: a sender not yet connected repeats its SETUP every 100 ms
# (aeron_network_publication_setup_message_check), but one that has other receivers sends a single SETUP per status
# message asking for one, and the endpoint asks once per PENDING_SETUP_TIMEOUT_NS (1 s): several of those fit
REFUSAL_MEMORY_NS = 5_000_000_000
REFUSED_SESSIONS_PER_SOURCE = 64
REFUSED_SOURCES = 256


class UnconfirmedHold:
    """The share one unconfirmed image (or one being made) holds of its endpoint's budget."""

    __slots__ = ("image", "log_length", "released", "since_ns", "source")

    def __init__(self, source: tuple, log_length: int, since_ns: int) -> None:
        self.source = source
        self.log_length = log_length
        self.since_ns = since_ns
        self.image: Any = None              # the PublicationImage, once the conductor has made it
        self.released = False


def is_confirmed(image: Any) -> bool:
    """Whether ``image`` has taken in a DATA, PAD or heartbeat frame from its source since its SETUP."""
    state = image.receive_state
    return state.inserts + state.heartbeats > 0


class UnconfirmedImages:
    """The budget of one receive channel endpoint (see the module docstring). ``rejected``: the AtomicCounter that
    counts refused SETUPs (``Unconfirmed images rejected``), or None."""

    def __init__(self, images_max: int = DEFAULT_IMAGES_MAX, log_bytes_max: int = DEFAULT_LOG_BYTES_MAX,
                 source_images_max: int = DEFAULT_SOURCE_IMAGES_MAX,
                 source_log_bytes_max: int = DEFAULT_SOURCE_LOG_BYTES_MAX,
                 image_timeout_ns: int = DEFAULT_IMAGE_TIMEOUT_NS, page_size: int = PAGE_MIN_SIZE,
                 rejected: Any = None) -> None:
        self.images_max = images_max
        self.log_bytes_max = log_bytes_max
        self.source_images_max = source_images_max
        self.source_log_bytes_max = source_log_bytes_max
        self.image_timeout_ns = image_timeout_ns
        self.page_size = page_size
        self._rejected = rejected
        self._lock = threading.Lock()
        self._holds: dict[UnconfirmedHold, None] = {}          # an ordered set
        self._sources: dict[tuple, list[int]] = {}              # source -> [images, log bytes] it holds
        self.image_count = 0
        self.log_bytes = 0
        # source -> (stream id, session id) -> when its SETUP was last refused; both least recently refused first
        self._refused: OrderedDict[tuple, OrderedDict[tuple[int, int], int]] = OrderedDict()
        self.contended_until_ns = 0                             # the endpoint's contention
        self._contended_sources: dict[tuple, int] = {}          # source -> until when it is contended

    # -- receiver thread ---------------------------------------------------------------------------------------
    def admit(self, stream_id: int, session_id: int, source: tuple, term_length: int,
              now_ns: int) -> UnconfirmedHold | None:
        """A SETUP for a new image of (stream, session) from ``source`` (address, port, ...): its hold, or None
        when refused (then counted)."""
        log_length = compute_log_length(term_length, self.page_size)
        source = tuple(source[:2])
        key = (stream_id, session_id)
        with self._lock:
            asked_before = self._asked_before(source, key, now_ns)
            endpoint_contended = now_ns < self.contended_until_ns
            if asked_before or not (endpoint_contended or now_ns < self._contended_sources.get(source, 0)):
                if not (self._endpoint_fits(log_length) and self._source_fits(source, log_length)):
                    self._confirm()
                endpoint_contended = not self._endpoint_fits(log_length)
                if not endpoint_contended and self._source_fits(source, log_length):
                    if asked_before:
                        self._forget_refusal(source, key)
                    hold = UnconfirmedHold(source, log_length, now_ns)
                    self._add(hold)
                    return hold
            # refused: what is contended stays so while SETUPs are turned away
            self._remember_refusal(source, key, now_ns)
            if endpoint_contended:
                self.contended_until_ns = now_ns + self.image_timeout_ns
            else:
                self._contended_sources[source] = now_ns + self.image_timeout_ns
        if self._rejected is not None:
            self._rejected.increment_ordered()
        return None

    def sweep(self, now_ns: int) -> None:
        """Release the holds of the images confirmed since, and forget refusals older than REFUSAL_MEMORY_NS."""
        with self._lock:
            self._confirm()
            for source in [s for s, until_ns in self._contended_sources.items() if until_ns <= now_ns]:
                del self._contended_sources[source]
            stale = now_ns - REFUSAL_MEMORY_NS
            for source in list(self._refused):
                sessions = self._refused[source]
                while sessions and next(iter(sessions.values())) < stale:
                    sessions.popitem(last=False)
                if not sessions:
                    del self._refused[source]

    # -- conductor thread --------------------------------------------------------------------------------------
    def attach(self, hold: UnconfirmedHold, image: Any) -> None:
        """The conductor made the image ``hold`` was taken for."""
        with self._lock:
            if not hold.released:
                hold.image = image

    def release(self, hold: UnconfirmedHold | None) -> None:
        """The image's creation failed or its log was deleted: its share is free (once; None: nothing)."""
        if hold is None:
            return
        with self._lock:
            self._release(hold)

    def reclaims(self, hold: UnconfirmedHold | None, image: Any, silent_ns: int, now_ns: int) -> bool:
        """Whether ``image`` is to go now although its liveness has not timed out: it is still unconfirmed, has been
        silent for ``image_timeout_ns`` (``silent_ns``), and its endpoint or its source is contended."""
        return (hold is not None and not hold.released and silent_ns > self.image_timeout_ns
                and self.is_contended(now_ns, hold.source) and not is_confirmed(image))

    # -- diagnostics ---------------------------------------------------------------------------------------------
    def is_contended(self, now_ns: int, source: tuple | None = None) -> bool:
        """Whether the endpoint, or else ``source`` (address, port), turns first asks away at ``now_ns``."""
        return now_ns < self.contended_until_ns or (
            source is not None and now_ns < self._contended_sources.get(tuple(source[:2]), 0))

    def held_by(self, source: tuple) -> tuple[int, int]:
        """(images, log bytes) that ``source`` holds."""
        with self._lock:
            images, log_bytes = self._sources.get(tuple(source[:2]), (0, 0))
            return images, log_bytes

    def refused_session_count(self) -> int:
        """The refused sessions remembered (tests and diagnostics)."""
        with self._lock:
            return sum(len(sessions) for sessions in self._refused.values())

    # -- under the lock -------------------------------------------------------------------------------------------
    def _endpoint_fits(self, log_length: int) -> bool:
        return self.image_count == 0 or (self.image_count < self.images_max and
                                         self.log_bytes + log_length <= self.log_bytes_max)

    def _source_fits(self, source: tuple, log_length: int) -> bool:
        images, log_bytes = self._sources.get(source, (0, 0))
        return images == 0 or (images < self.source_images_max and
                               log_bytes + log_length <= self.source_log_bytes_max)

    def _add(self, hold: UnconfirmedHold) -> None:
        self._holds[hold] = None
        self.image_count += 1
        self.log_bytes += hold.log_length
        totals = self._sources.setdefault(hold.source, [0, 0])
        totals[0] += 1
        totals[1] += hold.log_length

    def _release(self, hold: UnconfirmedHold) -> None:
        if hold.released:
            return
        hold.released = True
        del self._holds[hold]
        self.image_count -= 1
        self.log_bytes -= hold.log_length
        totals = self._sources[hold.source]
        totals[0] -= 1
        totals[1] -= hold.log_length
        if totals[0] == 0:
            del self._sources[hold.source]

    def _confirm(self) -> bool:
        """Release the holds of images that have been confirmed; whether there were any."""
        confirmed = [hold for hold in self._holds if hold.image is not None and is_confirmed(hold.image)]
        for hold in confirmed:
            self._release(hold)
        return bool(confirmed)

    def _asked_before(self, source: tuple, key: tuple[int, int], now_ns: int) -> bool:
        sessions = self._refused.get(source)
        refused_ns = sessions.get(key) if sessions is not None else None
        return refused_ns is not None and now_ns - refused_ns <= REFUSAL_MEMORY_NS

    def _forget_refusal(self, source: tuple, key: tuple[int, int]) -> None:
        sessions = self._refused[source]
        del sessions[key]
        if not sessions:
            del self._refused[source]

    def _remember_refusal(self, source: tuple, key: tuple[int, int], now_ns: int) -> None:
        sessions = self._refused.get(source)
        if sessions is None:
            if len(self._refused) >= REFUSED_SOURCES:
                self._refused.popitem(last=False)
            sessions = self._refused[source] = OrderedDict()
        else:
            self._refused.move_to_end(source)
        sessions[key] = now_ns
        sessions.move_to_end(key)
        if len(sessions) > REFUSED_SESSIONS_PER_SOURCE:
            sessions.popitem(last=False)
