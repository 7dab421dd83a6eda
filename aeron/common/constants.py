# SPDX-License-Identifier: Apache-2.0
"""Aeron's constants that every layer shares, defined once: ``Aeron.NULL_VALUE`` and Java's ``Integer`` and
``Long`` bounds (the range of the int32 and int64 fields of Aeron's frames, files and counters).

The archive's own (``AeronArchive.NULL_POSITION``, ``NULL_LENGTH``, ...) live in ``aeron.archive.configuration``,
on these.
"""
from __future__ import annotations

__all__ = ["INT32_MAX", "INT32_MIN", "INT64_MAX", "INT64_MIN", "NULL_VALUE"]

NULL_VALUE = -1                 # Aeron.NULL_VALUE: no id, no counter, no session, no position
INT32_MIN = -(1 << 31)          # Integer.MIN_VALUE
INT32_MAX = (1 << 31) - 1       # Integer.MAX_VALUE
INT64_MIN = -(1 << 63)          # Long.MIN_VALUE
INT64_MAX = (1 << 63) - 1       # Long.MAX_VALUE
