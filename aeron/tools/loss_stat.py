# SPDX-License-Identifier: Apache-2.0
"""LossStat: the receiver's loss report (loss-report.dat), as data (`read_loss`) or text (CLI).

    python -m aeron.tools.loss_stat [-d|--dir dir] [-t timeout_ms]
"""
from __future__ import annotations

import datetime
import os
import sys

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.loss_report import LossReportEntry, format_loss_report, read_loss_report
from aeron.tools._common import LOSS_REPORT_FILE, default_aeron_dir, map_cnc, print_report, tool_parser


def read_loss(aeron_dir: str | None = None, timeout_ms: int = 1000) -> list[LossReportEntry]:
    """Loss entries of the driver in ``aeron_dir``. Like the C tool, a live cnc.dat must be there."""
    aeron_dir = aeron_dir or default_aeron_dir()
    map_cnc(aeron_dir, timeout_ms).close()
    buf = AtomicBuffer.map_file(os.path.join(aeron_dir, LOSS_REPORT_FILE))
    try:
        return list(read_loss_report(buf))
    finally:
        buf.close()


def main(argv: list[str] | None = None, tz: datetime.tzinfo | None = None) -> int:
    """The LossStat command line (``argv`` defaults to ``sys.argv[1:]``); returns the exit status, 1 on error."""
    args = tool_parser("aeron-loss-stat", "aeron.tools.loss_stat",
                       "Print the loss a media driver's receiver observed.").parse_args(argv)
    return print_report("LossStat", lambda: format_loss_report(read_loss(args.aeron_dir, args.timeout_ms), tz))


if __name__ == "__main__":
    sys.exit(main())
