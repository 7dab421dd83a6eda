# SPDX-License-Identifier: Apache-2.0
"""The package version, here so that the driver can name it without importing the top package's client names.
The one place it is written: pyproject.toml reads it (dynamic version), and ``--version`` on every command
prints VERSION_TEXT."""

#: The distribution's name on the package index ("aeron" there is an unrelated project); the import name is aeron.
DISTRIBUTION = "aeron-py"
__version__ = "0.1.0.dev0"
VERSION_TEXT = f"{DISTRIBUTION} {__version__}"
