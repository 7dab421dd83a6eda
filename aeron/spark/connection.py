# SPDX-License-Identifier: Apache-2.0
"""How a Spark task (or the planner) reaches Aeron: a media driver, a client, and optionally a running archive.

With ``aeronDir`` the task connects to the driver running there. Without it the task launches an embedded driver
(SHARED, backoff idle, a fresh directory under /dev/shm) and closes it when the task is done: Spark's Python
workers end by ``os._exit`` or a signal, so a driver kept for the life of a worker process would run no exit hook
and leave its directory behind; one per task is always closed (its launch costs a fraction of a second).

Archive options, named after the archive client's settings (``aeron.archive.control.*``):

- ``controlChannel``: the archive's control request channel (``aeron:udp?endpoint=host:port``, or ``aeron:ipc``
  for the archive of the driver in ``aeronDir``).
- ``controlStreamId`` (default 10), ``controlResponseChannel`` (default ``aeron:ipc`` for an IPC control
  channel, else ``aeron:udp?endpoint=localhost:0``), ``controlResponseStreamId`` (default 20).
- ``replayChannel`` / ``replayStreamId`` (source only; default the response channel's kind, stream 17117):
  where the archive replays to; a ``:0`` port is bound first and the bound port sent to the archive.
- ``timeoutMs`` (default 10,000): the archive's message timeout, and how long a replay may make no progress.

An integer option (here, in the source and in the sink) set to anything that is not an integer, the empty string
included, is an InvalidArgumentError naming it.

The archive sends responses and replays to the addresses these channels name, so with an archive on another
machine they must name an address of the executor that the archive reaches.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from aeron.archive.client import AeronArchive
from aeron.archive.client import Context as ArchiveContext
from aeron.client.aeron import Aeron
from aeron.client.context import Context
from aeron.common.errors import AeronTimeoutError, InvalidArgumentError
from aeron.driver import Context as DriverContext
from aeron.driver import MediaDriver

DEFAULT_CONTROL_STREAM_ID = 10
DEFAULT_CONTROL_RESPONSE_STREAM_ID = 20
DEFAULT_REPLAY_STREAM_ID = 17117
DEFAULT_TIMEOUT_MS = 10_000


def int_option(options: Any, name: str, default: int | None) -> int | None:
    """Option ``name`` as an int, ``default`` when it is absent. Anything else that is not an integer, the empty
    string included (``option(name, "")`` sets the option, to nothing), is an InvalidArgumentError naming it."""
    value = options.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidArgumentError(f"option {name} must be an integer, got {value!r}") from None


def bool_option(options: Any, name: str) -> bool:
    """Option ``name`` as ``true`` / ``false`` (default false); InvalidArgumentError otherwise."""
    value = (options.get(name) or "false").strip().lower()
    if value not in ("true", "false"):
        raise InvalidArgumentError(f"option {name} must be 'true' or 'false', got {value!r}")
    return value == "true"


def timeout_ms_option(options: Any) -> int:
    """``timeoutMs``: positive milliseconds."""
    value = int_option(options, "timeoutMs", DEFAULT_TIMEOUT_MS)
    assert value is not None
    if value <= 0:
        raise InvalidArgumentError(f"option timeoutMs must be positive, got {value}")
    return value


def poll_until(probe: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.001) -> Any:
    """Call ``probe`` every ``interval_s`` until it returns something other than None or False, and return that;
    AeronTimeoutError ``"<what> within <timeout_s> s"`` when ``timeout_s`` passes first."""
    deadline = time.monotonic() + timeout_s
    while (found := probe()) is None or found is False:
        if time.monotonic() > deadline:
            raise AeronTimeoutError(f"{what} within {timeout_s:g} s")
        time.sleep(interval_s)
    return found


def _kind(channel: str, option: str) -> str:
    if channel.startswith("aeron:ipc"):
        return "ipc"
    if channel.startswith("aeron:udp"):
        return "udp"
    raise InvalidArgumentError(f"option {option} must be an aeron:udp or aeron:ipc channel, got {channel!r}")


@dataclasses.dataclass(frozen=True)
class ArchiveSettings:
    """Where a running archive is, and where it answers and replays (the options in the module docstring)."""

    control_channel: str
    control_stream_id: int = DEFAULT_CONTROL_STREAM_ID
    control_response_channel: str = "aeron:udp?endpoint=localhost:0"
    control_response_stream_id: int = DEFAULT_CONTROL_RESPONSE_STREAM_ID
    replay_channel: str = "aeron:udp?endpoint=localhost:0"
    replay_stream_id: int = DEFAULT_REPLAY_STREAM_ID
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    @classmethod
    def from_options(cls, options: Any) -> ArchiveSettings | None:
        """The archive options, or None without ``controlChannel``."""
        control = options.get("controlChannel")
        if not control:
            return None
        kind = _kind(control, "controlChannel")
        default = "aeron:ipc" if kind == "ipc" else "aeron:udp?endpoint=localhost:0"
        response = options.get("controlResponseChannel") or default
        _kind(response, "controlResponseChannel")
        replay = options.get("replayChannel") or ("aeron:ipc" if response.startswith("aeron:ipc")
                                                 else "aeron:udp?endpoint=localhost:0")
        _kind(replay, "replayChannel")
        ids = {name: int_option(options, name, default_id) for name, default_id in
               (("controlStreamId", DEFAULT_CONTROL_STREAM_ID),
                ("controlResponseStreamId", DEFAULT_CONTROL_RESPONSE_STREAM_ID),
                ("replayStreamId", DEFAULT_REPLAY_STREAM_ID))}
        return cls(control, ids["controlStreamId"] or 0, response, ids["controlResponseStreamId"] or 0, replay,
                   ids["replayStreamId"] or 0, timeout_ms_option(options))


def launch_embedded_driver() -> MediaDriver:
    """A driver for one task: SHARED, backoff idle, its own /dev/shm directory (removed on close). The environment
    is not read: ``AERON_DIR`` there would name a directory this driver then deletes."""
    return MediaDriver.launch_embedded(DriverContext(environ={}, threading_mode="SHARED",
                                                     shared_idle_strategy="backoff"))


class Connection:
    """A driver (``aeron_dir``'s, else an embedded one), a client of it and, with ``archive``, a connected
    AeronArchive; ``close`` (or the ``with`` block) releases them in reverse order."""

    def __init__(self, aeron_dir: str | None, archive: ArchiveSettings | None = None) -> None:
        """Launch or attach, then connect to the archive (ArchiveTimeoutError when it does not answer)."""
        self.driver: MediaDriver | None = None
        self.aeron: Aeron | None = None
        self.archive: AeronArchive | None = None
        try:
            if aeron_dir is None:
                self.driver = launch_embedded_driver()
                aeron_dir = self.driver.aeron_dir
            self.aeron = Aeron.connect(Context(aeron_dir))
            if archive is not None:
                ctx = ArchiveContext(environ={}, aeron=self.aeron, control_request_channel=archive.control_channel,
                                     control_request_stream_id=archive.control_stream_id,
                                     control_response_channel=archive.control_response_channel,
                                     control_response_stream_id=archive.control_response_stream_id,
                                     message_timeout_ns=archive.timeout_ms * 1_000_000)
                self.archive = AeronArchive.connect(ctx)
        except BaseException:
            self.close()
            raise

    @property
    def is_embedded(self) -> bool:
        """True when this connection launched its own driver."""
        return self.driver is not None

    def close(self) -> None:
        """Close the archive client, the Aeron client and an embedded driver."""
        archive, self.archive = self.archive, None
        aeron, self.aeron = self.aeron, None
        driver, self.driver = self.driver, None
        try:
            if archive is not None:
                archive.close()
        finally:
            try:
                if aeron is not None:
                    aeron.close()
            finally:
                if driver is not None:
                    driver.close()

    def __enter__(self) -> Connection:  # noqa: PYI034 (not meant to be subclassed)
        """Return the connection."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()
