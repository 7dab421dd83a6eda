# SPDX-License-Identifier: Apache-2.0
"""Against the official C driver: bad values never reach it (the client raises InvalidChannelError first, where
aeronmd would answer GENERIC_ERROR or accept them on a subscription), and what it refuses arrives as a
ChannelRejectedError without its source file and line."""
import pytest

from aeron import Aeron, Context
from aeron.common.errors import ChannelRejectedError, InvalidChannelError, RegistrationError

pytestmark = pytest.mark.interop


def test_channel_errors_against_aeronmd(aeronmd):
    with Aeron.connect(Context(aeronmd, driver_timeout_ms=5000)) as client:
        for channel in ("aeron:ipc?mtu=100", "aeron:ipc?term-length=1000", "aeron:ipc?sparse=maybe",
                        "aeron:udp?endpoint=127.0.0.1:40999|rcv-wnd=abc"):
            for add in (client.add_publication, client.add_subscription):
                with pytest.raises(InvalidChannelError) as info:
                    add(channel, 7)
                assert not isinstance(info.value, RegistrationError)      # never sent
        with pytest.raises(ChannelRejectedError) as info:
            client.add_subscription("aeron:udp?interface=127.0.0.1", 7)
        text = str(info.value)
        assert "must specify endpoint" in text
        assert ".c:" not in text and "aeron_driver" not in text
        assert client.add_subscription("aeron:ipc", 7).stream_id == 7
