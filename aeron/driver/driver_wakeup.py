# SPDX-License-Identifier: Apache-2.0
"""The driver's side of waking instead of spinning (docs/wakeup.md).

The driver makes its aeron dir's wake-up board, gives each agent thread whose idle strategy is ``wakeup`` a
waiter (woken by client commands, data in a network publication, or its own UDP sockets), and after each duty
cycle signals whoever its work concerns: the clients' subscribers when the receiver wrote into images, and the
driver's other agent threads when it queued a command for them. Signals cost a fence and a load while nobody
sleeps, so the driver signals whatever its idle strategies are: our clients parked on our driver wake either way.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aeron._core.data_spin import PROBE_CONTROL, PROBE_OTHER, PROBE_SEND, DataSpin
from aeron.common.agent import DRIVER_BACKOFF_MAX_PARK_NS, PARKING, Agent, BackoffIdleStrategy, IdleStrategy
from aeron.common.wakeup import (CLIENTS, CONDUCTOR, FULL_CYCLE_DEFER_PASSES, LONG_QUIET_PARK_NS, RECEIVER, SENDER,
                                 ClientRegistry, WakeupBoard, WakeupIdleStrategy, new_waiter)

__all__ = ["TIMER_SLACK_NS", "SignallingAgent", "agent_mask", "bind_idle_strategy", "long_quiet_park_ns"]

# How early a parking driver thread sends a heartbeat or a status message that is nearly due, so that its timers fall
# into fewer wake-ups: half the heartbeat interval, which lines every publication's heartbeats and every image's
# status messages up on one wake-up within a few intervals (docs/wakeup.md). Aeron's intervals are maxima: a timer
# runs early, never late, and its wake-up is still at the interval's end.
TIMER_SLACK_NS = 50_000_000

# With backoff, how many batches a stream may go in send (or receive) passes alone, each one compiled call, before
# the rest of a duty cycle runs, and for how long at most: the bounds of the wake-up strategy's data spin. Within
# them the rest of the cycle runs as soon as a probe finds it has work (a command, a datagram for Python, a reader
# past the point where a status message or a publisher's limit moves, an image's timer); what else it does (the
# conductor's timers, heartbeats, a retransmit's linger) waits at most this long, and a whole cycle of Python is
# paid once per as many batches.
SEND_PASSES_PER_CYCLE = FULL_CYCLE_DEFER_PASSES
FULL_CYCLE_DEFER_NS = WakeupIdleStrategy.DEFAULT_FULL_CYCLE_DEFER_NS


def agent_mask(conductor: Any, agents: tuple[Any, ...]) -> int:
    """What wakes a thread running ``agents``: CONDUCTOR for client commands, SENDER for network publications'
    data, RECEIVER for its commands (its sockets wake it without a signal)."""
    mask = 0
    for agent in agents:
        if agent is conductor:
            mask |= CONDUCTOR
        elif agent is conductor.sender:
            mask |= SENDER
        elif agent is conductor.receiver:
            mask |= RECEIVER
    return mask


def _fds_of(agents: tuple[Any, ...]) -> Callable[[], list[int]] | None:
    sources = [agent.wait_fds for agent in agents if hasattr(agent, "wait_fds")]
    if not sources:
        return None
    if len(sources) == 1:
        return sources[0]
    if len(sources) == 2:
        # a SHARED thread's sender and receiver: each hands back the same list until its commands change it, and
        # the two are joined again only then (a park asks for them every time)
        first, second = sources
        joined: list[Any] = [None, None, []]

        def both() -> list[int]:
            a, b = first(), second()
            if a is not joined[0] or b is not joined[1]:
                joined[0], joined[1], joined[2] = a, b, a + b
            return joined[2]
        return both
    return lambda: [fd for source in sources for fd in source()]


def bind_idle_strategy(idle: IdleStrategy, board: WakeupBoard | None, conductor: Any,
                       agents: tuple[Any, ...], timers: Any = None) -> Any:
    """Bind a ``wakeup`` idle strategy to a new waiter of ``board`` for the thread running ``agents``, its parks
    timed by ``timers`` (the thread's SignallingAgent: which cycles were active, when the next timer is due);
    returns the waiter (None when ``idle`` is another kind, there is no board, or the board is full: the strategy
    then parks with backoff's bounded sleeps)."""
    if not isinstance(idle, WakeupIdleStrategy) or board is None:
        return None
    waiter = new_waiter(board, agent_mask(conductor, agents))
    if waiter is not None:
        if isinstance(timers, SignallingAgent):
            timers.backoff_park_ns = idle.max_park_ns       # its first bound: backoff's longest park
        waiter.stay_parked_on_fds = True        # a datagram on its sockets: one duty cycle, the next park's re-check
        idle.bind(waiter, _fds_of(agents), timers)
        for agent in agents:
            if agent is conductor.sender or agent is conductor.receiver:
                agent.timer_slack_ns = TIMER_SLACK_NS       # before their first publication or image
    return waiter


# what a driver thread's data spin watches (SignallingAgent._watch)
_NOTHING = "nothing"        # no network publication or subscription on this thread: no data spin
_COMPILED = "compiled"      # send passes and receive sockets: the compiled wait
_POLLED = "polled"          # a publication sent one by one: the data half itself, polled


def long_quiet_park_ns(ctx: Any) -> int:
    """The driver's long quiet bound (LONG_QUIET_PARK_NS) within a quarter of its shortest liveness or linger
    timeout, so that a driver configured with short timeouts still runs its conductor's timers on time."""
    shortest = min(ctx.client_liveness_timeout_ns, ctx.image_liveness_timeout_ns, ctx.publication_linger_timeout_ns,
                   ctx.untethered_window_limit_timeout_ns, ctx.counters_free_to_reuse_timeout_ns)
    return max(1_000_000, min(LONG_QUIET_PARK_NS, shortest // 4))


def _read_up(subscribers: Any, position: int) -> bool:
    for link in subscribers:
        if link.position.get_volatile() < position:
            return False
    return True


def _publications_settled(conductor: Any) -> bool:
    # a reader still reading moves its publication's limit, which only a duty cycle sees
    for publication in conductor.ipc_publications:
        if not _read_up(publication.subscribers.values(), publication.producer_position()):
            return False
    return True


class SignallingAgent(Agent):
    """Runs ``agent`` (one of the driver's, or a composite of them) and, after each duty cycle, signals: the
    subscribers of the streams the receiver inserted data for in that cycle (heartbeats, status messages and
    setups wake nobody), and any other driver thread with commands queued for it.

    It also tells a ``wakeup`` idle strategy how to park (the strategy's ``timers``): ``active`` says whether the
    cycle moved data or commands (only then does the strategy spin and reset its park bound: heartbeats, status
    messages and timers do not), and ``time_to_deadline_ns`` when the agents' next timer is due (heartbeat, SETUP,
    status message, NAK, retransmit), so a park ends then rather than polling for it.

    The thread running the conductor keeps the board's ALL_SIGNAL verdict (aeron.common.wakeup.ClientRegistry):
    1 while every live client is one of ours (registered on the board: it signals its commands and offers), 0 as
    soon as another (an official client) has sent its first command, when every parked sleeper is woken to take
    the short bound again. While it holds, ``quiet_park_ns`` lets a park grow to the long quiet bound (100 ms, or
    a quarter of the shortest liveness timeout) instead of 16 ms, unless a reader is still reading an image or an
    IPC publication of these agents (its position moves a status message or a limit, which nobody signals)."""

    def __init__(self, agent: Agent, board: WakeupBoard, conductor: Any, agents: tuple[Any, ...]) -> None:
        self.agent = agent
        self.role_name = agent.role_name
        self._signal = board.signal
        self._receiver = receiver = conductor.receiver if conductor.receiver in agents else None
        self._sender = conductor.sender if conductor.sender in agents else None
        if receiver is not None:
            receiver.signal_data = board.signal         # subscribers woken as soon as their data is in
            receiver.set_wake_board(board)              # ... by the compiled receive, before any Python
        self._spin = DataSpin() if (receiver is not None or self._sender is not None) else None
        self._watching = _NOTHING      # what the data spin watches until the next whole cycle (_watch)
        self._watch_stale = False      # a whole cycle ran since: _watch before the next fast_work (none with backoff)
        self._spin_owners: list[Any] = []     # (endpoint, destination) of each receive socket the data spin reads
        self._watch_version: tuple[int, int] | None = None     # the agents' changes when _watch last set the spin
        self._spin_passes = False      # the data spin runs the passes itself (DataSpin.run_data)
        self.fast_idle_ns = 0          # how long the last fast_work's spin waited after its last pass that moved data
        self._on_error = getattr(conductor, "on_agent_error", None)
        self._agents = agents
        self._timed = tuple(agent for agent in agents if hasattr(agent, "time_to_deadline_ns"))
        self.active = True
        # whole duty cycles begun (the agents' own, not the probes' or the data halves'): the conductor writes to
        # its clients' broadcast only in one (DriverThreadAgent skips a client conductor's turn until the next)
        self.cycles = 0
        self._registry = ClientRegistry(board)
        self._conductor = conductor if conductor in agents else None      # keeps the ALL_SIGNAL verdict
        self._clients_reviewed = -1
        self._transmissions = 0
        self._ours: dict[int, bool] = {}
        self._long_quiet_ns = long_quiet_park_ns(conductor.context)
        self.backoff_park_ns = DRIVER_BACKOFF_MAX_PARK_NS     # while a client that does not signal is connected
        self._board = board
        own = set(map(id, agents))
        self._peers = tuple((peer.command_queue, bit) for peer, bit in (
            (conductor, CONDUCTOR), (conductor.sender, SENDER), (conductor.receiver, RECEIVER)) if id(peer) not in own)
        # backoff's spin and yield phases, probed in compiled code instead of run as whole duty cycles (probe_spins)
        self._probe = DataSpin()
        self._probe_spins = 0
        self._backoff: BackoffIdleStrategy | None = None    # the thread's own strategy, when it runs the probes
        self._probes_left = 0
        self._passes_left = 0          # send passes a probe may still run alone before a whole cycle
        self.send_passes_per_cycle = SEND_PASSES_PER_CYCLE
        self.full_cycle_defer_ns = FULL_CYCLE_DEFER_NS
        # CLOCK_MONOTONIC: no pass alone from then on, full_cycle_defer_ns after the first (0: none ran yet)
        self._passes_until_ns = 0
        # the passes a probe runs itself take their time from CLOCK_MONOTONIC: only with the driver's clock the same
        self._monotonic = conductor.context.nano_clock is time.monotonic_ns
        self._owed = False             # a probe's send or receive pass ran: the rest of the duty cycle is owed
        self._receive_owners: list[Any] = []    # (endpoint, destination) of each receive socket the probes watch
        self._sockets_version: tuple[int, int] | None = None    # the agents' changes when the probe's sockets were set
        self._armed = False
        self._to_driver = conductor.to_driver if conductor in agents else None
        # these agents' command queues: another driver thread fills them, or, all three agents here, the cycle that
        # armed the probes (the conductor queues for the sender and the receiver)
        self._queues = tuple(agent.command_queue.records for agent in agents)

    def on_start(self) -> None:
        self.agent.on_start()

    def probe_spins(self, spins: int) -> None:
        """Run backoff's spin and yield phases (the first ``spins`` idle steps after a cycle with work: the
        BackoffIdleStrategy's max_spins + max_yields) as compiled probes rather than whole duty cycles: each step
        first looks, in one compiled call, for data a send pass can send, a datagram on the sender's or the receiver's
        sockets (status messages, NAKs, data), a move of a subscriber position of the receiver's images (what makes a
        status message due), a client command or a command queued for these agents, and runs the whole duty cycle
        only when it finds one; otherwise it returns 0 and the strategy spins or yields on. A reader's progress counts
        only once it makes a status message due, and the images' timers (a gap's NAK, a status message's interval)
        end the probes when they come (Receiver.probe_watch), unless the image has its compiled rebuild pass, which
        the phases of ``probe_backoff`` then run themselves (the status message or NAK sent, no whole cycle); so does
        a position that holds a publication's limit back once the conductor would move the limit
        (DriverConductor.probe_groups); other timers wait at most that many steps (the parks that follow run whole
        cycles as before). Not used while a publication is sent one by one (no pass to probe), nor while an image has
        a status message pending.

        A stream being sent skips the whole cycles between its batches: after a cycle that sent data the probes start
        at once, and a probe that finds only offered data to send (no datagram, no command, no position moved) runs
        the send passes alone; one that finds datagrams only on the sender's sockets (status messages, NAKs) runs the
        sender's control poll and then the send passes. Either goes up to ``send_passes_per_cycle`` times in a row
        (SEND_PASSES_PER_CYCLE), and for at most ``full_cycle_defer_ns`` after the cycle before (FULL_CYCLE_DEFER_NS,
        with the driver's clock CLOCK_MONOTONIC); the rest of the duty cycle is then owed and runs at the first probe
        that finds anything else, or nothing (the stream paused: the timers come next)."""
        self._probe_spins = max(0, spins)

    def probe_backoff(self, idle: BackoffIdleStrategy) -> None:
        """As ``probe_spins`` for ``idle``'s spin and yield phases (``idle`` is the strategy of the thread running this
        agent), run as one compiled call per phase instead of one probe per idle step: the call pauses between
        probes while ``idle`` would spin and yields while it would yield (DataSpin.backoff), returns as soon as a
        probe finds something, and the steps it took are counted as ``idle``'s own (BackoffIdleStrategy.advance), so
        that when none found anything ``idle`` parks next, as after its own phases. A whole duty cycle and an idle
        step in Python cost several microseconds each; a probe, well under one. The rest of a cycle owed after send
        passes alone runs when the phases end with nothing found (the stream paused for as long as ``idle`` would
        spin and yield), not at the first probe that finds nothing: a stream whose next message is a few
        microseconds away would otherwise pay a whole cycle after nearly every batch."""
        self.probe_spins(idle.max_spins + idle.max_yields)
        self._backoff = idle

    def _arm_probe(self) -> bool:
        sender, receiver = self._sender, self._receiver
        probe = self._probe
        # the passes, sockets and receive passes change only with the commands these agents run: built again then
        version = (sender.changes if sender is not None else -1, receiver.changes if receiver is not None else -1)
        if version != self._sockets_version:
            passes = sender.send_passes() if sender is not None else []
            if passes is None:
                return False            # a publication sent one by one: only its own send finds its data
            fds = sender.wait_fds() if sender is not None else []
            control = len(fds)
            # the probes may read status messages themselves too (their time is CLOCK_MONOTONIC's, as a pass's)
            controls = sender.probe_controls() if sender is not None and self._monotonic else []
            receives: list[Any] = []
            self._receive_owners = []
            if receiver is not None and receiver.endpoints:
                fds = fds + receiver.wait_fds()
                if self._monotonic:
                    # the probes may read these sockets themselves: their dispatchers take the time of a packet from
                    # CLOCK_MONOTONIC, which must be the driver's clock
                    receives, self._receive_owners = receiver.probe_receives()
            probe.set_sockets(passes, fds, control, receives, controls)
            self._sockets_version = version
        positions: list[Any] = []
        groups: list[tuple[Any, ...]] = []
        deadline = 0
        covered = False
        if receiver is not None and receiver.endpoints:
            # a receiving thread's probes also watch its images' subscriber positions (a reader's progress is what
            # makes the next status message due: without it the sender would wait for its window until a whole
            # cycle) and the images' timers
            watched = receiver.probe_watch()
            if watched is None:
                return False            # a status message due now: a whole cycle serves it
            positions, groups, deadline, covered = watched
            if not self._monotonic and (deadline or any(len(group) == 3 for group in groups)):
                # a timer the compiled probe cannot tell the time of (a rebuild pass's too, in CLOCK_MONOTONIC):
                # whole cycles serve it
                return False
        conductor = self._conductor
        if conductor is not None:
            # and the publications' next limits: a publisher at its limit waits for the conductor
            groups = groups + conductor.probe_groups()
        probe.set_watch(positions, groups, deadline, covered)
        return True

    def _start_probes(self) -> None:
        self._probes_left = self._probe_spins
        self._passes_left = self.send_passes_per_cycle
        self._passes_until_ns = 0

    def _may_pass(self) -> bool:
        """Whether a pass alone may run now: within full_cycle_defer_ns of the first since the last whole cycle (with
        the driver's clock CLOCK_MONOTONIC; the count of passes bounds them otherwise)."""
        if not self._monotonic:
            return True
        now = time.monotonic_ns()
        if not self._passes_until_ns:
            self._passes_until_ns = now + self.full_cycle_defer_ns
            return True
        return now < self._passes_until_ns

    def do_work(self) -> int:
        sender = self._sender
        connections = sender.connection_changes if sender is not None else 0
        if self._probes_left:
            handled = 0             # records a probe's control pass left, handled here
            backoff = self._backoff
            # the strategy's phases in one call, or one probe per idle step (no strategy of ours to count them)
            one_step = backoff is None
            plan = (0, 0) if one_step else backoff.steps_to_park()         # type: ignore[union-attr]
            if plan is None:
                found = PROBE_OTHER             # the strategy parks already: the probes are over, whole cycles again
            else:
                probe = self._probe
                if one_step:
                    found = probe.backoff(0, 0, self._to_driver, self._queues)
                    self._probes_left -= 1
                else:
                    # a probe that finds only offered data runs the send passes in the same call, as many times as
                    # the passes left allow, each as work after which the strategy's phases start over
                    # and one that finds datagrams only on receive sockets runs their receive passes alike
                    passes = self._passes_left if self._monotonic else 0
                    found = probe.backoff(plan[0], plan[1], self._to_driver, self._queues, passes,  # type: ignore
                                          backoff.max_spins + 1, backoff.max_yields, passes,  # type: ignore
                                          self._passes_until_ns, self.full_cycle_defer_ns, passes, passes)
                    # a rebuild pass that sent nothing was no work: the compiled phases did not start over for it
                    ran = probe.sends + probe.receives + probe.controls + probe.status_work
                    if ran:
                        self._passes_until_ns = probe.passes_until_ns
                        self._passes_left = max(0, passes - ran)
                        self._owed = True
                        backoff.reset()                                     # type: ignore[union-attr]
                        if probe.receives:
                            self._receiver.on_probe_receives(self._receive_owners, probe.event_index)  # type: ignore
                    if probe.control_index >= 0:
                        # records its control pass left (NAKs, ...): handled now, and the rest of the sockets read
                        # as after a probe that found datagrams there
                        self._sender.on_probe_records(probe.control_index)  # type: ignore[union-attr]
                        handled = 1
                        found = PROBE_CONTROL
                    backoff.advance(probe.steps)                            # type: ignore[union-attr]
                    if not found:
                        self._probes_left = 0   # the strategy parks next: after the rest of a cycle, if owed
                        if not self._owed:
                            return 0
            if (found == PROBE_SEND or found == PROBE_CONTROL) and self._passes_left and self._may_pass():
                # only offered data to send (the send passes alone, a compiled call), or only status messages and
                # NAKs (the sender reads them, then sends what they let go): the rest of the cycle owed
                self._passes_left -= 1
                self._probes_left = self._probe_spins
                work = handled + (sender.poll_control() if found == PROBE_CONTROL else 0)  # type: ignore
                changed = sender.connection_changes != connections                  # type: ignore[union-attr]
                if not changed or self._conductor is None:
                    if changed:
                        self._signal(CONDUCTOR)     # (_after_connection_change)
                    if sender.send_data():                                       # type: ignore[union-attr]
                        work += 1
                    if work:
                        self._owed = True
                    return work
                found = PROBE_OTHER     # a publication (dis)connected: its limit is the conductor's, in a whole cycle
            if not found and not self._owed:
                return 0                # nothing to do: backoff counts a spin (or yields) without a duty cycle
            self._probes_left = 0       # something else to do, or the data stopped with the rest of a cycle owed
        self.cycles += 1
        work = self.agent.do_work()
        owed = self._owed           # this cycle was the rest of one whose data went in send passes alone
        self._owed = False
        backoff = self._backoff
        connected = sender is not None and sender.connection_changes != connections
        if connected:
            work = max(work, 1)         # (_after_connection_change, below)
        elif backoff is not None and (work > 0 or backoff.state != PARKING):
            # the strategy's phases run as compiled probes whenever it has not reached its parks: after work (it is
            # about to start over) and after a cycle that a probe asked for and that found nothing to do (a reader
            # moved, with no status message due yet), which would otherwise leave the rest of the phases to whole
            # cycles
            if self._arm_probe():
                self._start_probes()
        elif work > 0:
            sender = self._sender
            if sender is not None and sender.sent_data and self._probe_spins and self._arm_probe():
                # a stream being sent: probes at once, so that its next batches can go in send passes alone
                self._start_probes()
                self._armed = False
            else:
                self._armed = self._probe_spins > 0
        elif backoff is None and (self._armed or owed):     # one probe per step: the first idle cycle after work
            self._armed = False
            if self._arm_probe():
                self._start_probes()
        mask = 0
        for queue, bit in self._peers:
            if queue:
                mask |= bit
        conductor = self._conductor
        if conductor is not None and conductor.client_proxy.transmissions != self._transmissions:
            self._transmissions = conductor.client_proxy.transmissions
            mask |= CLIENTS             # responses and notices for our clients' conductors
        if mask:
            self._signal(mask)
        active = False
        for agent in self._agents:          # a loop, not any(generator): this runs every duty cycle
            if agent.activity:
                active = True
                break
        self.active = active
        if not active and self._receiver is not None and self._receiver.timer_status_messages and \
                sender is not None:
            # an idle cycle's status messages to a publication of this driver (a ping and its pong on one driver) are
            # in its sender's sockets already: read now, they would end the park at once and cost a cycle
            work += sender.poll_control()
            if sender.connection_changes != connections:
                connected = True
                work = max(work, 1)
        if connected:
            self._after_connection_change()
        if conductor is not None and conductor.clients_changes != self._clients_reviewed:
            self._review_clients(conductor)
        if self._spin is not None:
            self._watch_stale = True
        return work

    def _watch(self) -> None:
        """What the compiled spin watches until the next whole cycle (endpoints and publications change only in
        whole cycles, on this thread): the send passes and the receive sockets, with their receive passes when the
        driver's clock is CLOCK_MONOTONIC (the spin's passes take their time from it). Not used while a publication
        is sent one by one (the spin then polls the data half itself)."""
        sender, receiver = self._sender, self._receiver
        # they change only with the commands these agents run (as the probes' sockets: _arm_probe)
        version = (sender.changes if sender is not None else -1, receiver.changes if receiver is not None else -1)
        if version == self._watch_version:
            return
        self._watch_version = version
        passes = sender.send_passes() if sender is not None else []
        if passes is None:
            self._watching = _POLLED
            return
        fds = receiver.wait_fds() if receiver is not None else []
        if not passes and not fds:
            self._watching = _NOTHING
            return
        receives: list[Any] = []
        self._spin_owners = []
        if fds and self._monotonic:
            receives, self._spin_owners = receiver.probe_receives()             # type: ignore[union-attr]
        self._spin.set_sockets(passes, fds, 0, receives)                        # type: ignore[union-attr]
        self._spin_passes = self._monotonic     # a send pass's time is the driver's clock too
        self._watching = _COMPILED

    def _after_connection_change(self) -> None:
        """A publication's is_connected flipped in the cycle just run (its first status message, or its receivers
        gone): a client may offer as soon as it sees the flag, and the limit is the conductor's to move. Its next
        cycle comes at once, not after the probes or a park (those start after it, as after any work); a conductor on
        another thread is signalled."""
        self._probes_left = 0
        self._armed = self._probe_spins > 0
        self.active = True
        if self._conductor is None:
            self._signal(CONDUCTOR)

    def fast_work(self, wait_ns: int = 0, spin_ns: int = 0, passes_left: int = 1, defer_ns: int = 0) -> int:
        """The data half of a duty cycle, between full ones (the wake-up idle strategy's spin): up to ``wait_ns`` a
        wait for data offered to a send pass or a datagram on a receive socket; then the sender's send passes, the
        receiver's sockets into images (their subscribers signalled at once), and signals for other driver threads;
        then, for up to ``spin_ns`` after each pass that moved data, the same again, until ``passes_left`` such passes
        ran or ``defer_ns`` passed since the first. With the driver's clock CLOCK_MONOTONIC all of it is one compiled
        call with the GIL released (DataSpin.run_data: no Python from an offer seen to its subscriber woken), which
        hands anything else (a SETUP or an unknown session received, a socket without a compiled receive, a send
        that failed or found its socket full) to the Python half here. Returns the passes that moved data, and
        ``fast_idle_ns`` how long the spin then waited with nothing; 0 when the wait ended with nothing; -1 when this
        thread has no data to watch (no network publication or subscription: a conductor's thread, an IPC-only
        driver): the idle strategy then spins as for any thread. An error is reported as a duty cycle's is, and
        counts as a pass that moved data (a whole cycle follows)."""
        if self._watch_stale:
            self._watch_stale = False
            self._watch()
        watching = self._watching
        if watching is _NOTHING:
            return -1
        self.fast_idle_ns = 0
        moved = 0
        try:
            if watching is _COMPILED:
                spin = self._spin
                if self._spin_passes:
                    moved = spin.run_data(wait_ns, spin_ns, passes_left, defer_ns)      # type: ignore[union-attr]
                    if spin.unsignalled:                                                # type: ignore[union-attr]
                        self._signal(spin.unsignalled)                                  # type: ignore[union-attr]
                    if not spin.handed_back:                                            # type: ignore[union-attr]
                        self.fast_idle_ns = spin.data_idle_ns                           # type: ignore[union-attr]
                        return moved            # no command queued for another thread: nothing to signal
                    if spin.event_index >= 0:                                           # type: ignore[union-attr]
                        # what the receive pass left for Python, before anything reads its socket again
                        self._receiver.on_probe_receives(self._spin_owners, spin.event_index)  # type: ignore
                elif not spin.wait(wait_ns):                                            # type: ignore[union-attr]
                    return 0
            work = 0
            sender = self._sender
            if sender is not None:
                work += sender.send_data()
            receiver = self._receiver
            if receiver is not None:
                work += receiver.poll_data()
            if work:
                moved += 1
        except Exception as exc:        # noqa: BLE001 - as in a duty cycle: reported, and the thread goes on
            if self._on_error is None:
                raise
            self._on_error(exc)
            moved += 1
        mask = 0
        for queue, bit in self._peers:
            if queue:
                mask |= bit
        if mask:
            self._signal(mask)
        return moved

    def commands_pending(self) -> bool:
        """Whether a client command (the to-driver ring buffer) or a command queued for these agents waits: what a
        data half (fast_work) leaves to a whole duty cycle, looked at by the re-check of a park that follows data
        halves alone (WakeupIdleStrategy._data_first)."""
        to_driver = self._to_driver
        if to_driver is not None and to_driver.size():
            return True
        for queue in self._queues:
            if queue:
                return True
        return False

    def wake_served(self) -> bool:
        """After a wake-up whose data half moved nothing (WakeupIdleStrategy._served_wake): True when nothing waits that
        only a whole duty cycle serves: no command, no timer of these agents due, no control frame on the sender's
        sockets (read now, as an idle cycle's: a status message's limit is the sender's own), and every client
        signals (otherwise a wake-up may be the board's, to take the short bound again). False: a whole cycle."""
        if not self._registry.all_signal or self.commands_pending() or self.time_to_deadline_ns(1) <= 0:
            return False
        sender = self._sender
        if sender is not None:
            connections = sender.connection_changes
            if sender.poll_control():
                if sender.connection_changes != connections:
                    self._after_connection_change()
                return False
        return True

    def _review_clients(self, conductor: Any) -> None:
        self._clients_reviewed = conductor.clients_changes
        ours = self._ours
        registry = self._registry
        verdict = True
        for client_id in conductor.clients:
            known = ours.get(client_id)
            if known is None:
                known = ours[client_id] = registry.is_registered(client_id)
            verdict = verdict and known
        for client_id in [c for c in ours if c not in conductor.clients]:
            del ours[client_id]
        was = registry.all_signal
        registry.all_signal = verdict
        if was and not verdict:
            self._board.signal(-1)      # every parked sleeper: back to the bound for writers that do not signal

    def quiet_park_ns(self, quiet_ns: int) -> int:
        """The bound a park may grow to: the long quiet bound while every client signals and no reader of these
        agents' images and IPC publications is still reading, else ``quiet_ns``; while a client that does not signal
        is connected (an official one), backoff's bound (``backoff_park_ns``): its commands and data are then found
        as soon as backoff would find them."""
        if not self._registry.all_signal:
            return min(quiet_ns, self.backoff_park_ns)
        for agent in self._agents:
            if agent is self._receiver:
                # a subscriber still reading moves the status message's position, which only a duty cycle sees
                if not agent.images_settled():
                    return quiet_ns
            elif hasattr(agent, "ipc_publications") and not _publications_settled(agent):
                return quiet_ns
        return max(quiet_ns, self._long_quiet_ns)

    def time_to_deadline_ns(self, far_ns: int) -> int:
        """Nanoseconds until the agents' next timer is due (<= 0: due now), at most ``far_ns``."""
        ttd = far_ns
        for agent in self._timed:
            ttd = min(ttd, agent.time_to_deadline_ns(far_ns))
        return ttd

    def on_close(self) -> None:
        if self._conductor is not None:
            self._registry.all_signal = False
        self.agent.on_close()
