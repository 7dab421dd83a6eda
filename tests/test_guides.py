# SPDX-License-Identifier: Apache-2.0
"""The guides' Python examples run as written and print what the page says they print.

Every ```python block of docs/archive.md is run here, in this process (each example launches its own
ArchivingMediaDriver in a temporary directory: ``tempfile`` is pointed at a fresh directory under /dev/shm), and a
new block fails ``test_every_archive_example_is_run`` until it is given its expected output. Ports: an example
names the ports it binds in assignments whose names end in ``PORT`` (``CONTROL_PORT = 8010``); each number there
is replaced with a free port on 127.0.0.1 before the example runs, as a user would pick ports that are free.
docs/spark.md's examples are run by tests/spark/test_guide.py.
"""
from __future__ import annotations

import contextlib
import io
import re
import tempfile

import pytest

from tests.conftest import PROJECT_ROOT
from tests.support import free_port

EXAMPLE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
PORT_LINE = re.compile(r"^([A-Z_, ]*PORTS?) = ([0-9, ]+)(.*)$", re.M)


def examples(page: str) -> list[tuple[str, str]]:
    """(the heading above it, code) of every ```python block of ``page``."""
    text = (PROJECT_ROOT / page).read_text()
    found = []
    for match in EXAMPLE.finditer(text):
        heading = re.findall(r"^#+ (.*)$", text[:match.start()], re.M)[-1]
        found.append((heading, match[1]))
    return found


def with_free_ports(code: str) -> str:
    """``code`` with every number of a ``..._PORT = n`` assignment replaced by a free port."""
    return PORT_LINE.sub(lambda m: f"{m[1]} = " + re.sub(r"\d+", lambda _: str(free_port()), m[2]) + m[3], code)


def run(code: str, where: str, tmp: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(tempfile, "tempdir", tmp)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(with_free_ports(code), where, "exec"), {"__name__": "__main__"})
    return out.getvalue().splitlines()


ARCHIVE_OUTPUT = {
    "Recording and replaying": ["hello", "archive"],
    "An archive on the network": [re.compile(r"0 1001 6400 aeron:udp\?endpoint=localhost:\d+")],
    "On asyncio": ["event 0", "event 1", "event 2"],
    "Replication": ["64000 64000"],          # 1,000 frames of 64 bytes: a 32-byte header, 7 to 9 of payload, aligned
    "From history to the live stream": ["True", "True"],      # ReplayMerge's, then PersistentSubscription's
    "ArchiveTool": ["0 0 1600", "['OK']"],
    "Storage, authorisation and crash recovery": ["[]", "True"],
}


def test_every_archive_example_is_run():
    assert sorted({heading for heading, _ in examples("docs/archive.md")}) == sorted(ARCHIVE_OUTPUT)


def test_the_port_lines_are_rewritten():
    code = 'CONTROL_PORT = 8010  # x\nSOURCE_PORT, DESTINATION_PORT = 8010, 8011\nCHANNEL = "a:8010"\n'
    rewritten = with_free_ports(code).splitlines()
    assert re.fullmatch(r"CONTROL_PORT = \d+  # x", rewritten[0]) and int(rewritten[0].split()[2]) != 8010
    # (compared as numbers: a free port may well contain the digits 801, as 48013 did)
    ports = re.fullmatch(r"SOURCE_PORT, DESTINATION_PORT = (\d+), (\d+)", rewritten[1])
    assert ports and {int(ports[1]), int(ports[2])}.isdisjoint({8010, 8011})
    assert rewritten[2] == 'CHANNEL = "a:8010"'


@pytest.mark.timeout(120)
@pytest.mark.parametrize("heading", sorted(ARCHIVE_OUTPUT))
def test_archive_guide_examples_run(heading, shm_dir, monkeypatch):
    printed: list[str] = []
    for index, (where, code) in enumerate(examples("docs/archive.md")):
        if where == heading:
            printed += run(code, f"docs/archive.md ({heading}, example {index})", str(shm_dir), monkeypatch)
    expected = ARCHIVE_OUTPUT[heading]
    assert len(printed) == len(expected), printed
    for line, want in zip(printed, expected):
        assert want.fullmatch(line) if isinstance(want, re.Pattern) else line == want, (printed, expected)
