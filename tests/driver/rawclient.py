# SPDX-License-Identifier: Apache-2.0
"""A raw client for driver tests: commands written straight into the to-driver ring (aeron.common.command
encoders), responses read from the to-clients broadcast buffer, counters read from cnc.dat."""
from __future__ import annotations

import os
import time

from aeron.common import command as cmd
from aeron._core.broadcast import BroadcastReceiver, CopyBroadcastReceiver
from aeron._core.cnc import CncFile
from aeron._core.counters import CountersReader
from aeron._core.ring_buffer import ManyToOneRingBuffer



class RawClient:
    def __init__(self, aeron_dir: str, timeout_s: float = 5.0) -> None:
        path = os.path.join(aeron_dir, "cnc.dat")
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.cnc = CncFile.map_existing(path)
                if self.cnc.version != 0:
                    break
                self.cnc.close()
            except Exception:       # noqa: BLE001 - not there yet
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise TimeoutError("cnc.dat not ready")
            time.sleep(0.01)
        self._sections = [self.cnc.to_driver_buffer(), self.cnc.to_clients_buffer(),
                          self.cnc.counters_metadata_buffer(), self.cnc.counters_values_buffer(),
                          self.cnc.error_log_buffer()]
        self.ring = ManyToOneRingBuffer(self._sections[0])
        self.receiver = CopyBroadcastReceiver(BroadcastReceiver(self._sections[1]))
        self.counters = CountersReader(self._sections[2], self._sections[3])
        self.error_log_buffer = self._sections[4]
        self.client_id = self.ring.next_correlation_id()
        self.received: list[tuple[int, object]] = []
        self.heartbeat = True               # poll() keeps our heartbeat counter fresh, as a live client does
        self._heartbeat_offset = -1

    def next_id(self) -> int:
        return self.ring.next_correlation_id()

    def send(self, type_id: int, payload: bytes) -> None:
        assert self.ring.write(type_id, payload), "to-driver ring full"

    def keepalive(self) -> None:
        if not self.heartbeat:
            return
        if self._heartbeat_offset < 0:
            counter_id = self.counters.find_by_type_id_and_registration_id(11, self.client_id)
            if counter_id < 0:
                return
            self._heartbeat_offset = counter_id * 128
        self._sections[3].put_i64_ordered(self._heartbeat_offset, int(time.time() * 1000))

    def poll(self) -> int:
        self.keepalive()
        def handler(type_id, buffer, offset, length):
            self.received.append((type_id, cmd.decode_response(type_id, buffer, offset, length)))
        count = 0
        while self.receiver.receive(handler):
            count += 1
        return count

    def await_response(self, predicate, timeout_s: float = 5.0):
        """First received (type, message) satisfying ``predicate``; removes it from ``received``."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.poll()
            for i, (type_id, message) in enumerate(self.received):
                if predicate(type_id, message):
                    del self.received[i]
                    return type_id, message
            if time.monotonic() > deadline:
                raise TimeoutError(f"no matching response; received {self.received!r}")
            time.sleep(0.002)

    def await_correlated(self, correlation_id: int, timeout_s: float = 5.0):
        return self.await_response(lambda t, m: getattr(m, "correlation_id", None) == correlation_id, timeout_s)

    def drain(self, quiet_s: float = 0.2) -> list[tuple[int, object]]:
        """Everything received until nothing new arrives for ``quiet_s``."""
        last = time.monotonic()
        while time.monotonic() - last < quiet_s:
            if self.poll():
                last = time.monotonic()
            time.sleep(0.005)
        out, self.received = self.received, []
        return out

    def close(self) -> None:
        self.ring.close()
        self.receiver = None
        self.counters = None
        self.error_log_buffer = None
        for name, section in zip(("to_driver", "to_clients", "meta", "values", "errors"), self._sections):
            try:
                section.close()
            except Exception as exc:
                raise type(exc)(f"{name}: {exc}") from exc
        self.cnc.close()
