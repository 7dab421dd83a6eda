# SPDX-License-Identifier: Apache-2.0
"""Aeron for Python: Aeron's transport, archive and cluster with a Cython core and an asyncio face."""
from aeron.common.errors import *  # noqa: F401,F403
from aeron.common.errors import __all__ as _errors_all
from aeron.common.version import __version__  # noqa: F401

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
