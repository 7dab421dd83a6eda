# SPDX-License-Identifier: Apache-2.0
"""Compatibility shim: moved to :mod:`aeron.common.channel_uri` (docs/layers.md); old imports keep working."""
from aeron.common import channel_uri as _home
from aeron.common.channel_uri import *  # noqa: F401,F403
from aeron.common.channel_uri import __all__  # noqa: F401


def __getattr__(name: str) -> object:
    # names outside __all__ (constants, helpers) resolve as they did before the move
    return getattr(_home, name)
