# SPDX-License-Identifier: Apache-2.0
"""The thread CPU time a client's wakeup loop spends per message outside its poll and handler: the idle strategy's
calls from a message to the park, the park's wait (woken at once: the writer's CAS lands before it) and the samples'
running flag, in one process with no driver (docs/wakeup.md). Thread CPU, not wall time, so a busy machine changes
it little; compare checkouts in the same session:

    .venv/bin/python perf/client_idle_path.py [--messages 200000] [--root <checkout>] [--python] [--auto]

Each message is what ``aeron.samples.pong``'s loop does around it on a network stream (``wakeup_idle_strategy``: no
spin, a yield before the park): ``idle(1)`` for the poll that delivered it, polls that find nothing (each followed
by ``idle(0)``) until the park is prepared, the writer's signal (a CAS from parked to woken and a FUTEX_WAKE: the
driver's part, counted here too), then the polls up to the park's return. The polls are a function returning 0.
The strategy is the one ``Aeron.wakeup_idle_strategy`` gives (ClientWakeupIdleStrategy, or WakeupIdleStrategy in a
checkout without it), bound with the quiet bound a client binds (Aeron.quiet_park_ns: QuietBound, or its Python);
``--python`` runs the same steps in Python (WakeupIdleStrategy, the quiet bound's Python), the reference in the same
run. ``--auto`` wraps the strategy in AutoIdleStrategy, as ``Aeron.default_idle_strategy`` gives a loop on IPC (with
no spin here: the calls are measured, not a spin's length). Then one line more: what one poll of a spin costs (a loop
on IPC spins after each message). Most of what the compiled one costs is the two futex calls per message (the writer's FUTEX_WAKE, the waiter's
FUTEX_WAIT that returns at once).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from typing import Any


def _client_quiet(board: Any, registry: Any, python: bool) -> tuple[Any, Any]:
    """What a client binds as its strategy's ``quiet`` (Aeron.quiet_park_ns), with no async command pending and no
    brief parks held, and the driver's verdict its AutoIdleStrategy reads: the compiled QuietBound where the checkout
    has one (unless ``python``), else that method's Python and ClientRegistry.all_signal."""
    from aeron._core import wakeup as _wk
    from aeron.common.agent import DRIVER_BACKOFF_MAX_PARK_NS
    from aeron.common.wakeup import ALL_SIGNAL_OFFSET, LONG_QUIET_PARK_NS
    pending: dict[int, Any] = {}
    holds = 0

    def awaits_async_result() -> bool:
        return bool(pending)

    if hasattr(_wk, "QuietBound") and not python:
        quiet = _wk.QuietBound(board, ALL_SIGNAL_OFFSET, LONG_QUIET_PARK_NS, DRIVER_BACKOFF_MAX_PARK_NS, pending,
                               awaits_async_result)
        return quiet, quiet.all_signal

    def quiet_park_ns(quiet_ns: int) -> int:
        if holds > 0 or awaits_async_result():
            return min(quiet_ns, DRIVER_BACKOFF_MAX_PARK_NS)
        return registry.quiet_park_ns(quiet_ns)             # type: ignore[no-any-return]
    return quiet_park_ns, lambda: registry.all_signal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--root", default=None, help="measure another checkout's code (built in place)")
    parser.add_argument("--python", action="store_true",
                        help="the same steps in Python: WakeupIdleStrategy (a driver agent's) and the quiet bound's Python")
    parser.add_argument("--auto", action="store_true",
                        help="wrapped in AutoIdleStrategy, as Aeron.default_idle_strategy gives a loop on IPC")
    args = parser.parse_args(argv)
    if args.root:
        sys.path.insert(0, args.root)
    from aeron.common import wakeup
    from aeron.common.wakeup import ClientRegistry, WakeupIdleStrategy, new_waiter, open_board, stream_bit
    # what Aeron.wakeup_idle_strategy gives (a checkout from before the compiled client idle: WakeupIdleStrategy)
    strategy_class = WakeupIdleStrategy if args.python else getattr(wakeup, "ClientWakeupIdleStrategy",
                                                                    WakeupIdleStrategy)
    from aeron.samples._common import Running

    directory = tempfile.mkdtemp(prefix="client-idle-path-", dir="/dev/shm")
    board = open_board(directory, create=True)
    if board is None:
        print("no wake-up board", file=sys.stderr)
        return 1
    mask = stream_bit(1002)
    waiter = new_waiter(board, mask, futex=True)
    idle_strategy = strategy_class(spin_ns=0, yield_ns=WakeupIdleStrategy.DEFAULT_YIELD_NS)
    # every writer signals (our driver's verdict): the long bound, and the yield before the first park after work
    registry = ClientRegistry(board)
    registry.all_signal = True
    quiet, all_signal = _client_quiet(board, registry, args.python)
    idle_strategy.bind(waiter, quiet=quiet)
    outer = idle_strategy
    if args.auto:
        from aeron.common.agent import BackoffIdleStrategy
        from aeron.common.wakeup import AutoIdleStrategy
        if args.python and hasattr(wakeup, "ClientWakeupIdleStrategy"):
            print("--auto --python: AutoIdleStrategy is compiled in this checkout", file=sys.stderr)
        outer = AutoIdleStrategy(idle_strategy, BackoffIdleStrategy(), all_signal)
    running = Running()
    messages = args.messages

    def poll() -> int:
        return 0

    def loop() -> None:
        # the loop reads the waiter's own counters, which cost the same whatever the strategy's class
        idle = outer.idle
        for _ in range(messages):
            idle(1)                                             # the poll that delivered the message
            while running and not waiter.prepared:              # up to the prepared park
                idle(poll())
            board.signal(mask)                                  # the next message: the writer wakes the park
            woken = waiter.wakeups
            while running and waiter.wakeups == woken:          # up to the park's return
                idle(poll())

    try:
        per_message = []
        for _ in range(args.rounds):
            start = time.thread_time_ns()
            loop()
            per_message.append((time.thread_time_ns() - start) / messages / 1000)
        name = f"AutoIdleStrategy of {strategy_class.__name__}" if args.auto else strategy_class.__name__
        print(f"client idle path per message (thread CPU, {name}): "
              f"{' '.join(f'{v:.3f}' for v in per_message)} µs; "
              f"parks {idle_strategy.parks}, woken {waiter.wakeups}, timed out {waiter.timeouts}")
        # a loop that spins after work (IPC): what each poll of the spin costs besides the poll
        idle_strategy.spin_ns = 1 << 50
        idle = outer.idle
        idle(1)
        start = time.thread_time_ns()
        for _ in range(messages):
            idle(poll())
        print(f"one poll of a spin, the loop and the poll included (thread CPU): "
              f"{(time.thread_time_ns() - start) / messages:.0f} ns")
        return 0 if waiter.timeouts == 0 else 1
    finally:
        idle_strategy.close()
        board.close()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
