# SPDX-License-Identifier: Apache-2.0
"""Operator tools: AeronStat, ErrorStat, LossStat. Each is a function returning data and a CLI."""
