# SPDX-License-Identifier: Apache-2.0
"""Official Aeron C clients and tools against our driver (`python -m aeron.driver`) over IPC.

Needs AERON_C_BIN (skips without). Every process gets a timeout and is killed in a finally.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from tests import procs
from tests.conftest import PROJECT_ROOT
from tests.support import wait_for

STREAM = "1001"

_start_driver = procs.start_our_driver
_stop = procs.stop
_client_env = procs.client_env
_run = procs.run


def _aeron_stat(official, aeron_dir, until, what: str, timeout_s: float = 20.0) -> subprocess.CompletedProcess:
    """The official AeronStat's output, once ``until(output)`` holds (run every 0.2 s, bounded)."""
    def stat():
        result = _run([official("AeronStat"), "-d", aeron_dir, "-w", "false"])
        return result if until(result) else None
    return wait_for(stat, timeout_s, what=what, interval_s=0.2)


def test_basic_publisher_to_basic_subscriber_and_tools(official, shm_dir):
    aeron_dir = str(shm_dir / "driver")
    driver = subscriber = publisher = None
    try:
        driver = _start_driver(aeron_dir)
        subscriber = procs.popen(
            ["stdbuf", "-oL", official("basic_subscriber"), "-p", aeron_dir, "-c", "aeron:ipc", "-s", STREAM])
        lines = procs.wait_for_line(subscriber, "Subscription channel status 1", timeout=20)
        publisher = subprocess.Popen([official("basic_publisher"), "-p", aeron_dir, "-c", "aeron:ipc", "-s", STREAM,
                                      "-m", "3", "-l", "2s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=_client_env())
        # while both clients are attached (the publisher sends one message a second, then lingers 2 s):
        # the counters as the official AeronStat shows them, once all three messages are consumed
        pattern = (r"^\s*(?P<pubpos>\d+):\s+192 - pub-pos \(concurrent\): (?P<reg>\d+) (?P<session>-?\d+) 1001 aeron:ipc$"
                   r"\n\s*(?P<publmt>\d+):\s+32,768 - pub-lmt: (?P=reg) (?P=session) 1001 aeron:ipc$")

        def consumed(stat):
            assert publisher.poll() is None, stat.stdout
            found = re.search(pattern, stat.stdout, re.M)
            return found and re.search(r" 192 - sub-pos: \d+ " + found["session"], stat.stdout)

        stat = _aeron_stat(official, aeron_dir, consumed, "the three messages consumed")
        found = re.search(pattern, stat.stdout, re.M)
        assert stat.returncode == 0, stat.stderr
        lines = stat.stdout.splitlines()
        assert re.match(r".* - Aeron Stat \(CnC v0\.2\.0\), pid \d+, heartbeat age \d+ms$", lines[0])
        labels = [line.split(" - ", 1)[1] for line in lines[2:] if " - " in line]
        assert labels[0] == "Bytes sent" and labels[43] == "Control protocol version"
        assert labels[15].startswith("Errors: version=")
        assert labels[26] == "Conductor max cycle time doing its work in ns: SHARED"
        heartbeats = [lbl for lbl in labels if lbl.startswith("client-heartbeat: ")]
        assert len(heartbeats) == 2, labels
        assert all(re.fullmatch(r"client-heartbeat: id=\d+ name=.* version=\S+ commit=\S+", h) for h in heartbeats)
        sub_pos = [line for line in lines if " - sub-pos: " in line]
        assert len(sub_pos) == 1 and re.search(
            r"^\s*\d+:\s+192 - sub-pos: \d+ " + found["session"] + r" 1001 aeron:ipc @0$", sub_pos[0]), sub_pos

        out, err = publisher.communicate(timeout=20)
        # (the official basic_publisher exits with status 1 even after a clean run, aeronmd or ours)
        assert out.count("yay!") == 3, out + err
        assert "Done sending." in out

        errors = _run([official("ErrorStat"), "-d", aeron_dir])
        assert errors.returncode == 0, errors.stderr
        assert "0 distinct errors observed." in errors.stdout

        loss = _run([official("LossStat"), "-d", aeron_dir])
        assert loss.returncode == 0, loss.stderr
        assert "0 entries read" in loss.stdout or "entries read" in loss.stdout

        # the publisher has closed: within a timer tick or two the driver drains the publication and tells
        # the subscriber its image went away
        lines += procs.wait_for_line(subscriber, "Unavailable image", timeout=20)
        out, err = _stop(subscriber, signal.SIGINT)
        out = "".join(lines) + out
        messages = re.findall(r"<<Hello World! (\d)>>", out)
        assert messages == ["0", "1", "2"], out + err
        assert re.search(r"Available image on aeron:ipc streamId=1001 sessionId=-?\d+ mtu=1408 "
                         r"term-length=65536 from aeron:ipc", out), out
        assert re.search(r"Unavailable image on aeron:ipc streamId=1001 sessionId=-?\d+", out), out
    finally:
        for proc in (publisher, subscriber):
            if proc is not None and proc.returncode is None:
                _stop(proc, signal.SIGKILL)
        _stop(driver)


def test_error_stat_reads_our_error_log(official, shm_dir):
    aeron_dir = str(shm_dir / "driver")
    driver = None
    try:
        driver = _start_driver(aeron_dir)
        # an official client asking for a publication on a bad channel: our driver answers with an error and logs it
        pub = _run([official("basic_publisher"), "-p", aeron_dir, "-c", "aeron:udp?endpoint=localhost:99999",
                    "-s", STREAM, "-m", "1", "-l", "0"], timeout=30)
        assert "yay!" not in pub.stdout
        assert "(-1) invalid channel" in pub.stderr and "port out of range" in pub.stderr
        errors = _run([official("ErrorStat"), "-d", aeron_dir])
        assert errors.returncode == 0, errors.stderr
        assert "1 distinct errors observed." in errors.stdout, errors.stdout
        assert "(-1) invalid channel" in errors.stdout
        assert "port out of range 0..65535: 'endpoint=localhost:99999'" in errors.stdout
    finally:
        _stop(driver)


def test_cping_cpong_over_ipc(official, shm_dir):
    aeron_dir = str(shm_dir / "driver")
    driver = pong = None
    try:
        driver = _start_driver(aeron_dir)
        pong = procs.popen(["stdbuf", "-oL", official("cpong"), "-p", aeron_dir, "-c", "aeron:ipc", "-C", "aeron:ipc"])
        procs.wait_for_line(pong, "Publication channel status 1", timeout=20)
        ping = _run([official("cping"), "-p", aeron_dir, "-c", "aeron:ipc", "-C", "aeron:ipc",
                     "-m", "2000", "-w", "200", "-L", "32"], timeout=60)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        assert re.search(r"Histogram of RTT latencies", ping.stdout, re.I) or "percentile" in ping.stdout.lower(), \
            ping.stdout
    finally:
        _stop(pong)
        _stop(driver)


def test_killed_official_client_is_timed_out_and_its_resources_released(official, shm_dir):
    aeron_dir = str(shm_dir / "driver")
    driver = subscriber = None
    try:
        driver = _start_driver(aeron_dir, "aeron.client.liveness.timeout=1s", "aeron.timer.interval=100ms",
                               "aeron.publication.unblock.timeout=2s")
        subscriber = subprocess.Popen([official("basic_subscriber"), "-p", aeron_dir, "-c", "aeron:ipc", "-s", STREAM],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_client_env())
        _aeron_stat(official, aeron_dir, lambda stat: "client-heartbeat: id=" in stat.stdout, "the client attached")
        subscriber.kill()                                   # kill -9: no CLIENT_CLOSE
        _stop(subscriber)

        def timed_out(stat):
            line_24 = next(line for line in stat.stdout.splitlines() if line.endswith(" - Client liveness timeouts"))
            return line_24.split(" - ")[0].split(":")[1].strip() == "1"

        stat = _aeron_stat(official, aeron_dir, timed_out, "one client liveness timeout")
        assert "client-heartbeat" not in stat.stdout
    finally:
        if subscriber is not None and subscriber.returncode is None:
            _stop(subscriber, signal.SIGKILL)
        _stop(driver)


def test_aeronmd_and_our_driver_each_refuse_the_others_live_directory(official, shm_dir):
    aeron_dir = str(shm_dir / "driver")
    ours = theirs = None
    try:
        ours = _start_driver(aeron_dir)
        env = _client_env()
        env.update(AERON_DIR=aeron_dir, AERON_THREADING_MODE="SHARED", AERON_SHARED_IDLE_STRATEGY="backoff")
        second = subprocess.run([official("aeronmd")], capture_output=True, text=True, timeout=20, env=env)
        assert second.returncode != 0
        assert "Active media driver detected" in second.stdout + second.stderr
        _stop(ours)
        ours = None

        env.update(AERON_DIR_DELETE_ON_SHUTDOWN="1", AERON_COUNTERS_BUFFER_LENGTH="1m")
        theirs = subprocess.Popen([official("aeronmd")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env)

        def running(stat):
            assert theirs.poll() is None, stat.stdout + stat.stderr
            return stat.returncode == 0 and "heartbeat age" in stat.stdout and "Bytes sent" in stat.stdout

        _aeron_stat(official, aeron_dir, running, "aeronmd running", timeout_s=10)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AERON_")}
        env["PYTHONPATH"] = str(PROJECT_ROOT)
        mine = subprocess.run([sys.executable, "-m", "aeron.driver", f"aeron.dir={aeron_dir}",
                               "aeron.counters.buffer.length=1m"], capture_output=True, text=True, timeout=30,
                              env=env)
        assert mine.returncode == 1
        assert "ActiveDriverError: Active media driver detected" in mine.stderr
    finally:
        _stop(ours)
        _stop(theirs)
