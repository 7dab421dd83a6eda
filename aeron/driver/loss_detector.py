# SPDX-License-Identifier: Apache-2.0
"""The LossDetector's delay generators: unicast static, multicast randomised ("optimal multicast" backoff). The
detector itself, which finds the first gap between the rebuild position and the high-water mark and decides when to
NAK it (aeron_loss_detector.c), is compiled: aeron._core.loss_detector."""
from __future__ import annotations

import math
import random

from aeron._core.loss_detector import LossDetector

__all__ = ["LossDetector", "StaticDelayGenerator", "OptimalMulticastDelayGenerator"]

DEFAULT_NAK_UNICAST_DELAY_NS = 1_000
DEFAULT_NAK_UNICAST_RETRY_RATIO = 100
DEFAULT_NAK_MULTICAST_MAX_BACKOFF_NS = 10_000_000
DEFAULT_NAK_MULTICAST_GROUP_SIZE = 10


class StaticDelayGenerator:
    def __init__(self, delay_ns: int, retry_delay_ns: int | None = None) -> None:
        self.delay_ns = delay_ns
        self.retry_delay_ns = delay_ns if retry_delay_ns is None else retry_delay_ns

    @property
    def static_delays(self) -> tuple[int, int]:
        """(first, retry): fixed, so that compiled code may use them (aeron._core.loss_detector)."""
        return self.delay_ns, self.retry_delay_ns

    def first(self) -> int:
        return self.delay_ns

    def retry(self) -> int:
        return self.retry_delay_ns


class OptimalMulticastDelayGenerator:
    """delay = (T/λ)·ln(x·(e^λ − 1)·T/λ) with x uniform in [λ/(T(e^λ−1)), λ/T + λ/(T(e^λ−1))], so delays
    spread over [0, T] and few receivers of a group NAK the same loss."""

    def __init__(self, max_backoff_ns: int = DEFAULT_NAK_MULTICAST_MAX_BACKOFF_NS,
                 group_size: int = DEFAULT_NAK_MULTICAST_GROUP_SIZE, rng: random.Random | None = None) -> None:
        self._t = float(max_backoff_ns)
        self._lambda = math.log(group_size) + 1.0
        self._factor = math.exp(self._lambda) - 1.0
        self._rng = rng or random.Random()

    def first(self) -> int:
        lam, t, f = self._lambda, self._t, self._factor
        x = self._rng.uniform(0.0, lam / t) + lam / (t * f)
        return max(0, int((t / lam) * math.log(x * f * t / lam)))

    retry = first
