# SPDX-License-Identifier: Apache-2.0
"""Every sample keeps the official C samples' short flags and also takes ``--dir`` and ``AERON_DIR`` for the
Aeron directory; a bad channel or a missing driver ends it with one line on stderr and status 1."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess

import pytest

from aeron.samples import basic_publisher, basic_subscriber, demo, ping, pong, rate_subscriber, streaming_publisher
from tests import procs

pytestmark = pytest.mark.timeout(90)

# the official C samples' getopt strings (aeron-samples/src/main/c), without -h (argparse's) and -v
OFFICIAL_FLAGS = {
    basic_publisher: "fclmps", basic_subscriber: "cps", rate_subscriber: "cfps", streaming_publisher: "cLlmps",
    ping: "CcLmpSsw", pong: "CcpSs",
}


def help_text(module) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        module.main(["-h"])
    assert exit_.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("module", list(OFFICIAL_FLAGS), ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_official_short_flags_and_dir(module):
    text = help_text(module)
    for letter in OFFICIAL_FLAGS[module] + "hv":
        assert f"-{letter} " in text or f"-{letter}," in text or f"-{letter}\n" in text, (letter, text)
    assert "-p prefix, --dir prefix" in text and "AERON_DIR" in text


def test_demo_takes_dir_and_aeron_dir():
    text = help_text(demo)
    assert "-d DIR, --dir DIR" in text and "AERON_DIR" in text


def _add_publication(dir_args: list[str], aeron_dir: str | None = None) -> subprocess.CompletedProcess:
    """basic_publisher adding its publication and sending nothing (-m 0: no one-second pause after a message)."""
    env = procs.client_env()
    if aeron_dir is not None:
        env["AERON_DIR"] = aeron_dir
    return subprocess.run(procs.sample("basic_publisher", *dir_args, "-c", "aeron:ipc", "-m", "0"),
                          capture_output=True, text=True, timeout=60, env=env)


def test_prefix_dir_and_aeron_dir_reach_the_same_driver(driver_dir):
    for args, env_dir in ((["-p", driver_dir], None), (["--dir", driver_dir], None), ([], driver_dir)):
        proc = _add_publication(args, env_dir)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert "Publishing to channel aeron:ipc" in proc.stdout
        assert "Publication channel status 18446744073709551615" in proc.stdout      # added by that driver


def test_bad_channel_and_missing_driver_end_with_one_line(driver_dir, shm_dir):
    proc = subprocess.run(procs.sample("basic_subscriber", "--dir", driver_dir, "-c", "aeron:ipc?mtu=100"),
                          capture_output=True, text=True, timeout=60, env=procs.client_env())
    assert proc.returncode == 1
    assert proc.stderr.startswith("InvalidChannelError: mtu must be") and "'mtu=100'" in proc.stderr
    assert "Traceback" not in proc.stderr
    missing = str(shm_dir / "none")
    env = {**procs.client_env(), "AERON_DRIVER_TIMEOUT": "200"}
    proc = subprocess.run(procs.sample("basic_subscriber", "--dir", missing), capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 1
    assert "DriverTimeoutError" in proc.stderr and missing in proc.stderr and "Traceback" not in proc.stderr
    assert f"AERON_DIR={missing} python -m aeron.driver" in proc.stderr


def test_demo_uses_the_driver_running_in_dir(driver_dir):
    proc = subprocess.run([*procs.sample("demo"), "--dir", driver_dir, "--messages", "2000", "--pings", "200",
                           "--timeout", "60"], capture_output=True, text=True, timeout=80, env=procs.client_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"using the media driver already running in {driver_dir}" in proc.stdout
    assert proc.stdout.rstrip().endswith("demo: OK")


def test_demo_launches_its_driver_in_aeron_dir(shm_dir):
    aeron_dir = str(shm_dir / "demo")
    env = {**procs.client_env(), "AERON_DIR": aeron_dir}
    proc = subprocess.run([*procs.sample("demo"), "--messages", "2000", "--pings", "200", "--term-length", "65536",
                           "--timeout", "60"], capture_output=True, text=True, timeout=80, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"media driver (embedded, SHARED, backoff idle) in {aeron_dir}," in proc.stdout
    assert not os.path.exists(aeron_dir)          # removed on exit, as the fresh directory is
