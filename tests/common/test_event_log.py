# SPDX-License-Identifier: Apache-2.0
"""The cluster's debug event log (aeron.common.event_log): off unless AERON_EVENT_CLUSTER_LOG names a file, then one
whole line per event, appended, stamped with the monotonic clock and the pid."""
from __future__ import annotations

import importlib
import os
import time

from aeron.common import event_log


def test_off_by_default_and_appends_stamped_lines_when_named(tmp_path, monkeypatch):
    monkeypatch.delenv("AERON_EVENT_CLUSTER_LOG", raising=False)
    off = importlib.reload(event_log)
    try:
        assert not off.ENABLED
        off.log_event("member-0", "ELECTION_STATE_CHANGE", "INIT -> CANVASS")     # nothing, nowhere
        path = tmp_path / "events.log"
        path.write_text("an earlier line\n")
        monkeypatch.setenv("AERON_EVENT_CLUSTER_LOG", str(path))
        on = importlib.reload(event_log)
        assert on.ENABLED
        before = time.monotonic_ns()
        on.log_event("member-0", "ELECTION_STATE_CHANGE", "INIT -> CANVASS")
        on.log_event("client-7", "STATE_CHANGE", "CONNECTED -> AWAIT_NEW_LEADER_CONNECTION")
        lines = path.read_text().splitlines()
        assert lines[0] == "an earlier line"
        stamps = [int(line.split()[0]) for line in lines[1:]]
        assert before <= stamps[0] <= stamps[1] <= time.monotonic_ns()
        assert [line.split(" ", 1)[1] for line in lines[1:]] == [
            f"{os.getpid()} member-0 ELECTION_STATE_CHANGE INIT -> CANVASS",
            f"{os.getpid()} client-7 STATE_CHANGE CONNECTED -> AWAIT_NEW_LEADER_CONNECTION"]
    finally:
        monkeypatch.delenv("AERON_EVENT_CLUSTER_LOG", raising=False)
        importlib.reload(event_log)


def test_steps_only_with_the_log_and_their_own_setting(tmp_path, monkeypatch):
    try:
        monkeypatch.setenv("AERON_EVENT_CLUSTER_STEPS", "true")
        monkeypatch.delenv("AERON_EVENT_CLUSTER_LOG", raising=False)
        assert not importlib.reload(event_log).STEPS                  # nowhere to write them
        monkeypatch.setenv("AERON_EVENT_CLUSTER_LOG", str(tmp_path / "events.log"))
        assert importlib.reload(event_log).STEPS
        monkeypatch.setenv("AERON_EVENT_CLUSTER_STEPS", "false")
        assert not importlib.reload(event_log).STEPS
        monkeypatch.delenv("AERON_EVENT_CLUSTER_STEPS")
        assert not importlib.reload(event_log).STEPS and event_log.ENABLED
    finally:
        monkeypatch.delenv("AERON_EVENT_CLUSTER_LOG", raising=False)
        monkeypatch.delenv("AERON_EVENT_CLUSTER_STEPS", raising=False)
        importlib.reload(event_log)
