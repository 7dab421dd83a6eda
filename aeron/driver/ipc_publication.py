# SPDX-License-Identifier: Apache-2.0
"""IpcPublication: one log shared by the publishers and the subscribers of an IPC stream (port of
aeron_ipc_publication.c).

Every duty cycle the conductor moves the publisher limit behind the slowest subscriber
(``update_pub_pos_and_lmt``); every timer interval ``on_time_event`` runs the rest: untethered subscribers,
unblocking a claim a dead publisher left, the end of a REJECT_IMAGE cool-down, and the lifecycle
ACTIVE → DRAINING (no client links left) → LINGER (drained, images gone) → DONE (linger over: the conductor
deletes the log).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from aeron._core.counters import AtomicCounter
from aeron._core.logbuffer import LogBuffers
from aeron._core.term_scanner import LogBufferUnblocker
from aeron.common import command as cmd
from aeron.common.errors import ErrorCode
from aeron.driver.driver_common import ACTIVE, DONE, DRAINING, LINGER
from aeron.driver.driver_log import DriverPublication
from aeron.driver.subscription_link import SubscriberPosition
from aeron.driver.untethered import (
    TETHER_RESTING, check_untethered_subscriptions, untethered_window_limit, working_positions, working_span,
)

if TYPE_CHECKING:
    from aeron.driver.driver_conductor import DriverConductor


class IpcPublication(DriverPublication):
    def __init__(self, *, registration_id: int, owner_client_id: int, session_id: int, stream_id: int,
                 channel: str, is_exclusive: bool, log: LogBuffers, pub_pos: AtomicCounter, pub_lmt: AtomicCounter,
                 window_length: int, linger_timeout_ns: int, unblock_timeout_ns: int,
                 unblocked_publications: AtomicCounter, publications_revoked: AtomicCounter, now_ns: int,
                 response_correlation_id: int | None = None) -> None:
        super().__init__(registration_id=registration_id, owner_client_id=owner_client_id, session_id=session_id,
                         stream_id=stream_id, channel=channel, is_exclusive=is_exclusive, log=log, pub_pos=pub_pos,
                         pub_lmt=pub_lmt, window_length=window_length, linger_timeout_ns=linger_timeout_ns,
                         unblock_timeout_ns=unblock_timeout_ns, now_ns=now_ns)
        self.mtu_length = log.mtu_length
        # response channels: a response publication names its request publication's registration id, a request
        # publication its response subscription's (aeron_driver_conductor_find_and_update_ipc_response_subscription)
        self.response_correlation_id = response_correlation_id
        self.subscribers: dict[int, SubscriberPosition] = {}    # subscription registration id -> position
        self._unblocked_publications = unblocked_publications   # system counters
        self._publications_revoked = publications_revoked
        # REJECT_IMAGE: no subscriber is linked until the cool-down deadline has passed without another rejection
        self.in_cool_down = False
        self.cool_down_deadline_ns = 0

    # -- positions -----------------------------------------------------------------------------------
    def join_position(self) -> int:
        return min([self.consumer_position, *working_positions(self.subscribers.values())])

    def is_drained(self, producer_position: int) -> bool:
        return all(position >= producer_position for position in working_positions(self.subscribers.values()))

    def limit_watch(self) -> tuple[int, list[AtomicCounter]] | None:
        """What moves the limit next, for a compiled probe (DriverPublication._limit_watch): the positions of the
        subscribers that hold it back."""
        return self._limit_watch([sub.position for sub in list(self.subscribers.values())
                                  if sub.state != TETHER_RESTING])

    def update_pub_pos_and_lmt(self) -> int:
        """Port of aeron_ipc_publication_update_pub_pos_and_lmt: limit = slowest subscriber + window."""
        if self.state != ACTIVE:
            return 0
        work = 0
        self.pub_pos.set_ordered(self.producer_position())
        # an untethered subscriber that fell behind (resting) holds nothing back
        slowest, furthest = working_span(self.subscribers.values(), self.consumer_position)
        if slowest >= 0:
            work = self._update_limit(slowest)
            self.consumer_position = furthest
        elif self.pub_lmt.get_volatile() > self.consumer_position:
            # nobody reads any more: hold the publisher where the last reader stopped (not connected)
            self.pub_lmt.set_ordered(self.consumer_position)
            self.trip_limit = self.consumer_position
            self.clean_buffer_to(self.consumer_position - self.term_length)
            work = 1
        return work

    def check_for_blocked_publisher(self, producer_position: int, now_ns: int) -> bool:
        """Unblock a claim a dead publisher left, after the unblock timeout (LogBufferUnblocker). True if unblocked."""
        consumer_position = self.consumer_position
        positions = working_positions(self.subscribers.values())
        if positions:
            consumer_position = min(positions)
        if consumer_position == self.last_consumer_position and producer_position > consumer_position:
            if now_ns > self.time_of_last_consumer_change_ns + self.unblock_timeout_ns:
                if LogBufferUnblocker.unblock(self.log, consumer_position):
                    self.time_of_last_consumer_change_ns = now_ns
                    return True
        else:
            self.time_of_last_consumer_change_ns = now_ns
            self.last_consumer_position = consumer_position
        return False

    # -- subscribers ---------------------------------------------------------------------------------
    def add_subscriber(self, link: SubscriberPosition) -> None:
        """A subscriber joins: the log is connected and the limit moves now, not at the next duty cycle, so a
        client that offers the moment it learns of the publication does not see a connected log with no room."""
        self.subscribers[link.subscription.registration_id] = link
        self.log.is_connected = True
        self.update_pub_pos_and_lmt()

    def remove_subscriber(self, subscription_registration_id: int) -> SubscriberPosition | None:
        link = self.subscribers.pop(subscription_registration_id, None)
        if not self.subscribers:
            self.log.is_connected = False
        return link

    # -- lifecycle -----------------------------------------------------------------------------------
    def begin_draining(self, now_ns: int) -> None:
        """The last client link is gone: the stream ends where the publishers stopped."""
        producer_position = self.producer_position()
        self.pub_pos.set_ordered(producer_position)
        self.pub_lmt.set_ordered(producer_position)
        self.log.end_of_stream_position = producer_position
        self.to_state(DRAINING, now_ns)

    def revoke(self, now_ns: int, conductor: DriverConductor) -> None:
        """REMOVE_PUBLICATION with revoke: the stream ends where it is and subscribers see it go at once."""
        if self.state not in (ACTIVE, DRAINING):
            return
        producer_position = self.producer_position()
        self.log.is_publication_revoked = True
        self.log.end_of_stream_position = producer_position
        self.pub_lmt.set_ordered(producer_position)
        self.begin_linger(now_ns, conductor)
        self._publications_revoked.increment_ordered()

    def begin_linger(self, now_ns: int, conductor: DriverConductor) -> None:
        """Drained (or revoked): every image goes, the log lingers for clients still mapping it."""
        self.to_state(LINGER, now_ns)
        self.drop_subscribers(self.subscribers, conductor)

    def reject(self, reason: str, now_ns: int, cool_down_ns: int, conductor: DriverConductor) -> None:
        """Port of aeron_ipc_publication_reject: the publisher hears of it (ON_PUBLICATION_ERROR from the loopback
        address), every subscriber loses its image at once and none is linked until ``cool_down_ns`` has passed
        without another rejection; then the subscribers rejoin (same image correlation id)."""
        conductor.on_publication_error(cmd.PublicationErrorFrame(
            self.registration_id, -1, self.session_id, self.stream_id, -1, -1, cmd.ADDRESS_TYPE_IPV4, 0,
            bytes((127, 0, 0, 1)), ErrorCode.IMAGE_REJECTED, reason))
        if not self.in_cool_down:
            self.update_pub_pos_and_lmt()    # the subscribers rejoin where they are now, not a cycle ago
            self.drop_subscribers(self.subscribers, conductor)
            self.log.is_connected = False
        self.in_cool_down = True
        self.cool_down_deadline_ns = now_ns + cool_down_ns

    def _check_cool_down(self, now_ns: int, conductor: DriverConductor) -> int:
        """Port of aeron_ipc_publication_check_cooldown_status: a rejection's cool-down over, subscribers rejoin."""
        if not self.in_cool_down or now_ns <= self.cool_down_deadline_ns:
            return 0
        self.in_cool_down = False
        conductor.link_ipc_subscribers(self)
        return 1

    def on_time_event(self, now_ns: int, now_ms: int, conductor: DriverConductor) -> int:
        """Port of aeron_ipc_publication_on_time_event. Returns the work done."""
        state = self.state
        if state == ACTIVE:
            work = self.check_untethered_subscriptions(now_ns, conductor)
            # connected while some subscriber works: untethered ones resting do not count (as the C driver)
            self.log.is_connected = any(link.state != TETHER_RESTING for link in self.subscribers.values())
            if self.check_for_blocked_publisher(self.producer_position(), now_ns):
                self._unblocked_publications.increment_ordered()
            return work + self._check_cool_down(now_ns, conductor)
        if state == DRAINING:
            producer_position = self.producer_position()
            self.pub_pos.set_ordered(producer_position)
            if self.is_drained(producer_position):
                self.begin_linger(now_ns, conductor)
                return 1
            if self.check_for_blocked_publisher(producer_position, now_ns):
                self._unblocked_publications.increment_ordered()
            return 0
        if state == LINGER and now_ns - self.state_change_ns > self.linger_timeout_ns:
            self.to_state(DONE, now_ns)
            return 1
        return 0

    def has_reached_end_of_life(self) -> bool:
        return self.state == DONE

    def check_untethered_subscriptions(self, now_ns: int, conductor: DriverConductor) -> int:
        """Port of aeron_ipc_publication_check_untethered_subscriptions (untethered.py): measured against
        the consumers' position; a rejoining subscriber resumes there, as a new image on the same counter."""
        def rejoin(link: SubscriberPosition) -> None:
            link.position.set_ordered(self.consumer_position)
            conductor.on_ipc_image_available(self, link)

        def unavailable(link: SubscriberPosition) -> None:
            conductor.client_proxy.on_unavailable_image(self.registration_id, link.subscription.registration_id,
                                                        self.stream_id, link.subscription.channel)
        return check_untethered_subscriptions(
            self.subscribers.values(), untethered_window_limit(self.consumer_position, self.window_length), now_ns,
            unavailable, lambda link: conductor.unlink_subscriber(link.subscription, self, self.registration_id),
            rejoin)

    def close(self) -> None:
        for sub in self.subscribers.values():
            sub.position.close()
        super().close()
