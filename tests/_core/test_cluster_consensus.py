# SPDX-License-Identifier: Apache-2.0
"""ConsensusPositionDispatcher: AppendPosition and CommitPosition read in place into the agent's handlers, every other
message (another template, schema, block length or version, a short one, a plain buffer) to the Python handler."""
import struct

import pytest

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.cluster_consensus import ConsensusPositionDispatcher
from aeron.common.errors import OutOfBoundsError


class Agent:
    def __init__(self):
        self.calls = []

    def on_append_position(self, *args):
        self.calls.append(("append", *args))

    def on_commit_position(self, *args):
        self.calls.append(("commit", *args))


def append_position(block_length: int = 21, version: int = 8, schema_id: int = 111) -> bytes:
    return struct.pack("<HHHHqqiB", block_length, 54, schema_id, version, 3, 4096, 2, 1)


def commit_position(template_id: int = 55) -> bytes:
    return struct.pack("<HHHHqqi", 20, template_id, 111, 8, -1, 1 << 40, 0)


def buffer_with(message: bytes, offset: int = 16) -> AtomicBuffer:
    buffer = AtomicBuffer(bytearray(256))
    buffer.put_bytes(offset, message)
    return buffer


def test_append_and_commit_positions_go_to_the_agent():
    agent, others = Agent(), []
    dispatcher = ConsensusPositionDispatcher(agent, lambda *a: others.append(a))
    message = append_position()
    dispatcher(buffer_with(message), 16, len(message), "header")
    message = commit_position()
    dispatcher(buffer_with(message), 16, len(message), "header")
    assert agent.calls == [("append", 3, 4096, 2, 1), ("commit", -1, 1 << 40, 0)] and others == []


def test_every_other_message_goes_to_the_python_handler():
    agent, others = Agent(), []
    dispatcher = ConsensusPositionDispatcher(agent, lambda buffer, offset, length, header: others.append(length))
    messages = [append_position(block_length=20)[:28],      # an older member's block, without the flags
                append_position(version=7),                 # flags not in that version: decoded in Python
                append_position(schema_id=101),             # another schema: the adapter's error
                commit_position(template_id=56),            # another template (CatchupPosition)
                append_position()[:28]]                     # too short for its block
    for message in messages:
        dispatcher(buffer_with(message), 16, len(message), None)
    dispatcher(bytearray(commit_position()), 0, 28, None)   # not an AtomicBuffer
    assert agent.calls == [] and others == [28, 29, 29, 28, 28, 28]


def test_a_range_outside_the_buffer_is_refused():
    dispatcher = ConsensusPositionDispatcher(Agent(), print)
    with pytest.raises(OutOfBoundsError):
        dispatcher(buffer_with(commit_position()), 250, 28, None)
