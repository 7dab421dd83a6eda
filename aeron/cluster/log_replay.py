# SPDX-License-Identifier: Apache-2.0
"""Replaying this member's own log recording through its services during an election (Aeron's ``LogReplay``): the
part between the position its services processed and the position it may replay to (the leader's append
position, or a follower's commit position).

The local archive replays the recording over the replay channel; once the image appears (it must start at the
replay's start position) the services are told to join it, bounded by the stop position, and the consensus module
reads it alongside them, moving the commit position as it goes.
"""
from __future__ import annotations

from typing import Any

from aeron.cluster._channels import add_session_id
from aeron.cluster._channels import to_int32
from aeron.cluster.consensus_module import State
from aeron.cluster.service.cluster import Role
from aeron.common.errors import Category, ClusterError

__all__ = ["LogReplay"]


class LogReplay:
    """One replay of the log from ``start_position`` to ``stop_position``."""

    def __init__(self, archive: Any, recording_id: int, start_position: int, stop_position: int, log_adapter: Any,
                 ctx: Any) -> None:
        """Start the archive replay and subscribe to it."""
        self.archive = archive
        self.start_position = start_position
        self.stop_position = stop_position
        self.log_adapter = log_adapter
        self.consensus_module_agent = log_adapter.consensus_module_agent
        self.ctx = ctx
        channel = ctx.replay_channel
        stream_id = ctx.replay_stream_id
        self.replay_session_id = archive.start_replay(recording_id, channel, stream_id, start_position,
                                                      stop_position - start_position)
        self.log_session_id = to_int32(self.replay_session_id)
        self.log_subscription = ctx.aeron.add_subscription(add_session_id(channel, self.log_session_id), stream_id)

    def close(self) -> None:
        """Stop the replay and drop its image (errors to the counted error handler)."""
        error_handler = self.ctx.counted_error_handler
        try:
            self.archive.stop_replay(self.replay_session_id)
        except Exception as ex:     # noqa: BLE001 - reported, the replay may have ended already
            error_handler(ex)
        self.log_adapter.disconnect(error_handler)
        try:
            self.log_subscription.close()
        except Exception as ex:     # noqa: BLE001
            error_handler(ex)

    def do_work(self) -> int:
        """Wait for the replay's image and have the services join it; then read it."""
        if self.log_adapter.image is None:
            image = self.log_subscription.image_by_session_id(self.log_session_id)
            if image is not None:
                if image.join_position != self.start_position:
                    raise ClusterError(f"joinPosition={image.join_position} expected startPosition="
                                       f"{self.start_position}", category=Category.WARN)
                self.log_adapter.image = image
                self.consensus_module_agent.await_services_ready(
                    self.log_subscription.channel, self.log_subscription.stream_id, self.log_session_id,
                    self.start_position, self.stop_position, True, Role.FOLLOWER)
                return 1
            return 0
        return int(self.consensus_module_agent.replay_log_poll(self.log_adapter, self.stop_position))

    def is_done(self) -> bool:
        """The replay reached its stop position and no snapshot it triggered is still being taken."""
        return self.log_adapter.position() >= self.stop_position and \
            self.consensus_module_agent.state is not State.SNAPSHOT

    def position(self) -> int:
        """Where the replay has read to."""
        return int(self.log_adapter.position())

    def __repr__(self) -> str:
        """Aeron's ``toString``."""
        return (f"LogReplay{{startPosition={self.start_position}, stopPosition={self.stop_position}, "
                f"replaySessionId={self.replay_session_id}, logSessionId={self.log_session_id}, "
                f"position={self.position()}}}")

