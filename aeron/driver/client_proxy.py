# SPDX-License-Identifier: Apache-2.0
"""ClientProxy: the conductor's answers and events to clients, on the to-clients broadcast buffer (port of
ClientProxy.java; the aeron_driver_conductor_on_* senders of aeron_driver_conductor.c). One method per message,
named as upstream; the encoding is aeron.common.command's."""
from __future__ import annotations

from aeron.common import command as cmd
from aeron._core.broadcast import BroadcastTransmitter


class ClientProxy:
    __slots__ = ("_transmitter", "transmissions")

    def __init__(self, transmitter: BroadcastTransmitter) -> None:
        self._transmitter = transmitter
        self.transmissions = 0          # messages sent so far: a parked client conductor of ours is woken for them

    def _transmit(self, message) -> None:
        self._transmitter.transmit(message.TYPE_ID, message.encode())
        self.transmissions += 1

    def on_error(self, correlation_id: int, error_code: int, message: str) -> None:
        self._transmit(cmd.ErrorResponse(correlation_id, error_code, message))

    def on_publication_ready(self, correlation_id: int, registration_id: int, session_id: int, stream_id: int,
                             position_limit_counter_id: int, channel_status_indicator_id: int, log_file_name: str,
                             is_exclusive: bool) -> None:
        msg_type_id = cmd.ON_EXCLUSIVE_PUBLICATION_READY if is_exclusive else cmd.ON_PUBLICATION_READY
        self._transmit(cmd.PublicationReady(msg_type_id, correlation_id, registration_id, session_id, stream_id,
                                            position_limit_counter_id, channel_status_indicator_id, log_file_name))

    def on_subscription_ready(self, correlation_id: int, channel_status_indicator_id: int) -> None:
        self._transmit(cmd.SubscriptionReady(correlation_id, channel_status_indicator_id))

    def on_operation_succeeded(self, correlation_id: int) -> None:
        self._transmit(cmd.OperationSucceeded(correlation_id))

    def on_available_image(self, correlation_id: int, session_id: int, stream_id: int,
                           subscription_registration_id: int, subscriber_position_id: int, log_file_name: str,
                           source_identity: str) -> None:
        self._transmit(cmd.ImageReady(correlation_id, session_id, stream_id, subscription_registration_id,
                                      subscriber_position_id, log_file_name, source_identity))

    def on_unavailable_image(self, correlation_id: int, subscription_registration_id: int, stream_id: int,
                             channel: str) -> None:
        self._transmit(cmd.ImageUnavailable(correlation_id, subscription_registration_id, stream_id, channel))

    def on_counter_ready(self, correlation_id: int, counter_id: int) -> None:
        self._transmit(cmd.CounterUpdate(cmd.ON_COUNTER_READY, correlation_id, counter_id))

    def on_unavailable_counter(self, registration_id: int, counter_id: int) -> None:
        self._transmit(cmd.CounterUpdate(cmd.ON_UNAVAILABLE_COUNTER, registration_id, counter_id))

    def on_static_counter(self, correlation_id: int, counter_id: int) -> None:
        self._transmit(cmd.StaticCounterReply(correlation_id, counter_id))

    def on_client_timeout(self, client_id: int) -> None:
        self._transmit(cmd.ClientTimeout(client_id))

    def on_next_available_session_id(self, correlation_id: int, session_id: int) -> None:
        self._transmit(cmd.NextSessionIdReply(correlation_id, session_id))

    def on_publication_error(self, frame: cmd.PublicationErrorFrame) -> None:
        """A publication's receiver sent an error frame, or its IPC image was rejected (ON_PUBLICATION_ERROR)."""
        self._transmit(frame)
