# SPDX-License-Identifier: Apache-2.0
"""AeronStat: the driver's counters from cnc.dat, as data (`read_stat`) or text (`format_stat`, CLI).

    python -m aeron.tools.stat [-d|--dir dir] [-u update_ms] [-t timeout_ms] [-w true|false]
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
import time

from aeron._core.cnc import semantic_version_to_string
from aeron._core.counters import CounterRecord, CountersReader, format_counter_line
from aeron._core.error_log import format_timestamp
from aeron._core.ring_buffer import ManyToOneRingBuffer
from aeron.tools._common import map_cnc, tool_parser

SEPARATOR = "=" * 70


@dataclasses.dataclass(frozen=True)
class StatSnapshot:
    """One reading of a driver's cnc.dat."""

    timestamp_ms: int            # when the reading was taken (epoch ms)
    cnc_version: str             # e.g. "0.2.0"
    pid: int                     # driver pid from the cnc header
    heartbeat_age_ms: int        # now - the driver's last heartbeat in the to-driver ring
    max_counter_id: int          # sets the width of the id column
    counters: tuple[CounterRecord, ...]


def read_stat(aeron_dir: str | None = None, timeout_ms: int = 1000) -> StatSnapshot:
    """Read every allocated counter of the driver in ``aeron_dir``."""
    cnc = map_cnc(aeron_dir, timeout_ms)
    sections = [cnc.to_driver_buffer(), cnc.counters_metadata_buffer(), cnc.counters_values_buffer()]
    ring = ManyToOneRingBuffer(sections[0])
    try:
        reader = CountersReader(sections[1], sections[2])
        now_ms = time.time_ns() // 1_000_000
        return StatSnapshot(
            timestamp_ms=now_ms,
            cnc_version=semantic_version_to_string(cnc.version),
            pid=cnc.pid,
            heartbeat_age_ms=now_ms - ring.consumer_heartbeat_time,
            max_counter_id=reader.max_counter_id,
            counters=tuple(reader.counters()),
        )
    finally:
        # release every view before unmapping: the buffers refuse to close under a live view
        ring.close()
        reader = None
        for section in sections:
            section.close()
        cnc.close()


def format_stat(snapshot: StatSnapshot, tz: datetime.tzinfo | None = None) -> str:
    """AeronStat's text: header line, separator, one line per counter."""
    width = len(str(snapshot.max_counter_id))
    lines = [f"{format_timestamp(snapshot.timestamp_ms, tz)} - Aeron Stat (CnC v{snapshot.cnc_version}), "
             f"pid {snapshot.pid}, heartbeat age {snapshot.heartbeat_age_ms}ms", SEPARATOR]
    lines += [format_counter_line(c.counter_id, c.value, c.label, width) for c in snapshot.counters]
    return "\n".join(lines) + "\n"


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def main(argv: list[str] | None = None) -> int:
    """The AeronStat command line (``argv`` defaults to ``sys.argv[1:]``); returns the exit status, 1 on error."""
    parser = tool_parser("aeron-stat", "aeron.tools.stat", "Print Aeron counters.")
    parser.add_argument("-u", dest="update_ms", type=int, default=1000, help="update period in ms (watch mode)")
    parser.add_argument("-w", dest="watch", type=_bool, default=True, help="false: print once and exit")
    args = parser.parse_args(argv)
    try:
        while True:
            text = format_stat(read_stat(args.aeron_dir, args.timeout_ms))
            if not args.watch:
                sys.stdout.write(text)
                return 0
            sys.stdout.write("\033[H\033[2J" + text)
            sys.stdout.flush()
            time.sleep(args.update_ms / 1000.0)
    except KeyboardInterrupt:
        return 0
    except Exception as e:  # a tool reports and exits non-zero, as AeronStat does
        print(f"AeronStat: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
