# SPDX-License-Identifier: Apache-2.0
"""Receiver: the agent that reads receive channel endpoints into images and sends their status messages and
NAKs (aeron_driver_receiver.c). Deviation from Aeron: the image's rebuild tracking (loss scan, receiver position,
SM scheduling) also runs here rather than on the conductor, which saves a hand-off per cycle; the decisions are
the same.

The conductor hands it endpoints, stream interest and images through a ReceiverProxy (a bounded command queue
drained COMMAND_DRAIN_LIMIT per cycle); it hands them back, and asks for new images, through the
DriverConductorProxy."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aeron._core import counters as ctr
from aeron._core.rebuild_pass import HAND_BACK_TRACK, ImageTracking
from aeron._core.udp_transport import ReadySockets, UdpTransport
from aeron.common.agent import Agent
from aeron.common.constants import INT64_MAX
from aeron.driver.duty_cycle_stall_tracker import DutyCycleStallTracker
from aeron.driver.publication_image import SM_TIMEOUT_NS
from aeron.driver.proxies import COMMAND_DRAIN_LIMIT, CommandQueue, DriverConductorProxy
from aeron.driver.untethered import TETHER_RESTING



class Receiver(Agent):
    role_name = "receiver"

    def __init__(self, nano_clock: Callable[[], int], system: dict[int, Any],
                 conductor_proxy: DriverConductorProxy) -> None:
        self.command_queue = CommandQueue()
        self.endpoints: list[Any] = []
        self.images: list[Any] = []
        # the images' rebuild passes, in the order of images: their duty cycle in one compiled call
        self._tracking = ImageTracking()
        # which endpoints' sockets have datagrams, in one poll per cycle: built again after the sockets changed
        self._ready = ReadySockets()
        self._sockets_changes = 0
        self._ready_built = -1
        self._check_ready = False
        self._read_last = False     # one socket, which the last cycle read datagrams from: more are likely there
        self._single = False        # one socket in all: after a read, read it again without the check first
        self._nano_clock = nano_clock
        self._system = system
        self._conductor_proxy = conductor_proxy
        self.data_mask = 0          # wake-up bits of the streams this cycle's poll inserted data into
        self.activity = 0           # commands and data inserted in the last cycle (not timers: see driver_wakeup)
        self.timer_slack_ns = 0     # how early its images' status messages may go (a parking thread's: driver_wakeup)
        self.timer_status_messages = 0      # status messages the last cycle sent on their interval (driver_wakeup)
        self._commands = self.command_queue.records
        self.changes = 0            # cycles that ran commands: what a probe watches is built again after one
        self._wait_fds: list[int] = []
        self._wait_fds_changes = -1
        self._duty_cycle_tracker = DutyCycleStallTracker(system[ctr.RECEIVER_MAX_CYCLE_TIME],
                                                         system[ctr.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED])
        # called with the wake-up bits of the streams that got data, as soon as it is in their images (before the
        # images' status messages and the rest of the duty cycle): driver_wakeup.SignallingAgent
        self.signal_data: Callable[[int], Any] | None = None
        # the board the endpoints' compiled receive wakes subscribers on, right after the insert: set_wake_board
        self._wake_board: Any = None

    # -- ReceiverProxy commands (receiver thread) ----------------------------------------------------------------
    def set_wake_board(self, board: Any) -> None:
        """Have every endpoint's compiled receive wake the subscribers of the data it inserts on ``board`` at once
        (signal_data then finds them woken); None: only signal_data."""
        self._wake_board = board
        for endpoint in self.endpoints:
            endpoint.set_wake_board(board)

    def on_add_endpoint(self, endpoint: Any) -> None:
        if self._wake_board is not None:
            endpoint.set_wake_board(self._wake_board)
        self.endpoints.append(endpoint)
        self._sockets_changes += 1

    def on_remove_endpoint(self, endpoint: Any) -> None:
        if endpoint in self.endpoints:
            self.endpoints.remove(endpoint)
        self._sockets_changes += 1
        self._conductor_proxy.receiver_released(endpoint)

    def on_add_subscription(self, endpoint: Any, stream_id: int, session_id: int | None) -> None:
        endpoint.add_subscription(stream_id, session_id)

    def on_remove_subscription(self, endpoint: Any, stream_id: int, session_id: int | None) -> None:
        endpoint.remove_subscription(stream_id, session_id)

    def on_add_publication_image(self, image: Any) -> None:
        image.timer_slack_ns = self.timer_slack_ns
        self.images.append(image)
        self._tracking.passes = [i.rebuild for i in self.images]
        image.endpoint.add_image(image)

    def on_remove_publication_image(self, image: Any, now_ns: int, rejoin: bool) -> None:
        if image in self.images:
            self.images.remove(image)
            self._tracking.passes = [i.rebuild for i in self.images]
        image.endpoint.remove_image(image, now_ns, rejoin)
        self._conductor_proxy.receiver_released(image)

    def on_image_init_failed(self, endpoint: Any, stream_id: int, session_id: int, now_ns: int) -> None:
        endpoint.on_image_init_failed(stream_id, session_id, now_ns)

    def on_add_destination(self, endpoint: Any, destination: Any, now_ns: int) -> None:
        endpoint.add_destination(destination, now_ns)
        self._sockets_changes += 1

    def on_remove_destination(self, endpoint: Any, destination: Any) -> None:
        endpoint.remove_destination(destination)
        self._sockets_changes += 1
        self._conductor_proxy.receiver_released(destination)

    def on_reject_image(self, image: Any, reason: str) -> None:
        image.reject(reason)

    def on_request_setup(self, endpoint: Any, stream_id: int, session_id: int) -> None:
        endpoint.elicit_setup_from_control(stream_id, session_id)

    # -- Agent ---------------------------------------------------------------------------------------------------
    def do_work(self) -> int:
        now = self._nano_clock()
        # an empty queue is the usual case: looked at here rather than in a call
        work = commands = self.command_queue.drain(COMMAND_DRAIN_LIMIT) if self._commands else 0
        if commands:
            self.changes += 1           # its endpoints, destinations, publications or images may have changed
        data_mask = unsignalled = 0
        if self._ready_built != self._sockets_changes:
            self._build_ready()
        check = self._check_ready and not self._read_last and self._ready.poll() >= 0
        ready = self._ready.ready
        index = -1
        received = 0
        for endpoint in self.endpoints:
            index += 1
            if check and not ready(index):
                endpoint.time_of_last_poll_ns = now     # polled: nothing waits in its sockets
            else:
                received += endpoint.poll(now)
            if endpoint.data_pending:
                data_mask |= endpoint.take_data_mask()
                unsignalled |= endpoint.unsignalled_mask       # the rest were woken by the compiled receive
            if now >= endpoint.timers_due_ns:
                work += endpoint.run_timers(now)            # SETUP elicitation, expired session state
        self._read_last = self._single and received > 0
        work += received
        if unsignalled and self.signal_data is not None:
            self.signal_data(unsignalled)
        timer_sms = 0
        # every image's rebuild tracking and status message check in one compiled call; what only the image's Python
        # path may do (a scan while its pass is not armed, a status message to send) is handed back to it
        tracking = self._tracking
        work += tracking.track(now)
        if tracking.hand_backs:
            for image in self.images:
                hand_back = image.rebuild.hand_back
                if not hand_back:
                    continue
                if hand_back == HAND_BACK_TRACK:
                    image.try_arm()     # from then on its rebuild tracking runs in the compiled call
                    work += image.track_rebuild(now)
                pending = image.sm_pending
                sent = image.send_pending_status_message(now)
                if sent and not pending:
                    timer_sms += 1
                work += sent
        if timer_sms and self.timer_slack_ns and len(self.images) > timer_sms:
            # a parking thread woke for a status message's interval: the other images' that are half way through
            # theirs go too, so that all of them come to share one wake-up (and the sender one more)
            for image in self.images:
                work += image.send_pending_status_message(now, SM_TIMEOUT_NS // 2)
        self.timer_status_messages = timer_sms
        self.data_mask = data_mask
        self.activity = commands + (1 if data_mask else 0)
        duration_ns = self._nano_clock() - now
        if duration_ns > self._duty_cycle_tracker.report_above_ns:
            self._duty_cycle_tracker.report_measurement(duration_ns)
        return work

    def _build_ready(self) -> None:
        """Which sockets the cycle's one poll looks at: each endpoint's, or every time an endpoint with a socket that
        is not compiled (a loss generator's). With one socket only, a cycle after one that read datagrams reads it
        without the check (a stream: more are likely waiting); with more, the check costs less than a receive on
        each."""
        groups: list[list[int] | None] = []
        sockets = 0
        for endpoint in self.endpoints:
            transports = [destination.transport for destination in endpoint.destinations]
            if all(type(transport) is UdpTransport for transport in transports):
                groups.append([transport.fileno() for transport in transports])
                sockets += len(transports)
            else:
                groups.append(None)
        self._ready.set_groups(groups)
        self._check_ready = sockets >= 1
        self._single = len(groups) == 1 and sockets == 1
        self._ready_built = self._sockets_changes

    def poll_data(self) -> int:
        """The data half of a duty cycle, for the wake-up spin between cycles (driver_wakeup.SignallingAgent): the
        endpoints' sockets read and their data inserted, its subscribers signalled; commands, rebuild tracking and
        status messages wait for the next duty cycle. Returns the datagrams read."""
        now_ns = self._nano_clock()
        work = 0
        unsignalled = 0
        for endpoint in self.endpoints:
            work += endpoint.poll(now_ns)
            if endpoint.data_pending:
                endpoint.take_data_mask()
                unsignalled |= endpoint.unsignalled_mask       # the rest were woken by the compiled receive
        if unsignalled and self.signal_data is not None:
            self.signal_data(unsignalled)
        return work

    def probe_watch(self) -> tuple[list[Any], list[tuple[Any, ...]], int, bool] | None:
        """What a compiled probe between duty cycles watches, besides the sockets, so that it lets a whole cycle run
        whenever this receiver may have more to do (driver_wakeup.SignallingAgent.probe_spins): (positions, groups,
        deadline, gaps_covered). An image's readers whose progress makes a status message due only past a threshold
        are a group, (threshold, their positions[, the image's rebuild pass]), found once all of them reach it; with
        the image's compiled rebuild pass (PublicationImage.rebuild_pass) the probe runs it instead (and for a gap or
        the pass's own deadline), so that status messages and NAKs go without a whole cycle. The positions of the
        other images' readers matter at any move; the deadline (0: none) is the earliest of the timers of the images
        without a pass, a gap's NAK or a status message's interval, in the receiver's clock; ``gaps_covered`` when
        every image with readers has its pass (a gap a receive pass opens need not end the probes). None when an
        image has work now (a status message pending) or sends error frames for a rejection."""
        positions: list[Any] = []
        groups: list[tuple[Any, ...]] = []
        deadline = INT64_MAX
        covered = True
        for image in self.images:
            if image.sm_pending or image.rejection_reason is not None:
                return None
            threshold = image.status_message_threshold()
            # a copy in one step: the conductor links and unlinks subscribers from its own thread
            if threshold is None:
                deadline = image.next_deadline_ns(0, deadline)
                positions.extend([link.position for link in list(image.subscribers.values())])
                covered = covered and not image.subscribers
                continue
            # a resting (untethered) subscriber holds nothing back: its moves schedule nothing
            holding = [link.position for link in list(image.subscribers.values()) if link.state != TETHER_RESTING]
            rebuild = image.rebuild_pass() if holding else None
            if rebuild is None:
                deadline = image.next_deadline_ns(0, deadline)
                groups.append((threshold, holding))
                covered = covered and not holding
            else:
                groups.append((threshold, holding, rebuild))
        return positions, groups, (0 if deadline == INT64_MAX else deadline), covered

    def time_to_deadline_ns(self, far_ns: int) -> int:
        """How long a parked receiver may sleep before an image's timer is due (status message, NAK), at most
        ``far_ns`` (wake-up idle strategy); data wakes it by its sockets."""
        now = self._nano_clock()
        deadline = now + far_ns
        for image in self.images:
            deadline = image.next_deadline_ns(now, deadline)
        return deadline - now

    def probe_receives(self) -> tuple[list[Any], list[tuple[Any, Any]]]:
        """For a compiled probe that may read the sockets itself (aeron._core.data_spin.DataSpin.backoff), in the
        order of ``wait_fds``: each socket's receive pass (None where only the endpoint's own poll may read it), and
        its (endpoint, destination)."""
        receives: list[Any] = []
        owners: list[tuple[Any, Any]] = []
        for endpoint in self.endpoints:
            for destination in endpoint.destinations:
                receives.append(endpoint.receive_pass(destination))
                owners.append((endpoint, destination))
        return receives, owners

    def on_probe_receives(self, owners: list[tuple[Any, Any]], event_index: int) -> int:
        """After a probe's receive passes: the endpoints' data is pending for the next duty cycle, and the events a
        pass left (``event_index`` in ``owners``, -1: none) are handled now, before any other receive on that
        socket. Returns the work done."""
        now_ns = self._nano_clock()
        for endpoint in self.endpoints:
            endpoint.data_pending = True
        if event_index < 0:
            return 0
        endpoint, destination = owners[event_index]
        return endpoint.on_probe_events(destination, now_ns)

    def images_settled(self) -> bool:
        """Whether every image's working subscribers have read it up to its high-water mark (one compiled loop)."""
        return self._tracking.settled()

    def wait_fds(self) -> list[int]:
        """The sockets a parked receiver waits on (wake-up idle strategy): every destination's transport. Built again
        only after a cycle that ran commands (endpoints and destinations change only there; a socket closes after
        its endpoint left this thread): a park asks for them every time."""
        if self._wait_fds_changes != self.changes:
            self._wait_fds = [destination.transport.fileno() for endpoint in self.endpoints
                              for destination in endpoint.destinations]
            self._wait_fds_changes = self.changes
        return self._wait_fds

    def on_close(self) -> None:
        self.command_queue.close()       # nothing will drain it any more: later offers are refused, not waited on
