# SPDX-License-Identifier: Apache-2.0
"""ErrorStat: the driver's distinct error log, as data (`read_errors`) or text (CLI).

    python -m aeron.tools.error_stat [-d|--dir dir] [-t timeout_ms] [-f error_file [-o offset]]
"""
from __future__ import annotations

import datetime
import sys

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.error_log import ErrorLogRecord, format_error_log, read_error_log
from aeron.tools._common import map_cnc, print_report, tool_parser


def read_errors(aeron_dir: str | None = None, timeout_ms: int = 1000,
                since_timestamp_ms: int = 0) -> list[ErrorLogRecord]:
    """Distinct errors recorded by the driver in ``aeron_dir`` (oldest first)."""
    cnc = map_cnc(aeron_dir, timeout_ms)
    section = cnc.error_log_buffer()
    try:
        return list(read_error_log(section, since_timestamp_ms))
    finally:
        section.close()
        cnc.close()


def read_errors_from_file(path: str, offset: int = 0) -> list[ErrorLogRecord]:
    """Distinct errors from a saved error log file (the driver keeps one on restart), from ``offset``."""
    buf = AtomicBuffer.map_file(path)
    try:
        section = AtomicBuffer(buf, offset)
        try:
            return list(read_error_log(section))
        finally:
            section.close()
    finally:
        buf.close()


def main(argv: list[str] | None = None, tz: datetime.tzinfo | None = None) -> int:
    """The ErrorStat command line (``argv`` defaults to ``sys.argv[1:]``); returns the exit status, 1 on error."""
    parser = tool_parser("aeron-error-stat", "aeron.tools.error_stat",
                         "Print the distinct errors a media driver recorded.")
    parser.add_argument("-f", dest="error_file", default=None, help="read a saved distinct error log file")
    parser.add_argument("-o", dest="offset", type=int, default=0, help="offset of the log in that file")
    args = parser.parse_args(argv)

    def report() -> str:
        if args.error_file:
            return format_error_log(read_errors_from_file(args.error_file, args.offset), tz)
        return format_error_log(read_errors(args.aeron_dir, args.timeout_ms), tz)
    return print_report("ErrorStat", report)


if __name__ == "__main__":
    sys.exit(main())
