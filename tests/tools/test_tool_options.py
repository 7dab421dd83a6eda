# SPDX-License-Identifier: Apache-2.0
"""Every tool keeps the official tools' short flags and also takes ``--dir`` and ``AERON_DIR``; a directory
without a driver, or a cnc.dat that cannot be mapped, is reported with the directory and exit status 1."""
from __future__ import annotations

import contextlib
import io
import os
import re

import pytest

from aeron import Aeron, Context, MediaDriver
from aeron.driver import Context as DriverContext
from aeron.tools import error_stat, loss_stat, stat, stream_stat

TOOLS = {"stat": stat, "error_stat": error_stat, "loss_stat": loss_stat, "stream_stat": stream_stat}
# the official C tools' getopt strings (AeronStat, ErrorStat, LossStat); StreamStat is Java's, with -d and -t
OFFICIAL_FLAGS = {"stat": "dutwh", "error_stat": "dtfoh", "loss_stat": "dth", "stream_stat": "dth"}


@pytest.fixture(scope="module")
def running():
    """A driver with one IPC stream, so every tool has something to print."""
    ctx = DriverContext(environ={}, threading_mode="SHARED", ipc_term_buffer_length=65536,
                        counters_buffer_length=1024 * 1024)
    with MediaDriver.launch_embedded(ctx) as driver:
        with Aeron.connect(Context(driver.aeron_dir)) as client:
            sub = client.add_subscription("aeron:ipc", 42)
            pub = client.add_publication("aeron:ipc", 42)
            yield driver.aeron_dir
            pub.close()
            sub.close()


def run(tool, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = TOOLS[tool].main(argv)
        except SystemExit as exit_:
            rc = int(exit_.code or 0)
    return rc, out.getvalue(), err.getvalue()


def _comparable(tool: str, text: str) -> str:
    if tool == "stat":
        # the header line has the time and heartbeat age, and counters such as the conductor's cycle count move
        # between runs: the same directory shows the same counters by id and label
        body = text.split("\n", 2)[2]
        return re.sub(r"^(\s*\d+:)\s+[\d,]+ - ", r"\1 ", body, flags=re.MULTILINE)
    return text


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_short_flag_long_flag_and_environment_name_the_same_directory(tool, running, monkeypatch):
    extra = ["-w", "false"] if tool == "stat" else []
    monkeypatch.delenv("AERON_DIR", raising=False)
    rc_short, short, _ = run(tool, ["-d", running, "-t", "500", *extra])
    rc_long, long, _ = run(tool, ["--dir", running, "-t", "500", *extra])
    monkeypatch.setenv("AERON_DIR", running)
    rc_env, env, _ = run(tool, ["-t", "500", *extra])
    assert rc_short == rc_long == rc_env == 0
    assert _comparable(tool, short) == _comparable(tool, long) == _comparable(tool, env)
    if tool in ("stat", "stream_stat"):
        assert "streamId=42" in short or " 42 aeron:ipc" in short, short


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_official_short_flags_are_kept(tool):
    rc, out, _ = run(tool, ["-h"])
    assert rc == 0
    for letter in OFFICIAL_FLAGS[tool]:
        assert f"-{letter}" in out, (tool, letter, out)
    assert "--dir" in out and "AERON_DIR" in out


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_no_driver_is_reported_with_the_directory(tool, shm_dir, monkeypatch):
    monkeypatch.delenv("AERON_DIR", raising=False)
    missing = str(shm_dir / "none")
    rc, _, err = run(tool, ["--dir", missing, "-t", "50"] + (["-w", "false"] if tool == "stat" else []))
    assert rc == 1
    assert missing in err and "python -m aeron.driver" in err


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_unmappable_cnc_file_is_reported_at_once(tool, shm_dir):
    (shm_dir / "cnc.dat").mkdir()
    rc, _, err = run(tool, ["--dir", str(shm_dir), "-t", "60000"] + (["-w", "false"] if tool == "stat" else []))
    assert rc == 1
    assert "is a directory" in err and os.path.join(str(shm_dir), "cnc.dat") in err
