# SPDX-License-Identifier: Apache-2.0
"""A SparkSession whose Python workers run this interpreter, with the aeron formats registered.

PySpark starts its Python workers (and the worker that plans a Python data source) with the command in
``PYSPARK_PYTHON`` as the SparkContext saw it when it started, ``python3`` when unset: from a virtualenv
that is the system's Python, which has neither aeron nor PyArrow, and every task fails with ``No module named
'aeron'``. The ``spark.pyspark.python`` setting does not help a session started from Python: only
``spark-submit`` reads it. :func:`configure` therefore sets ``PYSPARK_PYTHON`` (and ``PYSPARK_DRIVER_PYTHON``)
in this process to ``sys.executable`` before the session starts, for a local master (``local``, ``local[N]``,
``local-cluster[...]``, or none given: Spark's default is ``local[*]``), where the workers run on this machine.

On a cluster (YARN, Kubernetes, standalone ``spark://``) the executors run on other machines, where this
interpreter's path means nothing: install ``aeron-py[spark]`` into a Python on every executor and name it with
``PYSPARK_PYTHON`` (or ``spark.pyspark.python`` given to ``spark-submit``); :func:`configure` leaves a cluster's
setting alone and warns when there is none.
"""
from __future__ import annotations

import os
import shlex
import sys
import warnings
from collections.abc import Mapping

from pyspark.sql import SparkSession

__all__ = ["configure", "session"]

PYTHON_VARIABLES = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")


def _is_local_master(master: str | None) -> bool:
    """True for a master whose executors run on this machine: ``local``, ``local[N]``, ``local[N,F]``,
    ``local-cluster[...]``, or None (no master given: a session started from Python defaults to ``local[*]``)."""
    return master is None or master == "local" or master.startswith(("local[", "local-cluster["))


def _builder_master(builder: SparkSession.Builder) -> str | None:
    # As spark-submit picks it: the builder's setting (``master(...)`` is ``config("spark.master", ...)``, kept in
    # ``_options``), then ``--master`` in PYSPARK_SUBMIT_ARGS, then MASTER; one in spark-defaults.conf is not seen.
    options: Mapping[str, object] = getattr(builder, "_options", {})
    if options.get("spark.master") is not None:
        return str(options["spark.master"])
    args = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    for index, arg in enumerate(args):
        if arg == "--master" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--master="):
            return arg.partition("=")[2]
    return os.environ.get("MASTER") or None


def configure(builder: SparkSession.Builder, *, python: str | None = None) -> SparkSession.Builder:
    """Make ``builder``'s session run its Python workers with ``python`` (default: this interpreter,
    ``sys.executable``) when its master is local; returns ``builder``.

    Sets ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` in ``os.environ`` now where they are unset or empty (a
    value you set is yours and stays, unless ``python`` is given), and ``spark.pyspark.python`` /
    ``spark.pyspark.driver.python`` on the builder, which ``spark-submit`` reads.
    Call it before the first session of the process starts: a running SparkContext keeps the workers' Python
    it started with. For a cluster master nothing is set unless ``python`` names the executors' interpreter (see
    the module docstring); without it or ``PYSPARK_PYTHON`` a RuntimeWarning says what to set.
    """
    master = _builder_master(builder)
    if python is not None or _is_local_master(master):
        for name in PYTHON_VARIABLES:
            if python is not None or not os.environ.get(name):
                os.environ[name] = python or sys.executable
        builder = builder.config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        builder = builder.config("spark.pyspark.driver.python", os.environ["PYSPARK_DRIVER_PYTHON"])
    elif not os.environ.get("PYSPARK_PYTHON"):
        warnings.warn(
            f"Spark master {master!r}: the executors start their Python workers with PYSPARK_PYTHON (python3 "
            "when unset); set it to a Python that has aeron-py[spark] installed on every executor, e.g. "
            "PYSPARK_PYTHON=/opt/aeron/venv/bin/python, or pass python= to aeron.spark.configure",
            RuntimeWarning, stacklevel=2)
    return builder


def session(master: str | None = None, app_name: str = "aeron-spark", *,
            config: Mapping[str, str] | None = None) -> SparkSession:
    """The SparkSession of ``master`` (None: Spark's own choice, ``local[*]`` from a plain ``python``, or
    ``spark-submit``'s ``--master``) named ``app_name``, with ``config``: the builder goes through
    :func:`configure` (the Python workers of a local master run this interpreter), then the session starts (or
    the running one is returned) with the ``aeron-archive`` and ``aeron`` formats registered."""
    from aeron.spark import register

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    spark = configure(builder).getOrCreate()
    register(spark)
    return spark
