# SPDX-License-Identifier: Apache-2.0
"""Aeron for Python: Aeron's transport, archive and cluster with a Cython core and an asyncio face."""
from aeron.errors import *  # noqa: F401,F403
from aeron.errors import __all__ as _errors_all

__version__ = "0.1.0.dev0"
__all__ = list(_errors_all)
