# SPDX-License-Identifier: Apache-2.0
"""Sender: the agent that sends network publications and reads their control frames (aeron_driver_sender.c).

The conductor hands it publications, endpoints and destinations through a SenderProxy (a bounded command queue
drained COMMAND_DRAIN_LIMIT per cycle), and it hands them back through the DriverConductorProxy once it has let
go of them, so the two threads never share a collection while it changes.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aeron._core import counters as ctr
from aeron._core.udp_transport import ReadySockets, UdpTransport
from aeron.common.agent import Agent
from aeron.driver.duty_cycle_stall_tracker import DutyCycleStallTracker
from aeron.driver.proxies import COMMAND_DRAIN_LIMIT, CommandQueue, DriverConductorProxy

CONTROL_POLL_RATIO = 6                 # poll control frames every 6th cycle, and whenever nothing was sent
CONTROL_POLL_INTERVAL_NS = 100_000_000
# send passes of a closing driver for what was offered before the close (each sends up to a batch per publication)
_CLOSE_SEND_PASSES = 64


class Sender(Agent):
    role_name = "sender"

    def __init__(self, nano_clock: Callable[[], int], system: dict[int, Any],
                 conductor_proxy: DriverConductorProxy) -> None:
        self.command_queue = CommandQueue()
        self.publications: list[Any] = []
        self._own_send: list[Any] = []        # publications sent one by one; the others go in their endpoint's pass
        self.endpoints: list[Any] = []
        self._nano_clock = nano_clock
        self._system = system
        self._conductor_proxy = conductor_proxy
        self._round_robin = 0
        self._cycles = 0
        self._last_control_poll_ns = 0
        self.activity = 0           # commands and data sent in the last cycle (not timers: see driver_wakeup)
        self.sent_data = 0          # data bytes sent in the last cycle (driver_wakeup: a stream being sent)
        self.timer_slack_ns = 0     # how early its publications' heartbeats may go (a parking thread's: driver_wakeup)
        self._commands = self.command_queue.records
        self.changes = 0            # cycles that ran commands: what a probe watches is built again after one
        self._wait_fds: list[int] = []
        self._wait_fds_changes = -1
        # times a publication's is_connected flipped: its limit is the conductor's to move, at once (driver_wakeup)
        self.connection_changes = 0
        # the conductor runs on this thread (SHARED, INVOKER): a publication's limit moves before the flag flips
        self.shares_conductor_thread = False
        self.cycles_over = False    # on_close ran: no duty cycle of its own thread will run the send passes again
        # which endpoints' control sockets have frames, in one poll per control poll: built again after they changed
        self._ready = ReadySockets()
        self._sockets_changes = 0
        self._ready_built = -1
        self._check_ready = False
        self._read_last = False     # one socket, which the last control poll read frames from: more are likely
        self._single = False        # one socket in all: after a read, read it again without the check first
        self._duty_cycle_tracker = DutyCycleStallTracker(system[ctr.SENDER_MAX_CYCLE_TIME],
                                                         system[ctr.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED])

    # -- SenderProxy commands (sender thread) -------------------------------------------------------------------
    def on_add_endpoint(self, endpoint: Any) -> None:
        self.endpoints.append(endpoint)
        self._sockets_changes += 1

    def _on_connection_change(self, publication: Any) -> None:
        """A publication's is_connected is about to flip. A client that sees it connected offers at once: with the
        conductor on this thread its limit moves now, before the flag (Aeron leaves the client a duty cycle of
        back pressure there; a cycle of ours can be held up for milliseconds by the GIL or the scheduler)."""
        self.connection_changes += 1
        if self.shares_conductor_thread:
            publication.update_pub_pos_and_lmt()

    def on_remove_endpoint(self, endpoint: Any) -> None:
        if endpoint in self.endpoints:
            self.endpoints.remove(endpoint)
        self._sockets_changes += 1
        self._conductor_proxy.sender_released(endpoint)

    def on_add_publication(self, publication: Any) -> None:
        publication.timer_slack_ns = self.timer_slack_ns
        publication.on_connection_change = self._on_connection_change
        self.publications.append(publication)
        if not publication.endpoint.sender_add_publication(publication):
            self._own_send.append(publication)

    def on_remove_publication(self, publication: Any) -> None:
        if publication in self.publications:
            self.publications.remove(publication)
            publication.endpoint.sender_remove_publication(publication)
            if publication in self._own_send:
                self._own_send.remove(publication)
        self._conductor_proxy.sender_released(publication)

    def on_add_destination(self, endpoint: Any, address: tuple, registration_id: int, now_ns: int) -> None:
        endpoint.add_destination(address, registration_id, now_ns)

    def on_remove_destination(self, endpoint: Any, address: tuple) -> None:
        endpoint.remove_destination(address=address)

    def on_remove_destination_by_id(self, endpoint: Any, registration_id: int) -> None:
        endpoint.remove_destination(registration_id=registration_id)

    # -- Agent ---------------------------------------------------------------------------------------------------
    def do_work(self) -> int:
        start = self._nano_clock()
        # an empty queue is the usual case: looked at here rather than in a call
        work = commands = self.command_queue.drain(COMMAND_DRAIN_LIMIT) if self._commands else 0
        if commands:
            self.changes += 1           # its endpoints, destinations, publications or images may have changed
        # control frames overdue (this driver was held up, e.g. on a loaded machine): read the status messages that
        # wait in the sockets first, so that flow control and the publications judge their receivers' silence by
        # what the receivers sent, not by how long this thread did not run
        polled = start - self._last_control_poll_ns > CONTROL_POLL_INTERVAL_NS
        if polled:
            work += self._poll_control(start)
        sent = 0
        for endpoint in self.endpoints:
            if endpoint.pass_publications:
                sent += endpoint.send_pass(start)     # one compiled call sends all its publications' data
        publications = self._own_send
        count = len(publications)
        if count:
            start_index = self._round_robin = (self._round_robin + 1) % count
            for i in range(count):
                sent += publications[(start_index + i) % count].send(start)
        self._cycles += 1
        if not polled and (sent == 0 or self._cycles % CONTROL_POLL_RATIO == 0):
            work += self._poll_control(start)
        self.activity = commands + sent
        self.sent_data = sent
        duration_ns = self._nano_clock() - start
        if duration_ns > self._duty_cycle_tracker.report_above_ns:
            self._duty_cycle_tracker.report_measurement(duration_ns)
        return work + (1 if sent else 0)

    def send_data(self) -> int:
        """The data half of a duty cycle, for the wake-up spin between cycles (driver_wakeup.SignallingAgent): the
        endpoints' compiled send passes, and the publications sent one by one; commands, control frames and the
        passes' timers wait for the next duty cycle. Returns the bytes sent."""
        now_ns = self._nano_clock()
        sent = 0
        for endpoint in self.endpoints:
            if endpoint.pass_publications:
                sent += endpoint.send_data(now_ns)
        for publication in self._own_send:
            sent += publication.send(now_ns)
        return sent

    def send_passes(self) -> list[Any] | None:
        """The compiled send passes a data spin watches for offered data (aeron._core.data_spin), or None when a
        publication is sent one by one (it has no pass to watch)."""
        if self._own_send:
            return None
        return [endpoint.compiled_send_pass for endpoint in self.endpoints if endpoint.pass_publications]

    def time_to_deadline_ns(self, far_ns: int) -> int:
        """How long a parked sender may sleep before a publication's timer is due (SETUP, heartbeat,
        retransmit), at most ``far_ns`` (wake-up idle strategy); status messages and NAKs wake it by its sockets."""
        now = self._nano_clock()
        deadline = now + far_ns
        for publication in self.publications:
            deadline = publication.next_deadline_ns(deadline)
        return deadline - now

    def poll_control(self) -> int:
        """Read the control frames waiting now, out of a duty cycle (driver_wakeup: the status messages this
        thread's receiver has just sent to its own sender). Returns the datagrams read."""
        return self._poll_control(self._nano_clock())

    def _poll_control(self, now_ns: int) -> int:
        work = 0
        if self._ready_built != self._sockets_changes:
            self._build_ready()
        check = self._check_ready and not self._read_last and self._ready.poll() >= 0
        ready = self._ready.ready
        index = -1
        for endpoint in self.endpoints:
            index += 1
            if not check or ready(index):
                work += endpoint.poll_control(now_ns)
            if endpoint.is_dynamic:             # only a dynamic multi-destination endpoint has any to check
                endpoint.check_destinations(now_ns)
        self._last_control_poll_ns = now_ns
        self._read_last = self._single and work > 0
        return work

    def _build_ready(self) -> None:
        """Which control sockets a control poll looks at in one poll: each endpoint's, or every time one that is not
        compiled (a loss generator's). With one socket only, a poll after one that read frames reads it without the
        check."""
        groups: list[list[int] | None] = []
        for endpoint in self.endpoints:
            transport = endpoint.transport
            groups.append([transport.fileno()] if type(transport) is UdpTransport else None)
        self._ready.set_groups(groups)
        self._check_ready = any(group is not None for group in groups)
        self._single = len(groups) == 1 and self._check_ready
        self._ready_built = self._sockets_changes

    def probe_controls(self) -> list[Any]:
        """For a compiled probe that may read the control sockets itself, in the order of ``wait_fds``: each
        socket's control pass, or None where only the endpoint's own poll may read it."""
        return [endpoint.probe_control() for endpoint in self.endpoints]

    def on_probe_records(self, control_index: int) -> None:
        """After a probe's control passes: the records the ``control_index``-th socket's pass left, handled now."""
        self.endpoints[control_index].on_records(self._nano_clock())

    def wait_fds(self) -> list[int]:
        """The sockets a parked sender waits on (wake-up idle strategy): status messages and NAKs arrive there. Built
        again only after a cycle that ran commands (see Receiver.wait_fds)."""
        if self._wait_fds_changes != self.changes:
            self._wait_fds = [endpoint.transport.fileno() for endpoint in self.endpoints]
            self._wait_fds_changes = self.changes
        return self._wait_fds

    def send_remaining(self) -> None:
        """Send what clients offered and flow control allows, pass after pass until nothing more goes (at most
        ``_CLOSE_SEND_PASSES``): for the driver's close, once this sender's duty cycles have stopped and before the
        conductor closes the sockets. An application that closes its publication (AeronCluster.close's
        SessionCloseRequest) and then its embedded driver at once would otherwise lose it whenever no duty cycle ran
        in between."""
        for _ in range(_CLOSE_SEND_PASSES):
            if not self.send_data():
                return

    def on_close(self) -> None:
        self.cycles_over = True
        self.command_queue.close()       # nothing will drain it any more: later offers are refused, not waited on
