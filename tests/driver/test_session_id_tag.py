# SPDX-License-Identifier: Apache-2.0
"""session-id=tag:<n>: a publication reuses the session id of the network publication tagged n
(tags=<channel tag>,<n>), with its term length and MTU as defaults, over UDP and IPC; an unknown tag is refused
(GENERIC_ERROR, as the C driver). tests/interop/test_session_id_tag_interop.py runs the same tests on `aeronmd`."""
from __future__ import annotations

import pytest

from aeron._core.logbuffer import LogBuffers
from aeron.common.errors import ErrorCode, RegistrationError
from tests.driver.udp_helpers import UDP_DRIVER, free_port, wait_for

pytestmark = [pytest.mark.timeout(60), UDP_DRIVER]


def log_shape(publication):
    with LogBuffers.map_existing(publication.log_file_name) as log:
        return log.term_length, log.mtu_length


def test_publications_reuse_the_session_id_of_the_tagged_publication(client):
    tagged = client.add_exclusive_publication(
        f"aeron:udp?endpoint=127.0.0.1:{free_port()}|tags=1001,77|term-length=128k|mtu=4096", 1001)
    port = free_port()
    sub = client.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", 2002)
    udp = client.add_exclusive_publication(f"aeron:udp?endpoint=127.0.0.1:{port}|session-id=tag:77", 2002)
    ipc = client.add_publication("aeron:ipc?session-id=tag:77", 3003)
    sized = client.add_exclusive_publication(
        f"aeron:udp?endpoint=127.0.0.1:{free_port()}|session-id=tag:77|term-length=64k", 4004)
    assert udp.session_id == ipc.session_id == sized.session_id == tagged.session_id
    assert log_shape(udp) == log_shape(ipc) == (131072, 4096)
    assert log_shape(sized) == (65536, 4096)                       # given parameters win over the tagged ones
    wait_for(lambda: udp.is_connected and sub.image_count == 1, timeout_s=20)
    assert sub.images[0].session_id == tagged.session_id


def test_an_unknown_tag_is_refused(client):
    with pytest.raises(RegistrationError) as info:
        client.add_publication(f"aeron:udp?endpoint=127.0.0.1:{free_port()}|session-id=tag:4242", 1001)
    assert "session-id=tag:4242" in str(info.value) and "network publication" in str(info.value)
    assert info.value.error_code == ErrorCode.GENERIC_ERROR
    with pytest.raises(RegistrationError) as info:
        client.add_publication("aeron:ipc?session-id=tag:4242", 1001)
    assert info.value.error_code == ErrorCode.GENERIC_ERROR
