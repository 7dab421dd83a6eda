# SPDX-License-Identifier: Apache-2.0
"""Spark data sources (needs the ``spark`` extra: PySpark 4 and PyArrow, and Java 17+).

``aeron-archive`` (:mod:`aeron.spark.source`) reads archive recordings as DataFrames, in batch and streaming.
``register(spark)`` makes the formats known to a session.
"""
from __future__ import annotations

from typing import Any

from aeron.spark.scan import CorruptSegmentError, RecordingRange, plan_ranges, read_range
from aeron.spark.source import AeronArchiveDataSource

__all__ = ["AeronArchiveDataSource", "CorruptSegmentError", "RecordingRange", "plan_ranges", "read_range",
           "register"]


def register(spark: Any) -> None:
    """Register the ``aeron-archive`` format with SparkSession ``spark``."""
    spark.dataSource.register(AeronArchiveDataSource)
