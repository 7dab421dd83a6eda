# SPDX-License-Identifier: Apache-2.0
"""ControlSession.do_work in its steady state (ACTIVE, nothing queued or listed), which the archive steps every duty
cycle: its short path must still ping when the liveness interval is up, flush what is queued, and end the session
when its request image closes or its response publication disconnects."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from aeron.archive.control_session import ControlSession, SessionState

INTERVAL_NS = 1_000_000


class _Publication:
    def __init__(self) -> None:
        self.is_connected = True
        self.offered: list[bytes] = []

    def offer(self, message: bytes, *args: object) -> int:
        self.offered.append(bytes(message))
        return len(self.offered)


class _Conductor:
    def __init__(self) -> None:
        self.ctx = SimpleNamespace(connect_timeout_ns=5_000_000_000, session_liveness_check_interval_ns=INTERVAL_NS)
        self.proxy = SimpleNamespace(ping=lambda session_id: b"ping-%d" % session_id)
        self.closed: list[ControlSession] = []

    def on_session_closed(self, session: ControlSession) -> None:
        self.closed.append(session)


def _active_session(now_ns: int) -> tuple[ControlSession, _Conductor, _Publication, SimpleNamespace]:
    conductor = _Conductor()
    image = SimpleNamespace(is_closed=False, correlation_id=1)
    session = ControlSession(conductor, 7, 1, image, "aeron:ipc", 20, 1 << 16, b"", "", now_ns)  # type: ignore[arg-type]
    publication = _Publication()
    session.publication = publication
    session.counter = object()
    session.state = SessionState.ACTIVE
    return session, conductor, publication, image


def test_a_steady_session_pings_when_the_liveness_interval_is_up_and_not_before():
    session, _, publication, _ = _active_session(0)
    session.do_work(0)                          # due at once (the deadline starts at the session's start)
    sent = len(publication.offered)
    assert sent >= 1 and publication.offered[-1] == b"ping-7"
    assert session.do_work(INTERVAL_NS // 2) == 0
    assert len(publication.offered) == sent
    session.do_work(INTERVAL_NS + 1)
    assert len(publication.offered) == sent + 1 and publication.offered[-1] == b"ping-7"
    assert session.state is SessionState.ACTIVE


def test_a_steady_session_flushes_what_is_queued():
    session, _, publication, _ = _active_session(0)
    session.do_work(0)
    sent = len(publication.offered)
    session.send(b"answer")
    assert session.do_work(INTERVAL_NS // 2) >= 1
    assert publication.offered[sent:] == [b"answer"]


@pytest.mark.parametrize("end, reason", [("image", "request image closed"),
                                         ("publication", "response publication not connected")])
def test_a_steady_session_ends_when_its_request_image_closes_or_its_response_publication_disconnects(end, reason):
    session, conductor, publication, image = _active_session(0)
    session.do_work(0)
    if end == "image":
        image.is_closed = True
    else:
        publication.is_connected = False
    assert session.do_work(INTERVAL_NS // 2) == 1
    assert session.state is SessionState.DONE and conductor.closed == [session]
    assert session.reason == reason
