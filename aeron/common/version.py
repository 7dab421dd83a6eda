# SPDX-License-Identifier: Apache-2.0
"""The package version, here so that the driver can name it without importing the top package's client names."""

__version__ = "0.1.0.dev0"
