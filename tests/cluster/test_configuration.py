# SPDX-License-Identifier: Apache-2.0
"""The cluster's Configuration classes: Aeron's property names and defaults, the AERON_CLUSTER_* environment
variables, precedence, parsing, and that the client's configuration loads no server code."""
import subprocess
import sys

import pytest

from aeron.cluster.client.aeron_cluster import SESSION_HEADER_LENGTH
from aeron.cluster.client.aeron_cluster import Configuration as ClientConfiguration
from aeron.cluster.consensus_module import Configuration
from aeron.cluster.service.clustered_service_container import Configuration as ContainerConfiguration
from aeron.common.errors import ConfigurationError

ALL = (Configuration, ContainerConfiguration, ClientConfiguration)


def test_defaults_are_aerons():
    cm = Configuration.resolve(environ={})
    assert (cm["log_channel"], cm["log_stream_id"], cm["consensus_channel"], cm["consensus_stream_id"],
            cm["service_count"], cm["max_concurrent_sessions"], cm["appointed_leader_id"]) == \
        ("aeron:udp?term-length=64m", 100, "aeron:udp", 108, 1, 10, -1)
    assert (cm["session_timeout_ns"], cm["leader_heartbeat_timeout_ns"], cm["leader_heartbeat_interval_ns"],
            cm["startup_canvass_timeout_ns"], cm["election_timeout_ns"], cm["election_status_interval_ns"],
            cm["termination_timeout_ns"], cm["wheel_tick_resolution_ns"], cm["ticks_per_wheel"]) == \
        (10 * 10 ** 9, 10 * 10 ** 9, 200 * 10 ** 6, 60 * 10 ** 9, 10 ** 9, 100 * 10 ** 6, 10 * 10 ** 9,
         8 * 10 ** 6, 128)
    assert (cm["snapshot_channel"], cm["snapshot_stream_id"], cm["error_buffer_length"]) == \
        ("aeron:ipc?alias=snapshot", 107, 1024 * 1024)
    container = ContainerConfiguration.resolve(environ={})
    assert (container["cluster_dir"], container["control_channel"], container["service_stream_id"],
            container["consensus_module_stream_id"], container["snapshot_stream_id"], container["replay_stream_id"],
            container["service_name"], container["is_responding_service"]) == \
        ("aeron-cluster", "aeron:ipc?term-length=128k", 104, 105, 106, 103, "clustered-service", True)
    client = ClientConfiguration.resolve(environ={})
    assert (client["ingress_stream_id"], client["egress_stream_id"], client["message_timeout_ns"],
            client["ingress_channel"]) == (101, 102, 5 * 10 ** 9, None)
    assert (Configuration.PROTOCOL_SEMANTIC_VERSION, ClientConfiguration.PROTOCOL_SEMANTIC_VERSION) == (65536, 768)
    assert SESSION_HEADER_LENGTH == 32 and Configuration.SERVICE_ID == -1
    assert (Configuration.SNAPSHOT_TYPE_ID, ContainerConfiguration.SNAPSHOT_TYPE_ID) == (1, 2)


def test_property_names_are_aerons_and_environment_names_follow_them():
    for config in ALL:
        props = [s.prop for s in config.SETTINGS]
        assert len(props) == len(set(props)), config
        assert all(p.startswith("aeron.cluster.") for p in props)
        for setting in config.SETTINGS:
            assert setting.env == setting.prop.upper().replace(".", "_")
    assert Configuration.setting("log_channel").env == "AERON_CLUSTER_LOG_CHANNEL"
    assert Configuration.LOG_CHANNEL_PROP_NAME == "aeron.cluster.log.channel"
    with pytest.raises(KeyError):
        Configuration.setting("nope")


def test_properties_win_over_the_environment_which_wins_over_defaults():
    environ = {"AERON_CLUSTER_LOG_CHANNEL": "aeron:ipc", "AERON_CLUSTER_SESSION_TIMEOUT": "3s",
               "AERON_CLUSTER_INGRESS_IPC_ALLOWED": "TRUE", "AERON_CLUSTER_ERROR_BUFFER_LENGTH": "2m"}
    cm = Configuration.resolve({"aeron.cluster.log.channel": "aeron:udp?endpoint=x:1"}, environ)
    assert cm["log_channel"] == "aeron:udp?endpoint=x:1"
    assert (cm["session_timeout_ns"], cm["is_ipc_ingress_allowed"], cm["error_buffer_length"]) == \
        (3 * 10 ** 9, True, 2 * 1024 * 1024)
    assert Configuration.resolve(environ={"AERON_CLUSTER_LOG_CHANNEL": ""})["log_channel"] == \
        "aeron:udp?term-length=64m"


@pytest.mark.parametrize("prop,value", [("aeron.cluster.service.count", "two"),
                                        ("aeron.cluster.member.id", "99999999999"),
                                        ("aeron.cluster.ingress.ipc.allowed", "maybe"),
                                        ("aeron.cluster.election.timeout", "soon")])
def test_a_bad_value_names_its_property(prop, value):
    with pytest.raises(ConfigurationError, match=prop.replace(".", r"\.")):
        Configuration.resolve({prop: value}, environ={})


def test_the_client_configuration_loads_no_server_code():
    code = ("import sys; import aeron.cluster.client.aeron_cluster; "
            "server = [m for m in sys.modules if m.startswith(('aeron.cluster.service', 'aeron.cluster.recording', "
            "'aeron.cluster.consensus', 'aeron.archive', 'aeron.driver'))]; print(server)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
