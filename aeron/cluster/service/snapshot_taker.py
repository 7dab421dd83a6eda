# SPDX-License-Identifier: Apache-2.0
"""``SnapshotTaker``: the frame of a cluster snapshot, SnapshotMarker BEGIN and END (and SECTION), written to an
archived exclusive publication, waiting out back pressure with the caller's idle strategy (Aeron's
``io.aeron.cluster.service.SnapshotTaker``, the base of the consensus module's and the services' snapshot takers).

While it waits it invokes the Aeron client's conductor when the client runs it through an invoker, so that a
snapshot larger than the publication's window still drains. Java also gives up when the thread is interrupted;
Python threads cannot be, so the agent's own termination is what ends a snapshot early.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aeron._core.buffer_claim import BufferClaim
from aeron._core.codecs import cluster as codecs
from aeron._core.codecs.cluster import ClusterTimeUnit, SnapshotMark
from aeron.cluster.service.consensus_module_proxy import check_result, commit_encoded

__all__ = ["SnapshotTaker"]

ENCODED_MARKER_LENGTH = codecs.MESSAGE_HEADER_LENGTH + codecs.SnapshotMarkerEncoder.BLOCK_LENGTH


class SnapshotTaker:
    """Writes snapshot markers (and whole messages) to ``publication``."""

    def __init__(self, publication: Any, idle_strategy: Any, aeron_agent_invoker: Any = None) -> None:
        """Write to ``publication`` (an ExclusivePublication), idling with ``idle_strategy`` while back pressured
        and invoking ``aeron_agent_invoker`` (the client's conductor invoker, or None) meanwhile."""
        self.publication = publication
        self.idle_strategy = idle_strategy
        self.aeron_agent_invoker = aeron_agent_invoker
        self.buffer_claim = BufferClaim()
        self._snapshot_marker = codecs.SnapshotMarkerEncoder()

    def mark_begin(self, snapshot_type_id: int, log_position: int, leadership_term_id: int, snapshot_index: int,
                   time_unit: ClusterTimeUnit | None, app_version: int) -> None:
        """SnapshotMarker BEGIN."""
        self.mark_snapshot(snapshot_type_id, log_position, leadership_term_id, snapshot_index, SnapshotMark.BEGIN,
                           time_unit, app_version)

    def mark_end(self, snapshot_type_id: int, log_position: int, leadership_term_id: int, snapshot_index: int,
                 time_unit: ClusterTimeUnit | None, app_version: int) -> None:
        """SnapshotMarker END."""
        self.mark_snapshot(snapshot_type_id, log_position, leadership_term_id, snapshot_index, SnapshotMark.END,
                           time_unit, app_version)

    def mark_snapshot(self, snapshot_type_id: int, log_position: int, leadership_term_id: int, snapshot_index: int,
                      snapshot_mark: SnapshotMark, time_unit: ClusterTimeUnit | None, app_version: int) -> None:
        """One SnapshotMarker, retried until the publication takes it. A unit of None (no term seen yet) is written
        as null, which readers take for milliseconds."""
        unit = ClusterTimeUnit.NULL_VAL if time_unit is None else time_unit
        self.put(self._snapshot_marker, ENCODED_MARKER_LENGTH, type_id=snapshot_type_id, log_position=log_position,
                 leadership_term_id=leadership_term_id, index=snapshot_index, mark=snapshot_mark, time_unit=unit,
                 app_version=app_version)

    def put(self, encoder: Any, length: int, **fields: Any) -> None:
        """Claim ``length`` bytes, encode ``encoder`` (header, then ``fields``) in place and commit, retrying while
        back pressured."""
        self.claim_and_commit(length, lambda claim: commit_encoded(claim, encoder, fields))

    def claim_and_commit(self, length: int, write: Callable[[BufferClaim], None]) -> None:
        """Claim ``length`` bytes, retrying while back pressured, and have ``write(claim)`` fill and commit it."""
        self.idle_strategy.reset()
        claim = self.buffer_claim
        while True:
            result = self.publication.try_claim(length, claim)
            if result > 0:
                write(claim)
                return
            self.check_result_and_idle(result)

    def check_result_and_idle(self, position: int) -> None:
        """ClusterError for a result that retrying cannot mend, else invoke the client and idle once."""
        check_result(position, self.publication)
        self.invoke_agent_client()
        self.idle_strategy.idle()

    def invoke_agent_client(self) -> None:
        """Run the Aeron client's conductor once when the client is driven by an invoker."""
        if self.aeron_agent_invoker is not None:
            self.aeron_agent_invoker.invoke()

    def offer(self, buffer: Any, offset: int = 0, length: int = -1) -> None:
        """Offer ``buffer[offset:offset + length]`` as one message, retrying while back pressured."""
        self.idle_strategy.reset()
        while True:
            result = self.publication.offer(buffer, offset, length)
            if result > 0:
                return
            self.check_result_and_idle(result)
