# SPDX-License-Identifier: Apache-2.0
from aeron._core.counters import AtomicCounter
from aeron._core.data_dispatcher import ImageReceiveState
from aeron._core.logbuffer import LogBuffers
from aeron._core.loss_detector import LossDetector
from aeron._core.loss_report import LossReport
from aeron._core.term_scanner import LogCleaner
from aeron._core.udp_transport import UdpTransport

TRACK_NOTHING: int
TRACK_SENT: int
TRACK_HAND_BACK: int
HAND_BACK_NOTHING: int
HAND_BACK_TRACK: int
HAND_BACK_STATUS: int
LIFECYCLE_ACTIVE: int
LIFECYCLE_DRAINING: int
LIFECYCLE_LINGER: int
LIFECYCLE_DONE: int

class RebuildPass:
    next_sm_position: int
    next_sm_window: int
    time_of_last_sm_ns: int
    sm_pending: bool
    lifecycle: int
    rejected: bool
    static_window: bool
    timer_slack_ns: int
    tracked_inserts: int
    tracked_hwm: int
    tracked_min_sub: int
    tracked_max_sub: int
    def __init__(self, state: ImageReceiveState, loss: LossDetector, cleaner: LogCleaner, log: LogBuffers,
                 rcv_pos: AtomicCounter, naks_sent: AtomicCounter, nak_messages_sent: AtomicCounter,
                 status_messages_sent: AtomicCounter, bytes_sent: AtomicCounter, receiver_id: int,
                 group_tag: int | None, window: int, join_position: int, liveness_timeout_ns: int,
                 sm_timeout_ns: int) -> None: ...
    @property
    def state(self) -> ImageReceiveState: ...
    @property
    def loss(self) -> LossDetector: ...
    @property
    def armed(self) -> bool: ...
    @property
    def gaps_seen(self) -> int: ...
    @property
    def send_errno(self) -> int: ...
    @property
    def sm_timeout_ns(self) -> int: ...
    @property
    def liveness_timeout_ns(self) -> int: ...
    @property
    def hand_back(self) -> int: ...
    @property
    def disarms(self) -> int: ...
    @property
    def deadline(self) -> int: ...
    @property
    def status_message_threshold(self) -> int: ...
    def aim(self, transport: UdpTransport, address: tuple, report: LossReport | None, report_entry: int,
            connection_floor_ns: int) -> None: ...
    def disarm(self) -> None: ...
    def track(self, min_sub: int, max_sub: int, now_ns: int, on_interval: bool = True) -> int: ...
    def take_send_errno(self) -> int: ...
    def set_positions(self, positions: list[AtomicCounter]) -> None: ...
    def set_tracked(self, inserts: int, hwm: int, min_sub: int, max_sub: int) -> None: ...
    def run_cycle(self, now_ns: int) -> int: ...

class ImageTracking:
    passes: list[RebuildPass]
    def __init__(self) -> None: ...
    @property
    def hand_backs(self) -> int: ...
    def track(self, now_ns: int) -> int: ...
