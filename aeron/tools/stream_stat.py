# SPDX-License-Identifier: Apache-2.0
"""StreamStat: the driver's stream positions grouped by stream, as data (`read_streams`) or text (CLI), in the
format of Aeron's Java StreamStat sample (there is no C one).

    python -m aeron.tools.stream_stat [-d|--dir dir] [-t timeout_ms]

One line per (session id, stream id, channel), sorted that way:
``sessionId=<s> streamId=<t> channel=<channel> : <name>:<registrationId>:<value> ...`` with the positions in
counter id order, the channel as the longest one any of its counter labels shows (sub-pos without ``@join``).
"""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable

from aeron._core import counters as ctr
from aeron._core.counters import CounterRecord
from aeron.tools._common import print_report, tool_parser
from aeron.tools.stat import read_stat

STREAM_COUNTER_TYPES = frozenset((
    ctr.DRIVER_PUBLISHER_LIMIT_TYPE_ID, ctr.DRIVER_SENDER_POSITION_TYPE_ID, ctr.DRIVER_RECEIVER_HWM_TYPE_ID,
    ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID, ctr.DRIVER_RECEIVER_POS_TYPE_ID, ctr.DRIVER_SENDER_LIMIT_TYPE_ID,
    ctr.DRIVER_PUBLISHER_POS_TYPE_ID, ctr.DRIVER_SENDER_BPE_TYPE_ID, ctr.DRIVER_SENDER_NAKS_RECEIVED_TYPE_ID,
    ctr.DRIVER_RECEIVER_NAKS_SENT_TYPE_ID))


@dataclasses.dataclass(frozen=True)
class StreamPosition:
    """One position counter of a stream: its name, the registration id it belongs to, its value."""
    name: str                    # the label up to ':' (pub-pos (concurrent), sub-pos, rcv-hwm, ...)
    registration_id: int
    value: int
    type_id: int = -1            # the counter's type (ctr.DRIVER_*_TYPE_ID)
    counter_id: int = -1


@dataclasses.dataclass
class Stream:
    """The position counters of one (session id, stream id, channel)."""
    session_id: int
    stream_id: int
    channel: str                 # the channel in the counter keys (truncated to 92 chars there)
    full_channel: str            # the longest channel seen in the labels
    positions: list[StreamPosition]


def _label_channel(type_id: int, label: str, channel: str) -> str:
    start = label.find("aeron:")
    if start < 0:
        return channel
    if type_id == ctr.DRIVER_SUBSCRIBER_POSITION_TYPE_ID:
        join = label.rfind(" @")
        if join > start:
            return label[start:join]
    return label[start:]


def read_streams(aeron_dir: str | None = None, timeout_ms: int = 1000) -> list[Stream]:
    """The stream counters of the driver in ``aeron_dir`` grouped by stream."""
    return group_streams(read_stat(aeron_dir, timeout_ms).counters)


def group_streams(counters: Iterable[CounterRecord]) -> list[Stream]:
    """The stream counters among ``counters`` grouped by (session id, stream id, channel), sorted that way."""
    streams: dict[tuple[int, int, str], Stream] = {}
    for record in counters:
        if record.type_id not in STREAM_COUNTER_TYPES:
            continue
        registration_id, session_id, stream_id, channel = ctr.stream_counter_key_decode(record.key)
        key = (session_id, stream_id, channel)
        stream = streams.get(key)
        if stream is None:
            stream = streams[key] = Stream(session_id, stream_id, channel, channel, [])
        stream.positions.append(StreamPosition(record.label.split(":", 1)[0], registration_id, record.value,
                                               record.type_id, record.counter_id))
        full = _label_channel(record.type_id, record.label, channel)
        if len(full) > len(stream.full_channel):
            stream.full_channel = full
    return [streams[k] for k in sorted(streams)]


def format_streams(streams: list[Stream]) -> str:
    """StreamStat's text: one line per stream, as the Java sample prints it."""
    lines = []
    for s in streams:
        positions = "".join(f" {p.name}:{p.registration_id}:{p.value}" for p in s.positions)
        lines.append(f"sessionId={s.session_id} streamId={s.stream_id} channel={s.full_channel} :{positions}")
    return "".join(line + "\n" for line in lines)


def main(argv: list[str] | None = None) -> int:
    """The StreamStat command line (``argv`` defaults to ``sys.argv[1:]``); returns the exit status, 1 on error."""
    args = tool_parser("aeron-stream-stat", "aeron.tools.stream_stat",
                       "Print the positions of every stream of a media driver.").parse_args(argv)
    return print_report("StreamStat", lambda: format_streams(read_streams(args.aeron_dir, args.timeout_ms)))


if __name__ == "__main__":
    sys.exit(main())
