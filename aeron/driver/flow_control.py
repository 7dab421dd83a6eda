# SPDX-License-Identifier: Apache-2.0
"""Sender flow control strategies (aeron_flow_control.c: unicast and max, aeron_min_flow_control.c: min and tagged;
UnicastFlowControl, MaxMulticastFlowControl, MinMulticastFlowControl, TaggedMulticastFlowControl).

Each strategy turns status messages into the sender limit (snd-lmt): the position up to which the sender may
send. ``on_status_message`` and ``on_idle`` return the new limit; ``has_required_receivers`` gates the
publication's connected state.
"""
from __future__ import annotations

from aeron.common.channel_uri import parse_duration_ns
from aeron.common.constants import INT64_MAX
from aeron.common.errors import ConfigurationError, InvalidChannelError

DEFAULT_RECEIVER_TIMEOUT_NS = 5_000_000_000
DEFAULT_INITIAL_WINDOW = 128 * 1024          # sizes retransmits, whatever the configured window (aeron_flow_control.c)
UNICAST_RRWM, MULTICAST_RRWM = 16, 4
_NO_LIMIT = INT64_MAX


def retransmission_estimate(term_length: int, rrwm: int) -> int:
    """The most one retransmit action covers short of the term's end: the receiver window estimate times rrwm."""
    return min(DEFAULT_INITIAL_WINDOW, term_length // 2) * rrwm


def max_retransmission_length(term_offset: int, resend_length: int, term_length: int, mtu: int,
                              rrwm: int) -> int:
    """How much of a NAKed range one retransmit action covers."""
    estimate = retransmission_estimate(term_length, rrwm)
    to_end = term_length - term_offset
    return min(to_end, resend_length) if to_end < estimate else min(estimate, resend_length)


class FlowControl:
    """Unicast max / multicast max: the limit follows the farthest receiver and never decreases."""

    name = "max"

    def __init__(self, rrwm: int = UNICAST_RRWM, receiver_timeout_ns: int = DEFAULT_RECEIVER_TIMEOUT_NS) -> None:
        self.rrwm = rrwm
        self.receiver_timeout_ns = receiver_timeout_ns

    def on_status_message(self, sender_limit: int, position: int, window: int, receiver_id: int,
                          group_tag: int | None, is_eos: bool, now_ns: int) -> int:
        return max(sender_limit, position + window)

    def on_setup(self, sender_limit: int, now_ns: int) -> None:
        """A SETUP was sent with the limit at ``sender_limit``."""

    def on_trigger_send_setup(self, group_tag: int | None, now_ns: int) -> None:
        """A status message with the SETUP flag arrived (a receiver wants a SETUP)."""

    def on_error(self, receiver_id: int) -> None:
        pass

    def on_idle(self, now_ns: int, sender_limit: int, sender_position: int, is_eos: bool) -> int:
        return sender_limit

    def has_required_receivers(self) -> bool:
        return True

    def receiver_count(self) -> int:
        return -1

    def max_retransmission_length(self, term_offset: int, resend_length: int, term_length: int, mtu: int) -> int:
        return max_retransmission_length(term_offset, resend_length, term_length, mtu, self.rrwm)


class _Receiver:
    __slots__ = ("receiver_id", "last_position", "last_position_plus_window", "time_of_last_sm_ns", "eos")

    def __init__(self, receiver_id: int, position: int, window: int, now_ns: int) -> None:
        self.receiver_id = receiver_id
        self.last_position = position
        self.last_position_plus_window = position + window
        self.time_of_last_sm_ns = now_ns
        self.eos = False


class MinFlowControl(FlowControl):
    """The limit follows the slowest live receiver (receivers time out after ``t:``); with ``g:/N`` it waits
    for N receivers. ``TaggedFlowControl`` counts only receivers whose status messages carry its tag.
    Port of aeron_min_flow_control.c."""

    name = "min"

    def __init__(self, rrwm: int = MULTICAST_RRWM, receiver_timeout_ns: int = DEFAULT_RECEIVER_TIMEOUT_NS,
                 group_tag: int | None = None, group_min_size: int = 0) -> None:
        super().__init__(rrwm, receiver_timeout_ns)
        self.group_tag = group_tag
        self.group_min_size = group_min_size
        self.receivers: dict[int, _Receiver] = {}
        self._last_setup_limit = -1                  # -1: no SETUP hold in force
        self._time_of_last_setup_ns = 0
        self._setup_triggered = False                # a (matching) receiver asked for the next SETUP
        self.receivers_counter = None                # fc-receivers (type 17): how many receivers are tracked

    def attach_receivers_counter(self, counter) -> None:
        """The publication's fc-receivers counter, kept at the number of receivers tracked."""
        self.receivers_counter = counter
        counter.set_ordered(len(self.receivers))

    def _matches(self, group_tag: int | None) -> bool:
        return True

    def _setup_hold(self, now_ns: int) -> int:
        """The limit at the last elicited SETUP while it still holds, else no bound."""
        if self._last_setup_limit != -1:
            if self._time_of_last_setup_ns + self.receiver_timeout_ns - now_ns < 0:
                self._last_setup_limit = -1
            else:
                return self._last_setup_limit
        return _NO_LIMIT

    def on_status_message(self, sender_limit: int, position: int, window: int, receiver_id: int,
                          group_tag: int | None, is_eos: bool, now_ns: int) -> int:
        matches = self._matches(group_tag)
        proposed = position + window
        min_position = self._setup_hold(now_ns)
        existing = self.receivers.get(receiver_id) if matches else None
        if existing is not None:
            existing.eos = is_eos
            existing.last_position = max(existing.last_position, position)    # a reordered SM never goes back
            existing.last_position_plus_window = proposed
            existing.time_of_last_sm_ns = now_ns
        for receiver in self.receivers.values():
            if receiver.last_position_plus_window < min_position:
                min_position = receiver.last_position_plus_window
        if existing is None and matches and not is_eos and (
                not self.receivers or proposed >= min_position - window):
            self.receivers[receiver_id] = _Receiver(receiver_id, position, window, now_ns)
            if self.receivers_counter is not None:
                self.receivers_counter.set_ordered(len(self.receivers))
            min_position = min(min_position, proposed)
            self._last_setup_limit = -1              # the receiver that asked for the SETUP has reported
        if len(self.receivers) < self.group_min_size:
            return sender_limit
        if not self.receivers:
            return max(sender_limit, proposed)
        return max(sender_limit, min_position)

    def on_trigger_send_setup(self, group_tag: int | None, now_ns: int) -> None:
        if not self._setup_triggered:
            self._setup_triggered = self._matches(group_tag)

    def on_setup(self, sender_limit: int, now_ns: int) -> None:
        # only a SETUP elicited by a receiver while others are tracked holds the limit: a late joiner must not be
        # overrun before it reports; SETUPs before the first status message hold nothing
        if self._setup_triggered and self.receivers:
            self._time_of_last_setup_ns = now_ns
            self._last_setup_limit = sender_limit
        self._setup_triggered = False

    def on_error(self, receiver_id: int) -> None:
        receiver = self.receivers.get(receiver_id)
        if receiver is not None:
            receiver.eos = True

    def on_idle(self, now_ns: int, sender_limit: int, sender_position: int, is_eos: bool) -> int:
        min_position = self._setup_hold(now_ns)
        timeout = self.receiver_timeout_ns
        removed = False
        for receiver in list(self.receivers.values()):
            if receiver.eos or receiver.time_of_last_sm_ns + timeout - now_ns < 0:
                del self.receivers[receiver.receiver_id]
                removed = True
            elif receiver.last_position_plus_window < min_position:
                min_position = receiver.last_position_plus_window
        if removed and self.receivers_counter is not None:
            self.receivers_counter.set_ordered(len(self.receivers))
        if len(self.receivers) < self.group_min_size or not self.receivers:
            return sender_limit
        return min_position

    def has_required_receivers(self) -> bool:
        return len(self.receivers) >= self.group_min_size

    def receiver_count(self) -> int:
        return len(self.receivers)


class TaggedFlowControl(MinFlowControl):
    name = "tagged"

    def _matches(self, group_tag: int | None) -> bool:
        return group_tag is not None and group_tag == self.group_tag


def _parse_options(text: str, channel: str) -> dict[str, str]:
    options = {}
    for part in text.split(",")[1:]:
        key, sep, value = part.partition(":")
        if not sep or key not in ("g", "t", "rrwm"):
            raise InvalidChannelError("invalid flow control option", channel, f"fc={text}")
        options[key] = value
    return options


# the C driver's supplier names (AERON_MULTICAST_FLOWCONTROL_SUPPLIER, AERON_UNICAST_FLOWCONTROL_SUPPLIER), as the
# strategy names the fc parameter uses
SUPPLIER_NAMES = {
    "aeron_max_multicast_flow_control_strategy_supplier": "max",
    "aeron_min_flow_control_strategy_supplier": "min",
    "aeron_tagged_flow_control_strategy_supplier": "tagged",
    "aeron_unicast_flow_control_strategy_supplier": "unicast",
}


def strategy_name(supplier: str) -> str:
    """The strategy a configured supplier names: a C supplier name or a strategy name (max, min, tagged, unicast)."""
    name = SUPPLIER_NAMES.get(supplier.strip(), supplier.strip())
    if name not in ("max", "min", "tagged", "unicast"):
        raise ConfigurationError(f"unknown flow control supplier {supplier!r} (max, min, tagged, unicast or one of "
                                 f"{', '.join(SUPPLIER_NAMES)})")
    return name


def flow_control_for(channel: str, fc: str | None, has_group_semantics: bool,
                     default_multicast: str = "max", default_unicast: str = "unicast", *, group_tag: int = -1,
                     group_min_size: int = 0,
                     receiver_timeout_ns: int = DEFAULT_RECEIVER_TIMEOUT_NS) -> FlowControl:
    """The strategy a publication on ``channel`` uses: the configured unicast one unless the channel is multicast
    or MDC, then the ``fc`` parameter or the configured multicast one. The group tag, group minimum size and
    receiver timeout default to the configured ones where ``fc`` does not give them. Raises
    InvalidChannelError."""
    if not has_group_semantics:
        text = strategy_name(default_unicast)
    else:
        text = fc if fc is not None else strategy_name(default_multicast)
    kind = text.split(",")[0]
    if kind == "unicast":
        return FlowControl(UNICAST_RRWM)
    options = _parse_options(text, channel)
    rrwm = MULTICAST_RRWM
    timeout = receiver_timeout_ns
    try:
        if "rrwm" in options:
            rrwm = int(options["rrwm"])
        if "t" in options:
            timeout = parse_duration_ns(options["t"])
    except (ValueError, ConfigurationError):
        raise InvalidChannelError("invalid flow control option value", channel, f"fc={text}") from None
    if kind == "max":
        return FlowControl(rrwm, timeout)
    tag: int = group_tag
    min_size = group_min_size
    group = options.get("g")
    if group is not None:
        tag_text, _, size_text = group.partition("/")
        try:
            tag = int(tag_text) if tag_text else tag
            min_size = int(size_text) if size_text else min_size
        except ValueError:
            raise InvalidChannelError("invalid flow control group", channel, f"fc={text}") from None
    if kind == "min":
        return MinFlowControl(rrwm, timeout, None, min_size)
    if kind == "tagged":
        return TaggedFlowControl(rrwm, timeout, tag, min_size)
    raise InvalidChannelError("unknown flow control strategy (max, min or tagged)", channel, f"fc={text}")
