# SPDX-License-Identifier: Apache-2.0
"""The asyncio face raises the same InvalidChannelError for a bad channel as the sync client."""
import pytest

from aeron.common.errors import ChannelRejectedError, InvalidChannelError


async def test_bad_channels_raise_invalid_channel_error(client):
    for add in (client.add_publication, client.add_exclusive_publication, client.add_subscription):
        with pytest.raises(InvalidChannelError, match="'mtu=100'"):
            await add("aeron:ipc?mtu=100", 3)
    with pytest.raises(ChannelRejectedError, match="subscriptions only"):
        await client.add_publication("aeron-spy:aeron:ipc", 3)
