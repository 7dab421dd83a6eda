# SPDX-License-Identifier: Apache-2.0
"""Spark data sources (needs the ``spark`` extra: PySpark 4 and PyArrow, and Java 17+).

``aeron-archive`` (:mod:`aeron.spark.source`) reads archive recordings as DataFrames, in batch and streaming;
``aeron`` (:mod:`aeron.spark.sink`) publishes a DataFrame's rows on a channel.
``register(spark)`` makes the formats known to a session.
"""
from __future__ import annotations

from typing import Any

from aeron.spark.scan import (
    CorruptSegmentError,
    RecordingRange,
    plan_ranges,
    read_range,
)
from aeron.spark.sink import AeronSinkDataSource
from aeron.spark.source import AeronArchiveDataSource, with_decoder

__all__ = ["AeronArchiveDataSource", "AeronSinkDataSource", "CorruptSegmentError", "RecordingRange", "plan_ranges",
           "read_range", "register", "with_decoder"]


def register(spark: Any) -> None:
    """Register the ``aeron-archive`` and ``aeron`` formats with SparkSession ``spark``."""
    spark.dataSource.register(AeronArchiveDataSource)
    spark.dataSource.register(AeronSinkDataSource)
