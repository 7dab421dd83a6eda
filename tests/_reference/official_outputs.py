# SPDX-License-Identifier: Apache-2.0
"""Outputs printed by the official C tools for inputs our tests build, so unit tests can compare
without the binaries (tests/interop checks the same inputs against the live tools)."""

# Written into a distinct error log in this order, with these clock readings (epoch ms).
ERROR_LOG_RECORDS = [("invalid channel: aeron:bogus", 1), ("invalid channel: aeron:bogus", 1),
                     ("unknown command type 99", 6)]
ERROR_LOG_CLOCK_MS = [1_795_334_955_512, 1_795_334_955_600, 1_795_334_956_000]

# The official C ErrorStat's output for that log (TZ=UTC).
ERROR_STAT_LINES = [
    "***",
    "2 observations from 2026-11-22 08:09:15.512+0000 to 2026-11-22 08:09:15.600+0000 for:",
    " (1) invalid channel: aeron:bogus",
    "***",
    "1 observations from 2026-11-22 08:09:16.000+0000 to 2026-11-22 08:09:16.000+0000 for:",
    " (6) unknown command type 99",
    "",
    "2 distinct errors observed.",
]


def write_reference_errors(log_factory):
    """Record ERROR_LOG_RECORDS into ``log_factory(clock)`` (a DistinctErrorLog constructor)."""
    log = log_factory(iter(ERROR_LOG_CLOCK_MS).__next__)
    for text, code in ERROR_LOG_RECORDS:
        log.record(text, error_code=code)
    return log
