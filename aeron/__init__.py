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
    from aeron.client import AtomicBuffer as AtomicBuffer
    from aeron.client import AvailableCounterHandler as AvailableCounterHandler
    from aeron.client import AvailableImageHandler as AvailableImageHandler
    from aeron.client import BlockHandler as BlockHandler
    from aeron.client import BufferClaim as BufferClaim
    from aeron.client import ChannelUri as ChannelUri
    from aeron.client import CloseHandler as CloseHandler
    from aeron.client import Context as Context
    from aeron.client import ControlledFragmentAssembler as ControlledFragmentAssembler
    from aeron.client import ControlledFragmentHandler as ControlledFragmentHandler
    from aeron.client import ControlledPollAction as ControlledPollAction
    from aeron.client import Counter as Counter
    from aeron.client import CountersReader as CountersReader
    from aeron.client import ErrorHandler as ErrorHandler
    from aeron.client import ExclusivePublication as ExclusivePublication
    from aeron.client import FragmentAssembler as FragmentAssembler
    from aeron.client import FragmentHandler as FragmentHandler
    from aeron.client import Header as Header
    from aeron.client import Image as Image
    from aeron.client import ImageFragmentAssembler as ImageFragmentAssembler
    from aeron.client import Publication as Publication
    from aeron.client import PublicationErrorFrameHandler as PublicationErrorFrameHandler
    from aeron.client import Subscription as Subscription
    from aeron.client import UnavailableCounterHandler as UnavailableCounterHandler
    from aeron.client import UnavailableImageHandler as UnavailableImageHandler
    from aeron.driver import MediaDriver as MediaDriver

_CLIENT_NAMES = (
    "Aeron", "AtomicBuffer", "AvailableCounterHandler", "AvailableImageHandler", "BlockHandler", "BufferClaim",
    "ChannelUri", "CloseHandler", "Context", "ControlledFragmentAssembler", "ControlledFragmentHandler",
    "ControlledPollAction", "Counter", "CountersReader", "ErrorHandler", "ExclusivePublication",
    "FragmentAssembler", "FragmentHandler", "Header", "Image", "ImageFragmentAssembler", "Publication",
    "PublicationErrorFrameHandler", "Subscription", "UnavailableCounterHandler", "UnavailableImageHandler",
)
__all__ = list(_errors_all) + list(_CLIENT_NAMES) + ["MediaDriver"]


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the names above: with a module __getattr__ they would take any name
    # (``from aeron import Aeronn`` would pass as ``object``).
    def __getattr__(name: str) -> object:
        # Lazy: `import aeron` stays cheap and works before the extensions are built (for the build itself).
        if name in _CLIENT_NAMES:
            import aeron.client as client
            return getattr(client, name)
        if name == "MediaDriver":
            from aeron.driver import MediaDriver
            return MediaDriver
        raise AttributeError(f"module 'aeron' has no attribute {name!r}")
