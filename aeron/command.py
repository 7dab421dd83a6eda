# SPDX-License-Identifier: Apache-2.0
"""Compatibility shim: moved to :mod:`aeron.common.command` (docs/layers.md); old imports keep working."""
from aeron.common import command as _home
from aeron.common.command import *  # noqa: F401,F403
from aeron.common.command import __all__  # noqa: F401


def __getattr__(name: str) -> object:
    # names outside __all__ (constants, helpers) resolve as they did before the move
    return getattr(_home, name)
