# SPDX-License-Identifier: Apache-2.0
"""Compiled kernels: private; see each .pxd for its C-level API."""
