# SPDX-License-Identifier: Apache-2.0
"""The driver's side of waking instead of spinning (docs/wakeup.md).

The driver makes its aeron dir's wake-up board, gives each agent thread whose idle strategy is ``wakeup`` a
waiter (woken by client commands, data in a network publication, or its own UDP sockets), and after each duty
cycle signals whoever its work concerns: the clients' subscribers when the receiver wrote into images, and the
driver's other agent threads when it queued a command for them. Signals cost a fence and a load while nobody
sleeps, so the driver signals whatever its idle strategies are: our clients parked on our driver wake either way.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aeron.common.agent import Agent, IdleStrategy, WakeupIdleStrategy
from aeron.common.wakeup import ALL_STREAMS, CONDUCTOR, RECEIVER, SENDER, WakeupBoard, new_waiter

__all__ = ["SignallingAgent", "agent_mask", "bind_idle_strategy"]


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
    return lambda: [fd for source in sources for fd in source()]


def bind_idle_strategy(idle: IdleStrategy, board: WakeupBoard | None, conductor: Any,
                       agents: tuple[Any, ...]) -> Any:
    """Bind a ``wakeup`` idle strategy to a new waiter of ``board`` for the thread running ``agents``; returns
    the waiter (None when ``idle`` is another kind, there is no board, or the board is full: the strategy then
    parks with backoff's bounded sleeps)."""
    if not isinstance(idle, WakeupIdleStrategy) or board is None:
        return None
    waiter = new_waiter(board, agent_mask(conductor, agents))
    if waiter is not None:
        idle.bind(waiter, _fds_of(agents))
    return waiter


class SignallingAgent(Agent):
    """Runs ``agent`` (one of the driver's, or a composite of them) and, after each duty cycle, signals: the
    subscribers when the receiver did work (it may have written into images; their bit is not known here,
    so every subscriber of our board), and any other driver thread with commands queued for it."""

    def __init__(self, agent: Agent, board: WakeupBoard, conductor: Any, agents: tuple[Any, ...]) -> None:
        self.agent = agent
        self.role_name = agent.role_name
        self._signal = board.signal
        self._data_mask = ALL_STREAMS if conductor.receiver in agents else 0
        own = set(map(id, agents))
        self._peers = tuple((peer.command_queue, bit) for peer, bit in (
            (conductor, CONDUCTOR), (conductor.sender, SENDER), (conductor.receiver, RECEIVER)) if id(peer) not in own)

    def on_start(self) -> None:
        self.agent.on_start()

    def do_work(self) -> int:
        work = self.agent.do_work()
        mask = self._data_mask if work > 0 else 0
        for queue, bit in self._peers:
            if queue:
                mask |= bit
        if mask:
            self._signal(mask)
        return work

    def on_close(self) -> None:
        self.agent.on_close()
