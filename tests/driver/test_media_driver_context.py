# SPDX-License-Identifier: Apache-2.0
"""MediaDriver.Context: Aeron property names, AERON_* environment names, value syntax, validation."""
import pytest

from aeron.driver import Context, ThreadingMode
from aeron.common.errors import ConfigurationError


def test_defaults_match_the_c_driver():
    ctx = Context(environ={})
    assert ctx.threading_mode is ThreadingMode.SHARED_NETWORK      # ours, by measurement (docs/performance.md)
    assert ctx.term_buffer_length == 16 * 1024 * 1024
    assert ctx.ipc_term_buffer_length == 64 * 1024 * 1024
    assert ctx.mtu_length == 1408
    assert ctx.client_liveness_timeout_ns == 10_000_000_000
    assert ctx.publication_unblock_timeout_ns == 15_000_000_000
    assert ctx.publication_linger_timeout_ns == 5_000_000_000
    assert ctx.timer_interval_ns == 1_000_000_000
    assert ctx.counters_buffer_length == 8 * 1024 * 1024
    assert ctx.error_buffer_length == 4 * 1024 * 1024
    assert ctx.conductor_buffer_length == 1024 * 1024 + 768
    assert ctx.clients_buffer_length == 1024 * 1024 + 128
    assert ctx.driver_timeout_ms == 10_000
    assert ctx.dir_delete_on_start is False and ctx.dir_delete_on_shutdown is False
    assert ctx.driver_termination_validator == "deny"
    assert ctx.conductor_idle_strategy == "wakeup" and ctx.shared_idle_strategy == "wakeup"
    assert ctx.resolved_dir().startswith("/dev/shm/aeron-")
    ctx.conclude()


def test_environment_properties_and_attributes_in_order_of_precedence():
    env = {"AERON_DIR": "/dev/shm/from-env", "AERON_THREADING_MODE": "SHARED",
           "AERON_IPC_TERM_BUFFER_LENGTH": "128k", "AERON_CLIENT_LIVENESS_TIMEOUT": "5s",
           "AERON_DIR_DELETE_ON_START": "1", "UNRELATED": "x"}
    ctx = Context(["aeron.dir=/dev/shm/from-props", "-Daeron.mtu.length=4k", "AERON_TIMER_INTERVAL=100ms"],
                  environ=env, publication_linger_timeout_ns=7)
    assert ctx.aeron_dir == "/dev/shm/from-props"
    assert ctx.threading_mode is ThreadingMode.SHARED
    assert ctx.ipc_term_buffer_length == 131072
    assert ctx.client_liveness_timeout_ns == 5_000_000_000
    assert ctx.dir_delete_on_start is True
    assert ctx.mtu_length == 4096
    assert ctx.timer_interval_ns == 100_000_000
    assert ctx.publication_linger_timeout_ns == 7
    props = ctx.as_properties()
    assert props["aeron.threading.mode"] == "SHARED" and props["aeron.dir"] == "/dev/shm/from-props"


@pytest.mark.parametrize("text, value", [("on", True), ("TRUE", True), ("1", True), ("off", False), ("false", False),
                                         ("0", False)])
def test_boolean_syntax(text, value):
    assert Context({"aeron.dir.delete.on.shutdown": text}, environ={}).dir_delete_on_shutdown is value


def test_the_wakeup_data_spin_is_ours_in_durations():
    assert Context(environ={}).wakeup_data_spin_ns == 200_000
    assert Context({"aeron.driver.wakeup.data.spin": "0us"}, environ={}).wakeup_data_spin_ns == 0
    assert Context(environ={"AERON_DRIVER_WAKEUP_DATA_SPIN": "50us"}).wakeup_data_spin_ns == 50_000


def test_threading_mode_and_idle_strategy_names():
    ctx = Context({"aeron.threading.mode": "invoker", "aeron.conductor.idle.strategy": "sleep-ns"}, environ={})
    assert ctx.threading_mode is ThreadingMode.INVOKER
    assert ctx.idle_strategy_name() == "sleep-ns"
    ctx.threading_mode = "SHARED_NETWORK"
    assert ctx.threading_mode is ThreadingMode.SHARED_NETWORK


@pytest.mark.parametrize("props, named", [
    ({"aeron.term.buffer.length": "lots"}, "aeron.term.buffer.length"),
    ({"AERON_IPC_TERM_BUFFER_LENGTH": "12q"}, "aeron.ipc.term.buffer.length"),
    ({"aeron.threading.mode": "PARALLEL"}, "aeron.threading.mode"),
    ({"aeron.client.liveness.timeout": "10 minutes"}, "aeron.client.liveness.timeout"),
    ({"aeron.dir.delete.on.start": "perhaps"}, "aeron.dir.delete.on.start"),
    ({"aeron.shared.idle.strategy": "nap"}, "aeron.shared.idle.strategy"),
    ({"aeron.driver.termination.validator": "maybe"}, "aeron.driver.termination.validator"),
    ({"aeron.driver.timeout": "ten"}, "aeron.driver.timeout"),
    ({"aeron.driver.wakeup.data.spin": "briefly"}, "aeron.driver.wakeup.data.spin"),
])
def test_invalid_values_name_the_property(props, named):
    with pytest.raises(ConfigurationError, match=named.replace(".", r"\.")):
        Context(props, environ={})


def test_invalid_environment_value_names_the_property():
    with pytest.raises(ConfigurationError, match="AERON_MTU_LENGTH"):
        Context(environ={"AERON_MTU_LENGTH": "big"})


def test_unknown_property_and_malformed_pairs():
    with pytest.raises(ConfigurationError, match="aeron.no.such"):
        Context(["aeron.no.such=1"], environ={})
    with pytest.raises(ConfigurationError, match="key=value"):
        Context(["aeron.dir"], environ={})
    with pytest.raises(TypeError, match="no_such_attribute"):      # a keyword per setting: a type checker sees it
        Context(environ={}, no_such_attribute=1)                     # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match="aeron.term.buffer.length"):
        Context(environ={}).term_buffer_length = "x"


@pytest.mark.parametrize("attrs, message", [
    ({"term_buffer_length": 100_000}, "aeron.term.buffer.length"),
    ({"ipc_term_buffer_length": 32 * 1024}, "aeron.ipc.term.buffer.length"),
    ({"mtu_length": 1000}, "aeron.mtu.length"),
    ({"file_page_size": 1000}, "aeron.file.page.size"),
    ({"publication_unblock_timeout_ns": 10_000_000_000}, "aeron.publication.unblock.timeout"),
    ({"client_liveness_timeout_ns": 1_000_000_000}, "aeron.client.liveness.timeout"),
    ({"counters_buffer_length": 1000}, "aeron.counters.buffer.length"),
    ({"conductor_buffer_length": 1000 + 768}, "aeron.conductor.buffer.length"),
    ({"clients_buffer_length": 3000}, "aeron.clients.buffer.length"),
])
def test_start_up_validation(attrs, message):
    with pytest.raises(ConfigurationError, match=message.replace(".", r"\.")):
        Context(environ={}, **attrs).conclude()


def test_every_setting_and_hook_is_a_keyword_of_its_own():
    import inspect

    parameters = inspect.signature(Context).parameters
    keywords = {name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY} - {"environ"}
    assert keywords == {s.attr for s in Context.SETTINGS} | set(Context.EXTRA_ATTRS)
    assert all(parameters[name].default is None for name in keywords)
    assert not [p for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    # None keeps what the environment gave
    assert Context(environ={"AERON_MTU_LENGTH": "4096"}, mtu_length=None).mtu_length == 4096
    assert Context(environ={"AERON_MTU_LENGTH": "4096"}, mtu_length=8192).mtu_length == 8192
