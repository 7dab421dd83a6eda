# SPDX-License-Identifier: Apache-2.0
"""Aeron Archive: record, replay and replicate streams, file- and protocol-compatible with official Aeron."""
