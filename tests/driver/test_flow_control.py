# SPDX-License-Identifier: Apache-2.0
"""Flow control strategies as pure logic (aeron_flow_control.c, aeron_min_flow_control.c): which limit each
status message, idle cycle, SETUP and ERR frame yields, the retransmit length formula and URI option parsing."""
from __future__ import annotations

import pytest

from aeron.driver.flow_control import (FlowControl, MinFlowControl, TaggedFlowControl, flow_control_for,
                                       max_retransmission_length)
from aeron.common.errors import ConfigurationError, InvalidChannelError
from aeron.driver import Context

KIB, MIB = 1024, 1024 * 1024
S = 1_000_000_000
W = 32 * KIB                     # receiver window of a 64 KiB term


# -- max retransmission length (aeron_flow_control.c: rwnd uses the 128 KiB default window, not the configured one)

@pytest.mark.parametrize("term_offset, resend, term_length, rrwm, expected", [
    (0, 4 * MIB, 16 * MIB, 16, 2 * MIB),                 # est = 128 KiB * 16 caps a long NAK
    (0, 4 * MIB, 16 * MIB, 4, 512 * KIB),                # multicast multiple
    (16 * MIB - 1024, 4096, 16 * MIB, 16, 1024),         # to_end < est: capped at the end of the term
    (16 * MIB - 1024, 512, 16 * MIB, 16, 512),
    (0, 1408, 16 * MIB, 16, 1408),                       # est > resend: the resend length itself
    (4096, 64 * KIB, 64 * KIB, 16, 60 * KIB),            # rwnd = 32 KiB, est 512 KiB > to_end 60 KiB
    (1024, 100, 64 * KIB, 4, 100),
])
def test_max_retransmission_length_follows_the_reference_formula(term_offset, resend, term_length, rrwm, expected):
    assert max_retransmission_length(term_offset, resend, term_length, 1408, rrwm) == expected


def test_strategies_use_their_rrwm_for_the_retransmission_length():
    assert FlowControl().max_retransmission_length(0, 4 * MIB, 16 * MIB, 1408) == 2 * MIB
    assert MinFlowControl().max_retransmission_length(0, 4 * MIB, 16 * MIB, 1408) == 512 * KIB
    assert FlowControl(rrwm=2).max_retransmission_length(0, 4 * MIB, 16 * MIB, 1408) == 256 * KIB


# -- max ------------------------------------------------------------------------------------------------------------

def test_max_follows_the_farthest_receiver_and_never_decreases():
    fc = FlowControl()
    assert fc.on_status_message(0, 0, W, 1, None, False, 0) == W
    assert fc.on_status_message(W, 4096, W, 2, None, False, 1) == 4096 + W
    assert fc.on_status_message(4096 + W, 0, W, 1, None, False, 2) == 4096 + W      # a slower SM does not lower it
    assert fc.on_status_message(4096 + W, 0, W, 1, None, True, 3) == 4096 + W       # nor an EOS one
    assert fc.on_idle(10 * S, 4096 + W, 0, False) == 4096 + W
    assert fc.has_required_receivers() and fc.receiver_count() == -1


# -- min ------------------------------------------------------------------------------------------------------------

def test_min_follows_the_slowest_receiver():
    fc = MinFlowControl()
    limit = fc.on_status_message(0, 8192, W, 1, None, False, 0)
    assert limit == 8192 + W                                 # first receiver
    limit = fc.on_status_message(limit, 4096, W, 2, None, False, 1)
    assert limit == 8192 + W                                 # slower receiver: min is lower but limit never drops
    limit = fc.on_status_message(limit, 65536, W, 1, None, False, 2)
    assert limit == 8192 + W                                 # the slow one (4096 + W) holds it
    limit = fc.on_status_message(limit, 65536, W, 2, None, False, 3)
    assert limit == 65536 + W                                # both moved: the min moved
    assert fc.receiver_count() == 2
    assert fc.on_idle(4, limit, 65536, False) == 65536 + W


def test_min_with_no_receivers_takes_the_proposed_limit_and_idle_keeps_the_limit():
    fc = MinFlowControl()
    assert fc.on_idle(0, 1234, 0, False) == 1234             # none tracked: unchanged
    # an EOS status message from an unknown receiver adds nobody: limit = max(snd_lmt, pos + window)
    assert fc.on_status_message(100, 0, W, 7, None, True, 0) == W
    assert fc.on_status_message(5 * W, 0, W, 7, None, True, 0) == 5 * W
    assert fc.receiver_count() == 0


def test_min_does_not_add_a_receiver_more_than_a_window_behind_the_current_minimum():
    fc = MinFlowControl()
    limit = fc.on_status_message(0, 10 * W, W, 1, None, False, 0)
    assert limit == 11 * W
    # 0 + W < 11 W - W: too far behind to be tracked (it would stall the group), limit unchanged
    assert fc.on_status_message(limit, 0, W, 2, None, False, 1) == 11 * W
    assert fc.receiver_count() == 1
    # exactly at current_min - window: tracked
    assert fc.on_status_message(limit, 9 * W, W, 3, None, False, 2) == 11 * W
    assert fc.receiver_count() == 2
    assert fc.on_idle(3, 11 * W, 10 * W, False) == 10 * W   # idle returns the min itself


def test_min_position_of_a_tracked_receiver_never_moves_backwards_but_its_window_end_does():
    fc = MinFlowControl()
    fc.on_status_message(0, 8192, W, 1, None, False, 0)
    fc.on_status_message(8192 + W, 4096, W, 1, None, False, 1)      # a reordered, older SM
    receiver = fc.receivers[1]
    assert receiver.last_position == 8192
    assert receiver.last_position_plus_window == 4096 + W


def test_min_receivers_time_out_and_eos_or_error_removes_them_on_idle():
    fc = MinFlowControl(receiver_timeout_ns=2 * S)
    fc.on_status_message(0, 0, W, 1, None, False, 0)
    fc.on_status_message(W, 4096, W, 2, None, False, 0)
    fc.on_status_message(W, 8192, W, 3, None, False, 1 * S)
    assert fc.receiver_count() == 3
    fc.on_status_message(W, 4096, W, 2, None, True, 1 * S)         # receiver 2 says EOS
    fc.on_error(3)                                                  # receiver 3 sent an ERR frame
    assert fc.receiver_count() == 3                                 # removed only by the idle sweep
    assert fc.on_idle(1 * S, W, 0, False) == W                      # receiver 1 left: W
    assert sorted(fc.receivers) == [1]
    assert fc.on_idle(2 * S, W, 0, False) == W                      # exactly at the timeout: still live
    assert fc.on_idle(2 * S + 1, 5 * W, 0, False) == 5 * W          # timed out: none left, limit unchanged
    assert fc.receiver_count() == 0


def test_min_group_size_waits_for_enough_receivers():
    fc = MinFlowControl(group_min_size=2)
    assert not fc.has_required_receivers()
    assert fc.on_status_message(0, 0, W, 1, None, False, 0) == 0          # one of two: limit unchanged
    assert not fc.has_required_receivers()
    assert fc.on_idle(1, 0, 0, False) == 0
    assert fc.on_status_message(0, 4096, W, 2, None, False, 2) == W       # two: min of both
    assert fc.has_required_receivers()
    fc.on_status_message(W, 0, W, 1, None, True, 3)
    assert fc.on_idle(4, W, 0, False) == W                                # back to one: unchanged
    assert not fc.has_required_receivers()


def test_min_initial_setups_do_not_hold_the_limit():
    # SETUPs sent before any receiver answered were not elicited: the first SM opens the window at once
    fc = MinFlowControl()
    fc.on_setup(0, 0)
    fc.on_setup(0, 100_000_000)
    assert fc.on_status_message(0, 0, W, 1, None, False, 150_000_000) == W
    assert fc.on_idle(160_000_000, W, 0, False) == W


def test_min_holds_the_limit_after_an_elicited_setup_until_the_late_receiver_reports():
    fc = MinFlowControl(receiver_timeout_ns=2 * S)
    limit = fc.on_status_message(0, 0, W, 1, None, False, 0)
    assert limit == W
    fc.on_trigger_send_setup(None, 1)          # a late joiner asks for a SETUP
    fc.on_setup(limit, 2)                      # ... which the sender sends with the limit at W
    # the existing receiver moves on, but the limit stays at W: the late joiner has not reported yet
    assert fc.on_status_message(limit, 4 * W, W, 1, None, False, 3) == W
    assert fc.on_idle(4, limit, 4 * W, False) == W
    # the late joiner reports: it is added and the hold ends (this status message was still bounded by it, as in
    # the C driver); from then on the min of both rules
    assert fc.on_status_message(limit, 3 * W, W, 2, None, False, 5) == W
    assert fc.receiver_count() == 2
    assert fc.on_idle(6, W, 4 * W, False) == 4 * W
    assert fc.on_status_message(4 * W, 5 * W, W, 2, None, False, 7) == 5 * W


def test_min_setup_hold_expires_after_the_receiver_timeout():
    fc = MinFlowControl(receiver_timeout_ns=2 * S)
    limit = fc.on_status_message(0, 0, W, 1, None, False, 0)
    fc.on_trigger_send_setup(None, 1)
    fc.on_setup(limit, 10)
    assert fc.on_status_message(limit, 4 * W, W, 1, None, False, 2 * S) == W
    assert fc.on_status_message(limit, 4 * W, W, 1, None, False, 2 * S + 11) == 5 * W


def test_min_setup_without_receivers_holds_nothing():
    fc = MinFlowControl()
    fc.on_trigger_send_setup(None, 0)
    fc.on_setup(0, 1)
    assert fc.on_status_message(0, 0, W, 1, None, False, 2) == W


# -- tagged ---------------------------------------------------------------------------------------------------------

def test_tagged_tracks_only_receivers_carrying_the_tag():
    fc = TaggedFlowControl(group_tag=100)
    # untagged / wrong tag: no state, but with nobody tracked the proposed limit is still returned, as in C
    assert fc.on_status_message(0, 0, W, 1, None, False, 0) == W
    assert fc.on_status_message(W, 0, W, 2, 99, False, 0) == W
    assert fc.receiver_count() == 0
    assert fc.on_status_message(W, 4096, W, 3, 100, False, 1) == 4096 + W
    assert fc.receiver_count() == 1
    # an untagged receiver far ahead does not move the limit past the tagged one
    assert fc.on_status_message(4096 + W, 10 * W, W, 1, None, False, 2) == 4096 + W
    assert fc.on_idle(3, 4096 + W, 0, False) == 4096 + W


def test_tagged_hold_only_for_setups_elicited_by_a_tagged_receiver():
    fc = TaggedFlowControl(group_tag=100)
    limit = fc.on_status_message(0, 0, W, 1, 100, False, 0)
    fc.on_trigger_send_setup(None, 1)          # untagged receiver asked: no hold
    fc.on_setup(limit, 2)
    assert fc.on_status_message(limit, 4 * W, W, 1, 100, False, 3) == 5 * W
    fc.on_trigger_send_setup(100, 4)           # tagged receiver asked: hold
    fc.on_setup(5 * W, 5)
    assert fc.on_status_message(5 * W, 8 * W, W, 1, 100, False, 6) == 5 * W


def test_tagged_with_group_size():
    fc = TaggedFlowControl(group_tag=7, group_min_size=2)
    assert fc.on_status_message(0, 0, W, 1, 7, False, 0) == 0
    assert fc.on_status_message(0, 0, W, 2, 8, False, 0) == 0
    assert not fc.has_required_receivers()
    assert fc.on_status_message(0, 0, W, 3, 7, False, 0) == W
    assert fc.has_required_receivers()


# -- selection and URI options ----------------------------------------------------------------------------------------

def test_unicast_channels_always_use_unicast_max():
    fc = flow_control_for("aeron:udp?endpoint=h:1|fc=min", "min", has_group_semantics=False)
    assert type(fc) is FlowControl and fc.rrwm == 16


def test_group_channels_default_to_the_configured_multicast_strategy():
    fc = flow_control_for("c", None, True)
    assert type(fc) is FlowControl and fc.rrwm == 4
    assert type(flow_control_for("c", None, True, default_multicast="min")) is MinFlowControl


@pytest.mark.parametrize("fc_text, cls, timeout_ns, min_size, tag, rrwm", [
    ("max", FlowControl, 5 * S, None, None, 4),
    ("max,rrwm:8", FlowControl, 5 * S, None, None, 8),
    ("min", MinFlowControl, 5 * S, 0, None, 4),
    ("min,t:2s", MinFlowControl, 2 * S, 0, None, 4),
    ("min,g:/3", MinFlowControl, 5 * S, 3, None, 4),
    ("min,g:/3,t:250ms,rrwm:2", MinFlowControl, 250_000_000, 3, None, 2),
    ("tagged,g:100", TaggedFlowControl, 5 * S, 0, 100, 4),
    ("tagged,g:100/2,t:500ms", TaggedFlowControl, 500_000_000, 2, 100, 4),
    ("tagged", TaggedFlowControl, 5 * S, 0, -1, 4),                 # default group tag −1 (aeron_driver_context.c)
])
def test_fc_uri_options(fc_text, cls, timeout_ns, min_size, tag, rrwm):
    fc = flow_control_for("aeron:udp?endpoint=224.0.1.1:4000|fc=" + fc_text, fc_text, True)
    assert type(fc) is cls
    assert fc.receiver_timeout_ns == timeout_ns and fc.rrwm == rrwm
    if min_size is not None:
        assert fc.group_min_size == min_size
    if cls is TaggedFlowControl:
        assert fc.group_tag == tag
    assert fc.has_required_receivers() == (not min_size)


@pytest.mark.parametrize("fc_text", ["bogus", "min,x:1", "min,g:abc", "min,g:/x", "min,t:soon", "max,rrwm:z",
                                     "tagged,g", "min,"])
def test_bad_fc_options_raise_naming_the_parameter(fc_text):
    with pytest.raises(InvalidChannelError) as info:
        flow_control_for("aeron:udp?endpoint=224.0.1.1:4000", fc_text, True)
    assert "fc=" in str(info.value)


# -- configured suppliers (AERON_MULTICAST_FLOWCONTROL_SUPPLIER, AERON_UNICAST_FLOWCONTROL_SUPPLIER) and defaults ----

@pytest.mark.parametrize("supplier, cls", [
    ("aeron_max_multicast_flow_control_strategy_supplier", FlowControl),
    ("aeron_min_flow_control_strategy_supplier", MinFlowControl),
    ("aeron_tagged_flow_control_strategy_supplier", TaggedFlowControl),
    ("min", MinFlowControl),
])
def test_the_c_supplier_names_choose_the_multicast_strategy(supplier, cls):
    assert type(flow_control_for("c", None, True, default_multicast=supplier)) is cls
    ctx = Context(environ={"AERON_MULTICAST_FLOWCONTROL_SUPPLIER": supplier})
    assert type(flow_control_for("c", None, True, ctx.multicast_flow_control_strategy)) is cls


def test_the_unicast_supplier_chooses_the_unicast_strategy_and_fc_does_not():
    ctx = Context(environ={"AERON_UNICAST_FLOWCONTROL_SUPPLIER": "aeron_min_flow_control_strategy_supplier"})
    fc = flow_control_for("aeron:udp?endpoint=h:1|fc=max", "max", False,
                          default_unicast=ctx.unicast_flow_control_strategy)
    assert type(fc) is MinFlowControl
    assert type(flow_control_for("c", None, False)) is FlowControl


def test_an_unknown_supplier_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="aeron_fastest_flow_control_strategy_supplier"):
        Context(environ={"AERON_MULTICAST_FLOWCONTROL_SUPPLIER": "aeron_fastest_flow_control_strategy_supplier"})


def test_the_configured_group_tag_size_and_timeout_apply_where_fc_gives_none():
    ctx = Context(environ={"AERON_FLOW_CONTROL_GROUP_TAG": "2020", "AERON_FLOW_CONTROL_GROUP_MIN_SIZE": "2",
                           "AERON_FLOW_CONTROL_RECEIVER_TIMEOUT": "2s", "AERON_RECEIVER_GROUP_TAG": "7"})
    assert ctx.receiver_group_tag == 7 and Context(environ={}).receiver_group_tag is None
    settings = dict(group_tag=ctx.flow_control_group_tag, group_min_size=ctx.flow_control_group_min_size,
                    receiver_timeout_ns=ctx.flow_control_receiver_timeout_ns)
    fc = flow_control_for("c", "tagged", True, **settings)
    assert (fc.group_tag, fc.group_min_size, fc.receiver_timeout_ns) == (2020, 2, 2 * S)
    fc = flow_control_for("c", "tagged,g:123/1,t:1s", True, **settings)
    assert (fc.group_tag, fc.group_min_size, fc.receiver_timeout_ns) == (123, 1, S)


class _Counter:
    def __init__(self):
        self.value = None

    def set_ordered(self, value):
        self.value = value


def test_min_keeps_its_receivers_counter_at_the_number_tracked():
    fc = MinFlowControl(receiver_timeout_ns=S)
    counter = _Counter()
    fc.attach_receivers_counter(counter)
    assert counter.value == 0
    fc.on_status_message(0, 0, W, 1, None, False, 0)
    fc.on_status_message(0, 0, W, 2, None, False, 0)
    assert counter.value == 2
    fc.on_status_message(0, 0, W, 1, None, False, S // 2)
    fc.on_idle(S + S // 4, W, 0, False)                 # receiver 2 timed out, 1 is still live
    assert counter.value == 1
