# SPDX-License-Identifier: Apache-2.0
"""What the driver keeps for every log it owns (IPC and network publications, publication images).

- DriverLog: the three term views, the producer position read from the tails, cleaning behind the consumers
  (cleanBufferTo), closing.
- LogFactory: creates the log files (``publications/<registration id>.logbuffer``,
  ``images/<correlation id>.logbuffer``) with their metadata filled as the C driver fills it, counts them in
  ``Bytes currently mapped``, and deletes them.
- DriverPublication: the identity and lifecycle IPC and network publications share: registration id, owner,
  session and stream, the ``pub-pos`` and ``pub-lmt`` counters, the publisher window, the reference count of the
  clients' links, and ACTIVE → DRAINING → LINGER → DONE (aeron_ipc_publication.c, aeron_network_publication.c).
"""
from __future__ import annotations

import os
import random
import socket

from aeron._core.counters import AtomicCounter
from aeron._core.logbuffer import LOG_TYPE_CONCURRENT, LOG_TYPE_EXCLUSIVE, LOG_TYPE_IMAGE, LogBuffers
from aeron._core.term_scanner import LogCleaner
from aeron.driver.driver_common import ACTIVE, CommandError, wrap32
from aeron.driver.untethered import TETHER_ACTIVE
from aeron.common.errors import ErrorCode, InvalidArgumentError


class DriverLog:
    log: LogBuffers
    terms: list
    term_length: int
    term_length_mask: int
    position_bits_to_shift: int

    def _init_log(self, log: LogBuffers, clean_position: int) -> None:
        self.log = log
        self.terms = [log.term_buffer(i) for i in range(3)]
        self.term_length = log.term_length
        self.term_length_mask = log.term_length - 1
        self.position_bits_to_shift = log.position_bits_to_shift
        self._cleaner = LogCleaner(log, clean_position)

    @property
    def clean_position(self) -> int:
        """Where cleaning has got to: the log is zero from here back a whole term."""
        return self._cleaner.clean_position

    @clean_position.setter
    def clean_position(self, position: int) -> None:
        self._cleaner.clean_position = position

    def producer_position(self) -> int:
        """Where the publishers have got to: the active partition's tail, capped at the term end."""
        return self.log.producer_position()

    def clean_buffer_to(self, target: int) -> None:
        """Zero consumed terms up to ``target`` so a partition is clean before it is reused."""
        if self._cleaner.clean_position < target:
            self._cleaner.clean_to(target)

    def close(self) -> None:
        """Release the term views, then the mapping."""
        for term in self.terms:
            term.close()
        self.terms = []
        self.log.close()


def os_default_socket_buffers() -> tuple[int, int]:
    """The OS default SO_SNDBUF / SO_RCVBUF, which the C driver probes and writes into every log's metadata."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            return (probe.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                    probe.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
    except OSError:
        return 0, 0


class LogFactory:
    """Creates and deletes the driver's log files under ``aeron_dir`` (the C driver's raw log factory)."""

    def __init__(self, aeron_dir: str, ctx, bytes_mapped: AtomicCounter) -> None:
        self._publications_dir = os.path.join(aeron_dir, "publications")
        self._images_dir = os.path.join(aeron_dir, "images")
        self._page_size = ctx.file_page_size
        self._file_mode = ctx.dir_file_mode             # aeron.dir.file.mode: None for 0o666 less the umask
        self._sparse_images = ctx.term_buffer_sparse_file
        self._untethered_window_limit_timeout_ns = ctx.untethered_window_limit_timeout_ns
        self._untethered_resting_timeout_ns = ctx.untethered_resting_timeout_ns
        self._bytes_mapped = bytes_mapped           # system counter "Bytes currently mapped"
        self._os_sndbuf, self._os_rcvbuf = os_default_socket_buffers()

    def create_publication_log(self, registration_id: int, session_id: int, stream_id: int, channel: str, *,
                               term_length: int, mtu_length: int, is_exclusive: bool,
                               start: tuple[int, int, int] | None, sparse: bool, window_length: int,
                               linger_timeout_ns: int, signal_eos: bool, response_correlation_id: int | None = None,
                               is_response: bool = False,
                               untethered_timeouts: tuple[int, int, int] | None = None) -> LogBuffers:
        """A publication's log: a random initial term id, or ``start`` = (init-term-id, term-id, term-offset);
        ``untethered_timeouts`` (window limit, linger, resting) as the channel gives them, else the driver's."""
        path = os.path.join(self._publications_dir, f"{registration_id}.logbuffer")
        if start is None:
            initial_term_id, term_id, term_offset = wrap32(random.getrandbits(32)), 0, 0
        else:
            initial_term_id, term_id, term_offset = start
        window_limit_ns, linger_ns, resting_ns = untethered_timeouts or (
            self._untethered_window_limit_timeout_ns, self._untethered_window_limit_timeout_ns,
            self._untethered_resting_timeout_ns)
        try:
            log = LogBuffers.create(
                path, term_length=term_length, file_mode=self._file_mode, initial_term_id=initial_term_id,
                session_id=session_id, stream_id=stream_id, mtu_length=mtu_length, page_size=self._page_size,
                correlation_id=registration_id, log_type=LOG_TYPE_EXCLUSIVE if is_exclusive else LOG_TYPE_CONCURRENT,
                term_id=term_id, term_offset=term_offset, start_at_position=start is not None, sparse=sparse,
                publication_window_length=window_length, linger_timeout_ns=linger_timeout_ns,
                signal_eos=1 if signal_eos else 0,
                untethered_window_limit_timeout_ns=window_limit_ns, untethered_linger_timeout_ns=linger_ns,
                untethered_resting_timeout_ns=resting_ns,
                os_default_socket_sndbuf_length=self._os_sndbuf, os_default_socket_rcvbuf_length=self._os_rcvbuf,
                response_correlation_id=-1 if response_correlation_id is None else response_correlation_id,
                is_response=1 if is_response else 0)
        except InvalidArgumentError as exc:
            raise CommandError(ErrorCode.INVALID_CHANNEL, f"{channel}: {exc}") from exc
        self._bytes_mapped.get_and_add(log.log_length)
        return log

    def create_image_log(self, correlation_id: int, session_id: int, stream_id: int, *, term_length: int,
                         mtu_length: int, initial_term_id: int, term_id: int, term_offset: int, tether: bool,
                         untethered_timeouts: tuple[int, int, int], **metadata: int) -> LogBuffers:
        """An image's log, starting where the sender's SETUP says its stream is; ``tether`` and the untethered
        (window limit, linger, resting) timeouts are those of the subscription that made it, as the C driver
        writes them."""
        path = os.path.join(self._images_dir, f"{correlation_id}.logbuffer")
        window_limit_ns, linger_ns, resting_ns = untethered_timeouts
        log = LogBuffers.create(
            path, term_length=term_length, file_mode=self._file_mode, initial_term_id=initial_term_id,
            session_id=session_id, stream_id=stream_id, mtu_length=mtu_length, page_size=self._page_size,
            correlation_id=correlation_id, log_type=LOG_TYPE_IMAGE, term_id=term_id, term_offset=term_offset,
            start_at_position=True,
            sparse=self._sparse_images, os_default_socket_sndbuf_length=self._os_sndbuf,
            os_default_socket_rcvbuf_length=self._os_rcvbuf, tether=1 if tether else 0,
            untethered_window_limit_timeout_ns=window_limit_ns, untethered_linger_timeout_ns=linger_ns,
            untethered_resting_timeout_ns=resting_ns, **metadata)
        self._bytes_mapped.get_and_add(log.log_length)
        return log

    def discard(self, log: LogBuffers) -> None:
        """A log whose resource could not be made: unmap it and delete its file."""
        self._delete(log.path, log.log_length, log.close)

    def delete(self, resource: DriverLog) -> None:
        """Close a resource's log (its term views first), delete the file, stop counting its bytes."""
        log = resource.log
        self._delete(log.path, log.log_length, resource.close)

    def _delete(self, path: str | None, length: int, close) -> None:
        try:
            close()
        finally:
            try:
                if path:
                    os.unlink(path)
            except FileNotFoundError:
                pass
            self._bytes_mapped.get_and_add(-length)


class DriverPublication(DriverLog):
    """Identity, publisher position and limit, reference count and lifecycle of a publication's log."""

    def __init__(self, *, registration_id: int, owner_client_id: int, session_id: int, stream_id: int,
                 channel: str, is_exclusive: bool, log: LogBuffers, pub_pos: AtomicCounter, pub_lmt: AtomicCounter,
                 window_length: int, linger_timeout_ns: int, unblock_timeout_ns: int, now_ns: int) -> None:
        self.registration_id = registration_id
        self.owner_client_id = owner_client_id
        self.session_id = session_id
        self.stream_id = stream_id
        self.channel = channel
        self.is_exclusive = is_exclusive
        self._init_log(log, 0)
        self.log_path = log.path or ""
        self.pub_pos = pub_pos                      # pub-pos: where the publishers are
        self.pub_lmt = pub_lmt                      # pub-lmt: how far they may go
        self.window_length = window_length
        self.trip_gain = window_length // 8
        self.linger_timeout_ns = linger_timeout_ns
        self.unblock_timeout_ns = unblock_timeout_ns
        self.ref_count = 1                          # one per client link (ADD_PUBLICATION of a shared log)
        self.state = ACTIVE
        self.state_change_ns = now_ns
        start = self.producer_position()
        initial_term_id = log.initial_term_id
        # (initial term id, term id, term offset) the log started at: what a publication joining it must name
        self.start = (initial_term_id, wrap32(initial_term_id + (start >> self.position_bits_to_shift)),
                      start & self.term_length_mask)
        self.clean_position = start
        self.consumer_position = start
        self.last_consumer_position = start
        self.time_of_last_consumer_change_ns = now_ns
        self.trip_limit = 0
        pub_pos.set_ordered(start)
        pub_lmt.set_ordered(start)

    @property
    def pub_pos_id(self) -> int:
        return self.pub_pos.counter_id

    @property
    def pub_lmt_id(self) -> int:
        return self.pub_lmt.counter_id

    def check_joins_existing(self, term_length: int | None, mtu_length: int | None, session_id: int | None = None,
                             start: tuple = (None, None, None)) -> None:
        """A second ADD_PUBLICATION shares the log only if it asks for nothing the log does not have: its session
        id, MTU, term length and, given as init-term-id/term-id/term-offset, the position it started at
        (aeron_confirm_publication_match)."""
        if session_id is not None and session_id != self.session_id:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"existing publication has different 'session-id': "
                                                        f"existing={self.session_id} requested={session_id}")
        mtu = self.log.mtu_length
        if mtu_length is not None and mtu_length != mtu:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"existing publication has different 'mtu': "
                                                        f"existing={mtu} requested={mtu_length}")
        if term_length is not None and term_length != self.term_length:
            raise CommandError(ErrorCode.GENERIC_ERROR, f"existing publication has different 'term-length': "
                                                        f"existing={self.term_length} requested={term_length}")
        if start[0] is not None:
            for key, existing, requested in zip(("init-term-id", "term-id", "term-offset"), self.start, start):
                if existing != requested:
                    raise CommandError(ErrorCode.GENERIC_ERROR, f"existing publication has different '{key}': "
                                                                f"existing={existing} requested={requested}")

    def _update_limit(self, min_position: int) -> int:
        """Move the publisher limit to a window past ``min_position`` (the slowest reader that holds the publication
        back) once that passes the trip limit, cleaning the log a term behind it; 1 when it moved (the limit update of
        aeron_ipc_publication_update_pub_pos_and_lmt and aeron_network_publication_update_pub_pos_and_lmt)."""
        new_limit = min_position + self.window_length
        if new_limit < self.trip_limit:
            return 0
        self.clean_buffer_to(min_position - self.term_length)
        self.pub_lmt.set_ordered(new_limit)
        self.trip_limit = new_limit + self.trip_gain
        return 1

    def _limit_watch(self, positions: list[AtomicCounter]) -> tuple[int, list[AtomicCounter]] | None:
        """When the conductor next moves this publication's limit (update_pub_pos_and_lmt: once ``positions``, those
        that hold it back, have all moved a trip gain), as a compiled probe's group (driver_wakeup.SignallingAgent):
        (the threshold, ``positions``). None when not active or nothing holds it back (the conductor does not move
        it then). A group reached already is work for the next cycle (the sender went on after the conductor)."""
        if self.state != ACTIVE or not positions:
            return None
        return self.trip_limit - self.window_length, positions

    def incref(self) -> None:
        self.ref_count += 1

    def decref(self) -> int:
        """One client link fewer; returns how many are left."""
        self.ref_count -= 1
        return self.ref_count

    def to_state(self, state: str, now_ns: int) -> None:
        self.state = state
        self.state_change_ns = now_ns

    def close(self) -> None:
        """Release the counters' handles and the log (the conductor frees the counters themselves)."""
        self.pub_pos.close()
        self.pub_lmt.close()
        super().close()

    def drop_subscribers(self, links: dict, conductor) -> None:
        """Every linked subscriber loses this publication's image: the tethered ones are told (untethered ones,
        resting or lingering, were told when they left), then each is unlinked."""
        for link in list(links.values()):
            subscription = link.subscription
            if link.state == TETHER_ACTIVE:
                conductor.client_proxy.on_unavailable_image(self.registration_id, subscription.registration_id,
                                                            self.stream_id, subscription.channel)
            conductor.unlink_subscriber(subscription, self, self.registration_id)
