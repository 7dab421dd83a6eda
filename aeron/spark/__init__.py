# SPDX-License-Identifier: Apache-2.0
"""Spark data sources (needs the ``spark`` extra: PySpark 4, PyArrow and NumPy, and Java 17+).

``aeron-archive`` (:mod:`aeron.spark.source`) reads archive recordings as DataFrames, in batch and streaming;
``aeron`` (:mod:`aeron.spark.sink`) publishes a DataFrame's rows on a channel.
``session()`` starts a local SparkSession whose Python workers run this interpreter, with both formats
registered; ``configure(builder)`` does the same for a builder of yours; ``register(spark)`` makes the formats
known to a session started otherwise (:mod:`aeron.spark.session` says what a cluster needs).
"""
from __future__ import annotations

from pyspark.sql import SparkSession

from aeron.spark.scan import (
    CorruptSegmentError,
    RecordingRange,
    plan_ranges,
    read_range,
)
from aeron.spark.session import configure, session
from aeron.spark.sink import AeronSinkDataSource
from aeron.spark.source import AeronArchiveDataSource, with_decoder

__all__ = ["AeronArchiveDataSource", "AeronSinkDataSource", "CorruptSegmentError", "RecordingRange", "configure",
           "plan_ranges", "read_range", "register", "session", "with_decoder"]


def register(spark: SparkSession) -> None:
    """Register the ``aeron-archive`` and ``aeron`` formats with SparkSession ``spark``."""
    spark.dataSource.register(AeronArchiveDataSource)
    spark.dataSource.register(AeronSinkDataSource)
