# SPDX-License-Identifier: Apache-2.0
"""Type checkers hold the archive client's settings and callbacks: ``mypy --strict`` refuses a misspelt Context
setting (in ``Context(...)``, ``AeronArchive.connect(...)`` and ``aeron.aio.archive.connect(...)``) and a handler of
the wrong shape, and accepts the right ones; as tests/test_typing.py runs mypy, on a user's own file."""
import os
import re
import subprocess
import sys

from tests.conftest import PROJECT_ROOT

GOOD = '''
from aeron import Aeron
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.fragment_assembler import FragmentAssembler
from aeron._core.term_reader import Header
from aeron.archive import AeronArchive, Context, ReplayMerge, RecordingDescriptor
from aeron.archive.client.persistent_subscription import Context as PersistentContext
from aeron.archive.client.persistent_subscription import PersistentSubscription
import aeron.aio.archive


def on_fragment(buf: AtomicBuffer, off: int, n: int, hdr: Header) -> None:
    print(buf.get_bytes(off, n), hdr.position)


def on_controlled(buf: AtomicBuffer, off: int, n: int, hdr: Header) -> int:
    return 1


def use(archive: AeronArchive, merge: ReplayMerge, persistent: PersistentSubscription) -> None:
    ctx = Context(control_request_channel="aeron:udp?endpoint=localhost:8010",
                  control_response_channel="aeron:udp?endpoint=localhost:0", message_timeout_ns=5_000_000_000)
    AeronArchive.connect(control_request_channel="aeron:ipc", control_response_channel="aeron:ipc")
    AeronArchive.connect(ctx)
    merge.poll(on_fragment, 10)
    merge.poll(FragmentAssembler(on_fragment), 10)
    merge.poll(lambda buffer, offset, length, header: None, 10)
    persistent.poll(on_fragment, 10)
    persistent.controlled_poll(on_controlled, 10)
    found: list[RecordingDescriptor] = archive.list_recordings(0, 10)
    count: int = archive.list_recordings(0, 10, found.append)
    print(PersistentContext(recording_id=1, live_channel="aeron:ipc", live_stream_id=1, archive_context=ctx), count)


async def use_async() -> None:
    async with aeron.aio.archive.connect(control_request_channel="aeron:ipc",
                                         control_response_channel="aeron:ipc") as archive:
        print(await archive.list_recordings(0, 10))
'''

BAD = {   # a line that must be refused -> what mypy says of it
    'Context(control_request_chanel="aeron:ipc")': 'Unexpected keyword argument "control_request_chanel"',
    'AeronArchive.connect(control_response_chanel="aeron:ipc")': 'Unexpected keyword argument "control_response_chanel"',
    'aeron.aio.archive.connect(message_timeout="5s")': 'Unexpected keyword argument "message_timeout"',
    'Context(message_timeout_ns="5s")': 'incompatible type "str"',
    'PersistentContext(live_chanel="aeron:ipc")': 'Unexpected keyword argument "live_chanel"',
    'merge.poll(lambda buffer: None, 10)': 'Argument 1 to "poll" of "ReplayMerge" has incompatible type',
    'merge.poll(on_controlled_str, 10)': None,          # a handler may return anything
    'persistent.controlled_poll(on_controlled_str, 10)': 'Argument 1 to "controlled_poll" of "PersistentSubscription"',
}

BAD_HEADER = '''
from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.term_reader import Header
from aeron.archive import AeronArchive, Context, ReplayMerge
from aeron.archive.client.persistent_subscription import Context as PersistentContext
from aeron.archive.client.persistent_subscription import PersistentSubscription
import aeron.aio.archive


def on_controlled_str(buf: AtomicBuffer, off: int, n: int, hdr: Header) -> str:
    return "CONTINUE"


def use(merge: ReplayMerge, persistent: PersistentSubscription) -> None:
'''


def test_mypy_refuses_misspelt_settings_and_wrong_handlers_and_accepts_the_right_ones(tmp_path):
    good = tmp_path / "good_archive_client.py"
    good.write_text(GOOD)
    bad = tmp_path / "bad_archive_client.py"
    lines = list(BAD)
    bad.write_text(BAD_HEADER + "".join(f"    {line}\n" for line in lines))
    first_line = BAD_HEADER.count("\n") + 1
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", os.devnull,
         "--no-error-summary", "--show-error-codes", str(good), str(bad)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert "good_archive_client.py" not in output, output           # the right uses pass
    errors: dict[int, str] = {}
    for match in re.finditer(r"bad_archive_client\.py:(\d+): error: (.*)", output):
        errors[int(match[1])] = errors.get(int(match[1]), "") + match[2]
    for index, line in enumerate(lines):
        expected = BAD[line]
        got = errors.get(first_line + index)
        if expected is None:
            assert got is None, (line, got)
        else:
            assert got is not None and expected in got, (line, got, output)
