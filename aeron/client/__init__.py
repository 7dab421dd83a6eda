# SPDX-License-Identifier: Apache-2.0
"""The Aeron client: Python control objects over the compiled core."""
from aeron._core.buffer_claim import BufferClaim
from aeron._core.fragment_assembler import (ControlledFragmentAssembler, FragmentAssembler,
                                           ImageControlledFragmentAssembler, ImageFragmentAssembler)
from aeron._core.term_reader import ControlledPollAction, Header
from aeron.client.aeron import Aeron, connect_to_driver
from aeron.client.context import Context
from aeron.client.counter import Counter
from aeron.client.image import Image
from aeron.client.publication import ExclusivePublication, Publication
from aeron.client.subscription import Subscription
from aeron.common.channel_uri import ChannelUri
from aeron.common.paths import default_aeron_dir

__all__ = [
    "Aeron", "BufferClaim", "ChannelUri", "Context", "ControlledFragmentAssembler", "ControlledPollAction",
    "Counter", "ExclusivePublication", "FragmentAssembler", "Header", "Image", "ImageControlledFragmentAssembler",
    "ImageFragmentAssembler", "Publication", "Subscription", "connect_to_driver", "default_aeron_dir",
]
