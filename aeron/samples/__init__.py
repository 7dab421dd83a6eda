# SPDX-License-Identifier: Apache-2.0
"""Runnable samples (python -m aeron.samples.<name>)."""
