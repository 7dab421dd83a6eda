# SPDX-License-Identifier: Apache-2.0
"""Sender without threads or sockets: its SenderProxy commands run one per duty cycle, publications added that
way send over a recording transport, control frames are polled, and what it lets go of goes back through the
DriverConductorProxy (aeron_driver_sender.c)."""
from __future__ import annotations

import pytest

from aeron._core import counters as ctr
from aeron._core import frames as f
from tests.driver.fakes import (
    MS, SUBSCRIBER, Agents, Counters, FakeTransport, ManualClock, network_publication, send_endpoint,
    status_message,
)


@pytest.fixture
def rig(tmp_path):
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    agents = Agents(counters, clock)
    endpoint = send_endpoint(counters, transport)
    publication, appender = network_publication(tmp_path, counters, endpoint, clock)
    endpoint.publications[(7, 1001)] = publication
    yield counters, clock, transport, agents, endpoint, publication
    appender.close()
    publication.close()


def test_proxy_commands_run_one_per_duty_cycle(rig):
    counters, clock, transport, agents, endpoint, publication = rig
    agents.sender_proxy.add_endpoint(endpoint)
    agents.sender_proxy.add_publication(publication)
    assert len(agents.sender.command_queue) == 2 and agents.sender.endpoints == []
    assert agents.sender.do_work() >= 1
    assert agents.sender.endpoints == [endpoint] and agents.sender.publications == []
    assert transport.sent == []
    agents.sender.do_work()
    assert agents.sender.publications == [publication]
    assert len(transport.sent_of_type(f.HDR_TYPE_SETUP)) == 1           # sent in the cycle that added it
    assert agents.sender.do_work() == 0 and len(agents.sender.command_queue) == 0


def test_the_sender_polls_control_frames_when_it_has_nothing_to_send(rig):
    counters, clock, transport, agents, endpoint, publication = rig
    agents.sender_proxy.add_endpoint(endpoint)
    agents.sender_proxy.add_publication(publication)
    agents.sender.do_work()
    agents.sender.do_work()
    transport.deliver(status_message(), SUBSCRIBER)
    agents.sender.do_work()
    assert publication.has_receivers and counters[ctr.STATUS_MESSAGES_RECEIVED] == 1
    clock.advance(101 * MS)
    agents.sender.do_work()
    assert f.decode_frame(transport.sent_of_type(f.HDR_TYPE_DATA)[-1]).is_heartbeat


def test_removed_publications_and_endpoints_go_back_to_the_conductor(rig):
    counters, clock, transport, agents, endpoint, publication = rig
    agents.sender_proxy.add_endpoint(endpoint)
    agents.sender_proxy.add_publication(publication)
    agents.sender.do_work()
    agents.sender.do_work()
    agents.sender_proxy.remove_publication(publication)
    agents.sender_proxy.remove_endpoint(endpoint)
    agents.sender.do_work()
    assert agents.sender.publications == [] and agents.sender.endpoints == [endpoint]
    assert len(agents.conductor_queue) == 1 and not publication.sender_released
    agents.sender.do_work()
    assert agents.sender.endpoints == []
    assert agents.run_conductor_commands() == 2                          # on the conductor's thread
    assert publication.sender_released and endpoint.sender_released


def test_destinations_are_changed_on_the_sender_thread():
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    agents = Agents(counters, clock)
    endpoint = send_endpoint(counters, transport, "aeron:udp?control=127.0.0.1:40200|control-mode=manual")
    agents.sender_proxy.add_destination(endpoint, ("127.0.0.1", 40301), 5, clock())
    agents.sender_proxy.add_destination(endpoint, ("127.0.0.1", 40302), 6, clock())
    agents.sender_proxy.remove_destination(endpoint, ("127.0.0.1", 40301))
    assert endpoint.destinations == []
    for _ in range(3):
        agents.sender.do_work()
    assert [(d.address, d.registration_id) for d in endpoint.destinations] == [(("127.0.0.1", 40302), 6)]


def test_a_closed_sender_refuses_commands(rig):
    counters, clock, transport, agents, endpoint, publication = rig
    agents.sender_proxy.add_endpoint(endpoint)
    agents.sender.on_close()
    assert len(agents.sender.command_queue) == 0
    assert not agents.sender_proxy.offer((agents.sender.on_add_publication, publication))
    assert counters[ctr.SENDER_PROXY_FAILS] == 0


def test_after_a_stall_status_messages_are_read_before_receivers_are_judged_silent(tmp_path):
    """When the whole driver was held up (a loaded machine) for longer than the connection timeout, the status
    messages that came meanwhile wait in the socket: the sender reads them before its publications look for
    receivers gone silent, so a live receiver is not dropped for the time this thread did not run."""
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    agents = Agents(counters, clock)
    endpoint = send_endpoint(counters, transport)
    publication, appender = network_publication(tmp_path, counters, endpoint, clock, connection_timeout_ns=500 * MS)
    endpoint.publications[(7, 1001)] = publication
    agents.sender_proxy.add_endpoint(endpoint)
    agents.sender_proxy.add_publication(publication)
    agents.sender.do_work()
    agents.sender.do_work()
    transport.deliver(status_message(), SUBSCRIBER)
    agents.sender.do_work()
    assert publication.has_receivers
    connected = []                                                      # every connected state it passes through
    update = publication._update_has_receivers

    def recording_update() -> None:
        update()
        connected.append(publication.log.is_connected)

    publication._update_has_receivers = recording_update
    clock.advance(700 * MS)                                              # nothing ran for 700 ms
    transport.deliver(status_message(), SUBSCRIBER)                     # sent by the receiver meanwhile
    agents.sender.do_work()
    assert connected and all(connected) and publication.has_receivers
    clock.advance(501 * MS)                                              # this time the receiver is silent
    agents.sender.do_work()
    assert not publication.has_receivers
    appender.close()
    publication.close()


def _parked(agent, clock, transport, until_ns):
    """Run ``agent`` as a parked wakeup driver thread does while idle: a duty cycle each time its next timer is due
    (time_to_deadline_ns), nothing in between. Returns the cycles run and (time, datagram) of what each sent."""
    cycles, sent = 0, []
    while clock() < until_ns and cycles < 1000:
        clock.advance(max(0, agent.time_to_deadline_ns(until_ns - clock())))
        seen = len(transport.sent)
        agent.do_work()
        cycles += 1
        sent += [(clock(), datagram) for datagram, _ in transport.sent[seen:]]
    return cycles, sent


def test_a_parked_senders_heartbeats_come_to_share_a_wake_up_and_stay_within_100_ms(tmp_path):
    counters, clock, transport = Counters(), ManualClock(), FakeTransport()
    agents = Agents(counters, clock)
    agents.sender.timer_slack_ns = 50 * MS                  # what driver_wakeup gives a wakeup thread's sender
    endpoint = send_endpoint(counters, transport)
    agents.sender_proxy.add_endpoint(endpoint)
    logs = []
    for session_id in (7, 8):                               # connected 70 ms apart: heartbeats out of phase
        publication, appender = network_publication(tmp_path, counters, endpoint, clock, session_id=session_id,
                                                    name=f"pub{session_id}")
        logs.append((publication, appender))
        endpoint.publications[(session_id, 1001)] = publication
        agents.sender_proxy.add_publication(publication)
        transport.deliver(status_message(session_id=session_id), SUBSCRIBER)
        agents.sender.do_work()
        agents.sender.do_work()
        assert publication.timer_slack_ns == 50 * MS and publication.has_receivers
        clock.advance(70 * MS)
    start = clock()
    cycles, sent = _parked(agents.sender, clock, transport, start + 2000 * MS)
    heartbeats = {7: [], 8: []}
    for at, datagram in sent:
        frame = f.decode_frame(datagram)
        assert frame.is_heartbeat
        heartbeats[frame.session_id].append(at)
    for times in heartbeats.values():
        gaps = [b - a for a, b in zip([start - 70 * MS] + times, times)]
        assert all(50 * MS <= gap <= 100 * MS + 1 for gap in gaps[1:]), gaps    # early by the slack at most
        assert max(gaps) <= 100 * MS + 1 and len(times) >= 19
    assert heartbeats[7][-5:] == heartbeats[8][-5:]         # one wake-up for both
    assert cycles <= 22                                     # about 10 a second, not 20
    for publication, appender in logs:
        appender.close()
        publication.close()
