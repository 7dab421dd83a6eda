# SPDX-License-Identifier: Apache-2.0
"""Operator tools: AeronStat, ErrorStat, LossStat, StreamStat. Each is a function returning data and a CLI."""
