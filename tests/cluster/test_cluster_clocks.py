# SPDX-License-Identifier: Apache-2.0
"""The consensus module's clocks: time in their unit, and in nanoseconds as whole units (Aeron's ClusterClock)."""
from __future__ import annotations

import pytest

from aeron.cluster.cluster_clocks import (MicrosecondClusterClock, MillisecondClusterClock, NanosecondClusterClock,
                                          cluster_clock_from_name)
from aeron.cluster.service.cluster_clock import ClusterTimeUnit
from aeron.common.errors import ConfigurationError

EPOCH_NS = 1_796_668_168_195_664_321


@pytest.mark.parametrize("clock_type,unit,time", [
    (MillisecondClusterClock, ClusterTimeUnit.MILLIS, 1_796_668_168_195),
    (MicrosecondClusterClock, ClusterTimeUnit.MICROS, 1_796_668_168_195_664),
    (NanosecondClusterClock, ClusterTimeUnit.NANOS, EPOCH_NS)])
def test_time_in_the_clocks_unit_and_in_whole_units_of_nanoseconds(clock_type, unit, time):
    clock = clock_type(lambda: EPOCH_NS)
    assert clock.time_unit() is unit and clock.time() == time
    per_unit = EPOCH_NS // time
    assert clock.time_nanos() == time * per_unit == clock.convert_to_nanos(time)
    assert clock.convert_to_nanos(-3) == -3 * per_unit
    assert clock.time_millis() == 1_796_668_168_195 and clock.time_micros() == 1_796_668_168_195_664


def test_clocks_by_name():
    assert type(cluster_clock_from_name(None)) is MillisecondClusterClock
    assert type(cluster_clock_from_name("io.aeron.cluster.NanosecondClusterClock")) is NanosecondClusterClock
    assert type(cluster_clock_from_name("MicrosecondClusterClock")) is MicrosecondClusterClock
    with pytest.raises(ConfigurationError):
        cluster_clock_from_name("aeron.common.errors:ConfigurationError")
