# SPDX-License-Identifier: Apache-2.0
"""Aeron for Python: Aeron's transport, archive and cluster with a Cython core and an asyncio face."""
from typing import TYPE_CHECKING

from aeron.common.errors import *  # noqa: F401,F403
from aeron.common.errors import __all__ as _errors_all
from aeron.common.version import __version__ as __version__

if TYPE_CHECKING:
    # What __getattr__ returns, spelt out for type checkers (``X as X``: an explicit re-export, as mypy --strict
    # wants); at run time none of it is imported until first used.
    from aeron.client import Aeron as Aeron
    from aeron.client import BufferClaim as BufferClaim
    from aeron.client import ChannelUri as ChannelUri
    from aeron.client import Context as Context
    from aeron.client import ControlledFragmentAssembler as ControlledFragmentAssembler
    from aeron.client import ControlledPollAction as ControlledPollAction
    from aeron.client import Counter as Counter
    from aeron.client import ExclusivePublication as ExclusivePublication
    from aeron.client import FragmentAssembler as FragmentAssembler
    from aeron.client import Header as Header
    from aeron.client import Image as Image
    from aeron.client import ImageFragmentAssembler as ImageFragmentAssembler
    from aeron.client import Publication as Publication
    from aeron.client import Subscription as Subscription
    from aeron.driver import MediaDriver as MediaDriver

_CLIENT_NAMES = (
    "Aeron", "BufferClaim", "ChannelUri", "Context", "ControlledFragmentAssembler", "ControlledPollAction",
    "Counter", "ExclusivePublication", "FragmentAssembler", "Header", "Image", "ImageFragmentAssembler",
    "Publication", "Subscription",
)
__all__ = list(_errors_all) + list(_CLIENT_NAMES) + ["MediaDriver"]


def __getattr__(name: str) -> object:
    # Lazy: `import aeron` stays cheap and works before the extensions are built (for the build itself).
    if name in _CLIENT_NAMES:
        import aeron.client as client
        return getattr(client, name)
    if name == "MediaDriver":
        from aeron.driver import MediaDriver
        return MediaDriver
    raise AttributeError(f"module 'aeron' has no attribute {name!r}")
