# SPDX-License-Identifier: Apache-2.0
"""The metrics exporter on the official C driver's cnc.dat: its system counters with their ids and labels, its
pid, and the pub-pos / sub-pos of a stream moving as our client sends and receives through aeronmd."""
import time

import pytest

from aeron import Aeron, Context
from aeron._core import counters as ctr
from aeron.tools.metrics_exporter import start_exporter
from tests import procs
from tests.tools.metrics_helpers import Scrape

pytestmark = pytest.mark.interop
STREAM_ID = 1088
FRAME = 64                      # 32-byte header + 32-byte message


@pytest.fixture
def aeronmd(official, shm_dir):
    aeron_dir = str(shm_dir / "aeronmd")
    proc = procs.start_aeronmd(official("aeronmd"), aeron_dir)
    try:
        yield aeron_dir, proc
    finally:
        procs.stop(proc)


def test_exporter_serves_aeronmd_counters(aeronmd):
    aeron_dir, proc = aeronmd
    server, thread = start_exporter(aeron_dir, 0, "127.0.0.1")
    try:
        with Aeron.connect(Context(aeron_dir, driver_timeout_ms=5000)) as client:
            sub = client.add_subscription("aeron:ipc", STREAM_ID)
            pub = client.add_publication("aeron:ipc", STREAM_ID)
            first = Scrape(server.server_port)
            assert first.value("aeron_driver_up", aeron_dir=aeron_dir) == 1
            assert first.value("aeron_driver_info", pid=str(proc.pid), cnc_version="0.2.0") == 1
            system = {s.labels["name"]: s for s in first.all("aeron_system_counter")}
            assert set(system) >= {name.lower() for _, name, _ in ctr.SYSTEM_COUNTERS}
            assert system["bytes_sent"].labels["label"] == "Bytes sent"
            assert system["control_protocol_version"].value == 65536
            stream = dict(stream_id=str(STREAM_ID), session_id=str(pub.session_id), channel="aeron:ipc")
            sub_pos = dict(stream, type="sub-pos", registration_id=str(sub.registration_id))
            assert first.value("aeron_stream_position", type="pub-pos", **stream) == 0
            assert first.value("aeron_stream_position", **sub_pos) == 0
            assert first.value("aeron_stream_position", type="pub-lmt", **stream) > 0
            for _ in range(20):
                while pub.offer(bytes(32)) < 0:
                    pass
            received = 0
            deadline = time.monotonic() + 10
            while received < 20:
                received += sub.poll(lambda *args: None, 20)
                assert time.monotonic() < deadline
            while True:
                later = Scrape(server.server_port)
                if later.value("aeron_stream_position", type="pub-pos", **stream) == 20 * FRAME:
                    break
                assert time.monotonic() < deadline, "aeronmd's pub-pos did not follow"
                time.sleep(0.05)
            assert later.value("aeron_stream_position", **sub_pos) == 20 * FRAME
            assert later.value("aeron_clients") == 1
            assert later.value("aeron_error_log_distinct_errors") == 0
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
