# SPDX-License-Identifier: Apache-2.0
"""ReplayMerge: replay a recording into a multi-destination subscription, then add the live destination and drop
the replay once the two meet, so the subscriber moves from history to the live stream without a gap (Aeron
``ReplayMerge``).

Needs a UDP subscription with ``control-mode=manual``; the replay destination is added at construction. Call
:meth:`poll` (or :meth:`do_work` and poll the image yourself) in a duty cycle until :attr:`is_merged`.
"""
from __future__ import annotations

import enum
import time
from collections.abc import Callable
from typing import Any

from aeron._core.codecs import archive as codecs
from aeron.archive.client.aeron_archive import AeronArchive, replay_image_session_id
from aeron.archive.client.handlers import FragmentHandler
from aeron.archive.configuration import NULL_POSITION, NULL_VALUE
from aeron.archive.errors import ArchiveError, ArchiveErrorCode, ArchiveTimeoutError, archive_error
from aeron.common.channel_uri import (ENDPOINT_PARAM_NAME, EOS_PARAM_NAME, IPC_CHANNEL, LINGER_PARAM_NAME,
                                      ChannelUri)
from aeron.common.constants import INT64_MAX
from aeron.common.errors import IllegalStateError, InvalidArgumentError

LIVE_ADD_MAX_WINDOW = 32 * 1024 * 1024
REPLAY_REMOVE_THRESHOLD = 0
MERGE_PROGRESS_TIMEOUT_DEFAULT_MS = 5_000
INITIAL_GET_MAX_RECORDED_POSITION_BACKOFF_MS = 8
GET_MAX_RECORDED_POSITION_BACKOFF_MAX_MS = 500
ARCHIVE_POLL_INTERVAL_MS = 100
_REPLAY_LENGTH = INT64_MAX              # Long.MAX_VALUE: replay until stopped


class ReplayMergeState(enum.Enum):
    """The merge's progress; MERGED, FAILED and CLOSED are final."""

    RESOLVE_REPLAY_PORT = "RESOLVE_REPLAY_PORT"
    GET_RECORDING_POSITION = "GET_RECORDING_POSITION"
    REPLAY = "REPLAY"
    CATCHUP = "CATCHUP"
    ATTEMPT_LIVE_JOIN = "ATTEMPT_LIVE_JOIN"
    MERGED = "MERGED"
    FAILED = "FAILED"
    CLOSED = "CLOSED"


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ReplayMerge:
    """Merge a replay of ``recording_id`` from ``start_position`` onto the live stream of ``subscription``.

    ``replay_channel`` is where the archive sends the replay (its endpoint is filled from the replay destination),
    ``replay_destination`` and ``live_destination`` the subscription's two destinations. A step that makes no
    progress for ``merge_progress_timeout_ms`` fails the merge with ArchiveTimeoutError. Not thread-safe; the
    archive client must not be used by another thread meanwhile (the merge reads its response stream).
    """

    def __init__(self, subscription: Any, archive: AeronArchive, replay_channel: str, replay_destination: str,
                 live_destination: str, recording_id: int, start_position: int,
                 epoch_clock_ms: Callable[[], int] = _now_ms,
                 merge_progress_timeout_ms: int = MERGE_PROGRESS_TIMEOUT_DEFAULT_MS) -> None:
        """Check the channels (InvalidArgumentError for IPC or a subscription without ``control-mode=manual``)
        and add the replay destination."""
        for channel in (subscription.channel, replay_channel, replay_destination, live_destination):
            if channel.startswith(IPC_CHANNEL):
                raise InvalidArgumentError("IPC merging is not supported")
        if "control-mode=manual" not in subscription.channel:
            raise InvalidArgumentError(f"Subscription URI must have 'control-mode=manual' uri={subscription.channel}")
        self.subscription = subscription
        self.archive = archive
        self.replay_destination = replay_destination
        self.live_destination = live_destination
        self.recording_id = recording_id
        self.start_position = start_position
        self._clock = epoch_clock_ms
        self.merge_progress_timeout_ms = merge_progress_timeout_ms
        self.replay_session_id = NULL_VALUE
        self._active_correlation_id = NULL_VALUE
        self._next_target_position = NULL_VALUE
        self._position_of_last_progress = NULL_VALUE
        self._backoff_ms = INITIAL_GET_MAX_RECORDED_POSITION_BACKOFF_MS
        self._time_of_last_scheduled_archive_poll_ms = 0
        self.is_live_added = False
        self._is_replay_active = False
        self.image: Any = None
        self._replay_uri = ChannelUri.parse(replay_channel)
        self._replay_uri.put(LINGER_PARAM_NAME, "0")
        self._replay_uri.put(EOS_PARAM_NAME, "false")
        replay_endpoint = ChannelUri.parse(replay_destination).get(ENDPOINT_PARAM_NAME)
        if replay_endpoint is None:
            raise InvalidArgumentError(f"replay destination has no endpoint: {replay_destination}")
        if replay_endpoint.endswith(":0"):
            self.state = ReplayMergeState.RESOLVE_REPLAY_PORT
        else:
            self._replay_uri.put(ENDPOINT_PARAM_NAME, replay_endpoint)
            self.state = ReplayMergeState.GET_RECORDING_POSITION
        subscription.async_add_destination(replay_destination)
        now = self._clock()
        self._time_of_last_progress_ms = now
        self._time_of_next_get_max_recorded_position_ms = now

    # -- public face ------------------------------------------------------------------------------------------
    @property
    def is_merged(self) -> bool:
        """True once the replay is removed and the subscription reads the live stream only."""
        return self.state is ReplayMergeState.MERGED

    @property
    def has_failed(self) -> bool:
        """True once a step raised."""
        return self.state is ReplayMergeState.FAILED

    def poll(self, fragment_handler: FragmentHandler, fragment_limit: int) -> int:
        """One :meth:`do_work`, then poll the replay image (once known); returns the fragments read."""
        self.do_work()
        image = self.image
        return 0 if image is None else image.poll(fragment_handler, fragment_limit)

    def do_work(self) -> int:
        """Advance the merge; raises (and enters FAILED) on an archive error or lack of progress."""
        now = self._clock()
        state = self.state
        try:
            if state is ReplayMergeState.RESOLVE_REPLAY_PORT:
                work = self._resolve_replay_port(now)
            elif state is ReplayMergeState.GET_RECORDING_POSITION:
                work = self._get_recording_position(now)
            elif state is ReplayMergeState.REPLAY:
                work = self._replay(now)
            elif state is ReplayMergeState.CATCHUP:
                work = self._catchup(now)
            elif state is ReplayMergeState.ATTEMPT_LIVE_JOIN:
                work = self._attempt_live_join(now)
            else:
                return 0
            self._check_progress(now)
            return work
        except BaseException:
            self._set_state(ReplayMergeState.FAILED)
            raise

    def close(self) -> None:
        """Remove the replay destination (unless merged) and stop the replay if it still runs. Idempotent."""
        if self.state is ReplayMergeState.CLOSED:
            return
        if not self.archive.aeron.is_closed:
            if self.state is not ReplayMergeState.MERGED:
                self.subscription.async_remove_destination(self.replay_destination)
            if self._is_replay_active and self.archive.archive_proxy.publication.is_connected:
                self._stop_replay()
        self._set_state(ReplayMergeState.CLOSED)

    def __enter__(self) -> "ReplayMerge":
        """Return the merge; the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the merge."""
        self.close()

    def __repr__(self) -> str:
        """State and positions."""
        return (f"ReplayMerge(state={self.state.name}, next_target_position={self._next_target_position}, "
                f"position_of_last_progress={self._position_of_last_progress}, is_live_added={self.is_live_added}, "
                f"replay_channel={self._replay_uri})")

    # -- steps ----------------------------------------------------------------------------------------------
    def _set_state(self, state: ReplayMergeState) -> None:
        self.state = state
        self._active_correlation_id = NULL_VALUE

    def _resolve_replay_port(self, now: int) -> int:
        resolved = self.subscription.resolved_endpoint
        if resolved is None:
            return 0
        self._replay_uri.replace_endpoint_wildcard_port(resolved)
        self._time_of_last_progress_ms = now
        self._set_state(ReplayMergeState.GET_RECORDING_POSITION)
        return 1

    def _get_recording_position(self, now: int) -> int:
        if self._active_correlation_id == NULL_VALUE:
            if self._call_get_max_recorded_position(now):
                self._time_of_last_progress_ms = now
                return 1
            return 0
        if self._poll_for_response(self._active_correlation_id):
            self._next_target_position = self.archive.control_response_poller.relevant_id
            self._active_correlation_id = NULL_VALUE
            if self._next_target_position != NULL_POSITION:
                self._time_of_last_progress_ms = now
                self._set_state(ReplayMergeState.REPLAY)
            return 1
        return 0

    def _replay(self, now: int) -> int:
        archive = self.archive
        if self._active_correlation_id == NULL_VALUE:
            correlation_id = archive.aeron.next_correlation_id()
            if archive.archive_proxy.replay(self.recording_id, self.start_position, _REPLAY_LENGTH,
                                            str(self._replay_uri), self.subscription.stream_id, correlation_id,
                                            archive.control_session_id):
                self._active_correlation_id = correlation_id
                self._time_of_last_progress_ms = now
                return 1
            return 0
        if self._poll_for_response(self._active_correlation_id):
            self._is_replay_active = True
            self.replay_session_id = archive.control_response_poller.relevant_id
            self._time_of_last_progress_ms = now
            self._backoff_ms = INITIAL_GET_MAX_RECORDED_POSITION_BACKOFF_MS
            self._time_of_next_get_max_recorded_position_ms = now
            self._set_state(ReplayMergeState.CATCHUP)
            return 1
        return 0

    def _catchup(self, now: int) -> int:
        if self.image is None and self.subscription.is_connected:
            self._time_of_last_progress_ms = now
            image = self.subscription.image_by_session_id(replay_image_session_id(self.replay_session_id))
            if image is not None:
                self.image = image
                self._position_of_last_progress = image.position
            else:
                self._position_of_last_progress = NULL_VALUE
        image = self.image
        if image is None:
            return 0
        position = image.position
        if position >= self._next_target_position:
            self._time_of_last_progress_ms = now
            self._position_of_last_progress = position
            self._set_state(ReplayMergeState.ATTEMPT_LIVE_JOIN)
            return 1
        if position > self._position_of_last_progress:
            self._time_of_last_progress_ms = now
            self._position_of_last_progress = position
        elif image.is_closed:
            raise IllegalStateError("ReplayMerge Image closed unexpectedly.")
        return 0

    def _attempt_live_join(self, now: int) -> int:
        if self._active_correlation_id == NULL_VALUE:
            if self._call_get_max_recorded_position(now):
                self._time_of_last_progress_ms = now
                return 1
            return 0
        if not self._poll_for_response(self._active_correlation_id):
            return 0
        self._next_target_position = self.archive.control_response_poller.relevant_id
        self._active_correlation_id = NULL_VALUE
        if self._next_target_position != NULL_POSITION:
            next_state = ReplayMergeState.CATCHUP
            image = self.image
            if image is not None:
                position = image.position
                if self._should_add_live_destination(position):
                    self.subscription.async_add_destination(self.live_destination)
                    self._time_of_last_progress_ms = now
                    self._position_of_last_progress = position
                    self.is_live_added = True
                elif self._should_stop_and_remove_replay(position):
                    self.subscription.async_remove_destination(self.replay_destination)
                    self._stop_replay()
                    self._time_of_last_progress_ms = now
                    self._position_of_last_progress = position
                    next_state = ReplayMergeState.MERGED
            self._set_state(next_state)
        return 1

    def _call_get_max_recorded_position(self, now: int) -> bool:
        if now < self._time_of_next_get_max_recorded_position_ms:
            return False
        archive = self.archive
        correlation_id = archive.aeron.next_correlation_id()
        sent = archive.archive_proxy.get_max_recorded_position(self.recording_id, correlation_id,
                                                               archive.control_session_id)
        if sent:
            self._active_correlation_id = correlation_id
        self._backoff_ms = min(self._backoff_ms * 2, GET_MAX_RECORDED_POSITION_BACKOFF_MAX_MS)
        self._time_of_next_get_max_recorded_position_ms = now + self._backoff_ms
        return sent

    def _stop_replay(self) -> None:
        archive = self.archive
        correlation_id = archive.aeron.next_correlation_id()
        if archive.archive_proxy.stop_replay(self.replay_session_id, correlation_id, archive.control_session_id):
            self._is_replay_active = False

    def _should_add_live_destination(self, position: int) -> bool:
        return (not self.is_live_added and self._next_target_position - position
                <= min(self.image.term_buffer_length >> 2, LIVE_ADD_MAX_WINDOW))

    def _should_stop_and_remove_replay(self, position: int) -> bool:
        return (self.is_live_added and self._next_target_position - position <= REPLAY_REMOVE_THRESHOLD
                and self.image.log_buffers.active_transport_count >= 2)

    def _check_progress(self, now: int) -> None:
        if now > self._time_of_last_progress_ms + self.merge_progress_timeout_ms:
            transports = self.image.log_buffers.active_transport_count if self.image is not None else 0
            raise ArchiveTimeoutError(f"ReplayMerge no progress: state={self.state.name}, "
                                      f"activeTransportCount={transports}", ArchiveErrorCode.GENERIC)
        if (self._active_correlation_id == NULL_VALUE
                and now > self._time_of_last_scheduled_archive_poll_ms + ARCHIVE_POLL_INTERVAL_MS):
            self._time_of_last_scheduled_archive_poll_ms = now
            self._poll_for_response(NULL_VALUE)

    def _poll_for_response(self, correlation_id: int) -> bool:
        archive = self.archive
        poller = archive.control_response_poller
        count = poller.poll()
        if poller.is_poll_complete:
            if poller.control_session_id == archive.control_session_id:
                if poller.code == codecs.ControlResponseCode.ERROR:
                    raise archive_error(f"archive response for correlationId={poller.correlation_id}, error: "
                                        f"{poller.error_message}", poller.relevant_id, poller.correlation_id)
                return poller.correlation_id == correlation_id
        elif count == 0 and not poller.subscription.is_connected:
            raise ArchiveError("archive is not connected")
        return False
