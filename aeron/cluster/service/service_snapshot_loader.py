# SPDX-License-Identifier: Apache-2.0
"""``ServiceSnapshotLoader``: reads a clustered service's snapshot from its replay image, the container's part of it
(SnapshotMarker BEGIN, the ClientSession entries, SnapshotMarker END), and stops right after END so that the image is
positioned on the application's own state for ``ClusteredService.on_start`` (Aeron's
``io.aeron.cluster.service.ServiceSnapshotLoader``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aeron._core.codecs import cluster as codecs
from aeron._core.codecs.cluster import ClusterTimeUnit, SnapshotMark
from aeron._core.fragment_assembler import ImageControlledFragmentAssembler
from aeron._core.term_reader import BREAK, CONTINUE
from aeron.cluster.service.cluster_clock import ClusterClock
from aeron.cluster.service.clustered_service_container import Configuration
from aeron.common.errors import ClusterError

if TYPE_CHECKING:
    from aeron.cluster.service.clustered_service_agent import ClusteredServiceAgent

__all__ = ["ServiceSnapshotLoader"]

FRAGMENT_LIMIT = 10
_HEADER = codecs.MESSAGE_HEADER_LENGTH


class ServiceSnapshotLoader:
    """Polls a snapshot image until its END marker, handing each ClientSession to the agent's ``add_session``."""

    def __init__(self, image: Any, agent: ClusteredServiceAgent) -> None:
        """Read ``image`` (a replay of the service's snapshot recording) for ``agent``."""
        self.image = image
        self.agent = agent
        self.in_snapshot = False
        self.is_done = False
        self.app_version = 0
        self.time_unit: ClusterTimeUnit | None = None
        self._assembler = ImageControlledFragmentAssembler(self.on_fragment)
        self._header = codecs.MessageHeaderDecoder()
        self._marker = codecs.SnapshotMarkerDecoder()
        self._client_session = codecs.ClientSessionDecoder()

    def poll(self) -> int:
        """Read up to 10 fragments (none past the END marker); returns the fragments read."""
        return int(self.image.controlled_poll(self._assembler, FRAGMENT_LIMIT))

    def on_fragment(self, buffer: Any, offset: int, length: int, header: Any) -> int:
        """One whole snapshot entry; BREAK after END so the image stops on the application's data."""
        h = self._header.wrap(buffer, offset)
        schema_id, template_id, block_length, version = h.schema_id, h.template_id, h.block_length, h.version
        h.release()
        if schema_id != codecs.SCHEMA_ID:
            raise ClusterError(f"expected schemaId={codecs.SCHEMA_ID}, actual={schema_id}")
        body, end = offset + _HEADER, offset + length
        if template_id == codecs.SnapshotMarkerDecoder.TEMPLATE_ID:
            m = self._marker.wrap(buffer, body, block_length, version, end)
            try:
                type_id, mark, app_version, time_unit = m.type_id, m.mark, m.app_version, m.time_unit
            finally:
                m.release()
            if type_id != Configuration.SNAPSHOT_TYPE_ID:
                raise ClusterError(f"unexpected snapshot type: {type_id}")
            if mark == SnapshotMark.BEGIN:
                if self.in_snapshot:
                    raise ClusterError("already in snapshot")
                self.in_snapshot = True
                self.app_version = app_version
                self.time_unit = ClusterClock.map(time_unit)
                return CONTINUE
            if mark == SnapshotMark.END:
                if not self.in_snapshot:
                    raise ClusterError("missing begin snapshot")
                self.is_done = True
                return BREAK
        elif template_id == codecs.ClientSessionDecoder.TEMPLATE_ID:
            s = self._client_session.wrap(buffer, body, block_length, version, end)
            try:
                args = (s.cluster_session_id, s.response_stream_id, s.response_channel, s.encoded_principal)
            finally:
                s.release()
            self.agent.add_session(*args)
        return CONTINUE
