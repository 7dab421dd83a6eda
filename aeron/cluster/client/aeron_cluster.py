# SPDX-License-Identifier: Apache-2.0
"""``AeronCluster.Configuration``: the client's protocol version and ``aeron.cluster.*`` properties (ingress and
egress channels and streams, ingress endpoints, message timeout, client name), each with its default, its
``AERON_CLUSTER_*`` environment variable and its parser (``Configuration.SETTINGS``), and the session header
length every application message is prefixed with."""
from __future__ import annotations

from aeron._core.codecs.cluster import MESSAGE_HEADER_LENGTH, SessionMessageHeaderEncoder
from aeron.common.settings import Setting, SettingsTable, parse_duration_ns, parse_int

__all__ = ["Configuration", "SESSION_HEADER_LENGTH"]

# the SessionMessageHeader (message header + block) before an application message's payload
SESSION_HEADER_LENGTH = MESSAGE_HEADER_LENGTH + SessionMessageHeaderEncoder.BLOCK_LENGTH


class Configuration(SettingsTable):
    """``AeronCluster.Configuration``: the client's constants and properties."""

    # the client-to-cluster protocol, sent in SessionConnectRequest; a cluster accepts major version 0 only
    PROTOCOL_MAJOR_VERSION = 0
    PROTOCOL_MINOR_VERSION = 3
    PROTOCOL_PATCH_VERSION = 0
    PROTOCOL_SEMANTIC_VERSION = (PROTOCOL_MAJOR_VERSION << 16) | (PROTOCOL_MINOR_VERSION << 8) | PROTOCOL_PATCH_VERSION

    MESSAGE_TIMEOUT_PROP_NAME = "aeron.cluster.message.timeout"
    MESSAGE_TIMEOUT_DEFAULT_NS = 5_000_000_000
    INGRESS_ENDPOINTS_PROP_NAME = "aeron.cluster.ingress.endpoints"
    INGRESS_ENDPOINTS_DEFAULT: str | None = None
    INGRESS_CHANNEL_PROP_NAME = "aeron.cluster.ingress.channel"
    INGRESS_CHANNEL_DEFAULT: str | None = None
    INGRESS_STREAM_ID_PROP_NAME = "aeron.cluster.ingress.stream.id"
    INGRESS_STREAM_ID_DEFAULT = 101
    EGRESS_CHANNEL_PROP_NAME = "aeron.cluster.egress.channel"
    EGRESS_CHANNEL_DEFAULT: str | None = None
    EGRESS_STREAM_ID_PROP_NAME = "aeron.cluster.egress.stream.id"
    EGRESS_STREAM_ID_DEFAULT = 102
    CLIENT_NAME_PROP_NAME = "aeron.cluster.client.name"
    CLIENT_NAME_DEFAULT = ""

    SETTINGS: tuple[Setting, ...] = (
        Setting("message_timeout_ns", MESSAGE_TIMEOUT_PROP_NAME, MESSAGE_TIMEOUT_DEFAULT_NS, parse_duration_ns),
        Setting("ingress_endpoints", INGRESS_ENDPOINTS_PROP_NAME, INGRESS_ENDPOINTS_DEFAULT),
        Setting("ingress_channel", INGRESS_CHANNEL_PROP_NAME, INGRESS_CHANNEL_DEFAULT),
        Setting("ingress_stream_id", INGRESS_STREAM_ID_PROP_NAME, INGRESS_STREAM_ID_DEFAULT, parse_int),
        Setting("egress_channel", EGRESS_CHANNEL_PROP_NAME, EGRESS_CHANNEL_DEFAULT),
        Setting("egress_stream_id", EGRESS_STREAM_ID_PROP_NAME, EGRESS_STREAM_ID_DEFAULT, parse_int),
        Setting("client_name", CLIENT_NAME_PROP_NAME, CLIENT_NAME_DEFAULT),
    )
