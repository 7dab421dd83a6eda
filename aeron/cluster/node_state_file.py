# SPDX-License-Identifier: Apache-2.0
"""``node-state.dat``: the persistent state of a cluster node, byte-compatible with Aeron's ``NodeStateFile``.

A 1 MiB file (sparse) of SBE records of schema 112, 8-byte aligned. The first, ``nodeStateHeader`` (version int32
= 0.3.0, padding int32), has no message header; each record after it has the schema's 16-byte header
(blockLength, templateId, schemaId, version as uint16, then frameLength int32 and padding int32). Aeron writes a
``candidateTerm`` record (candidateTermId, timestamp, logPosition as int64) at offset 8 and a ``nodeStateFooter``
after it; readers find records by walking the headers by ``align(frameLength, 8)``, stopping at the footer.

The candidate term id is the highest term this node has voted or nominated itself in, so that it never votes
twice in one term across restarts: it is written last, with release ordering, after the timestamp and log
position of the update.
"""
from __future__ import annotations

import os
import pathlib

from aeron._core.atomic_buffer import AtomicBuffer
from aeron._core.codecs.cluster_node_state import (
    CandidateTermDecoder,
    CandidateTermEncoder,
    MessageHeaderDecoder,
    MessageHeaderEncoder,
    NodeStateFooterEncoder,
    NodeStateHeaderDecoder,
    NodeStateHeaderEncoder,
)
from aeron.common.constants import NULL_VALUE
from aeron.common.errors import ClusterError, CorruptFileError

__all__ = ["NodeStateFile"]

_ALIGNMENT = 8
_MAJOR_VERSION, _SEMANTIC_VERSION = 0, (0 << 16) | (3 << 8) | 0      # ClusterMarkFile's 0.3.0
_HEADER = MessageHeaderDecoder.ENCODED_LENGTH
_CANDIDATE_TERM_ID_OFFSET = 0
_TIMESTAMP_OFFSET = 8
_LOG_POSITION_OFFSET = 16


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


class NodeStateFile:
    """The node state file of a cluster directory (Aeron's ``NodeStateFile``): ``NodeStateFile(cluster_dir,
    create_new, file_sync_level)``; ``candidate_term()`` reads the candidate term, :meth:`update_candidate_term_id`
    and :meth:`propose_max_candidate_term_id` write it."""

    FILENAME = "node-state.dat"
    MINIMUM_FILE_LENGTH = 1 << 20

    def __init__(self, cluster_dir: str | os.PathLike[str], create_new: bool = False,
                 file_sync_level: int = 0) -> None:
        """Map ``cluster_dir/node-state.dat``, creating it when absent and ``create_new`` (ClusterError when absent
        otherwise; CorruptFileError naming the offset for a file whose records do not walk)."""
        self.path = pathlib.Path(cluster_dir) / self.FILENAME
        self._file_sync_level = file_sync_level
        if not self.path.exists():
            if not create_new:
                raise ClusterError(f"NodeStateFile does not exist and createNew=false: {self.path}")
            self._buffer = AtomicBuffer.map_file(self.path, self.MINIMUM_FILE_LENGTH, create=True)
            try:
                self._candidate_term_offset = self._initialise()
            except BaseException:
                self._buffer.close()
                raise
        else:
            self._buffer = AtomicBuffer.map_file(self.path)
            try:
                self._candidate_term_offset = self._load()
            except BaseException:
                self._buffer.close()
                raise
        self._sync()

    def _initialise(self) -> int:
        buffer = self._buffer
        header = NodeStateHeaderEncoder().wrap(buffer, 0)
        header.version = _SEMANTIC_VERSION
        header.release()
        frame_offset = NodeStateHeaderEncoder.BLOCK_LENGTH
        message_header = MessageHeaderEncoder()
        term = CandidateTermEncoder().wrap_and_apply_header(buffer, frame_offset)
        term.log_position = NULL_VALUE
        term.timestamp = NULL_VALUE
        term.candidate_term_id = NULL_VALUE
        message_header.wrap(buffer, frame_offset).frame_length = _HEADER + term.encoded_length
        footer_offset = frame_offset + _align(_HEADER + term.encoded_length, _ALIGNMENT)
        term.release()
        footer = NodeStateFooterEncoder().wrap_and_apply_header(buffer, footer_offset)
        message_header.wrap(buffer, footer_offset).frame_length = _HEADER + footer.encoded_length
        footer.release()
        message_header.release()
        offset = frame_offset + _HEADER
        buffer.put_i64_ordered(offset + _CANDIDATE_TERM_ID_OFFSET, NULL_VALUE)
        return offset

    def _load(self) -> int:
        buffer = self._buffer
        if buffer.capacity < NodeStateHeaderDecoder.BLOCK_LENGTH:
            raise CorruptFileError(f"node state file of {buffer.capacity} bytes", path=str(self.path), offset=0)
        header = NodeStateHeaderDecoder().wrap(buffer, 0, NodeStateHeaderDecoder.BLOCK_LENGTH,
                                               NodeStateHeaderDecoder.SCHEMA_VERSION)
        version = header.version
        header.release()
        if (version >> 16) & 0xFFFF != _MAJOR_VERSION:
            raise ClusterError(f"mark file major version {(version >> 16) & 0xFFFF} does not match software: "
                               f"{_MAJOR_VERSION} ({self.path})")
        if self._scan_for(NodeStateFooterEncoder.TEMPLATE_ID) == NULL_VALUE:
            raise CorruptFileError("failed to find NodeStateFooter entry, file corrupt?", path=str(self.path))
        frame = self._scan_for(CandidateTermEncoder.TEMPLATE_ID)
        if frame == NULL_VALUE:
            raise CorruptFileError("failed to find CandidateTerm entry", path=str(self.path))
        decoder = CandidateTermDecoder()
        try:
            decoder.wrap_header(buffer, frame, buffer.capacity)
            if decoder.acting_block_length < CandidateTermEncoder.BLOCK_LENGTH:
                raise CorruptFileError(f"candidateTerm block of {decoder.acting_block_length} bytes",
                                       path=str(self.path), offset=frame)
        finally:
            decoder.release()
        return frame + _HEADER

    def _scan_for(self, template_id: int) -> int:
        # Aeron's scanForMessageTypeOffset: records from after the node state header, by their frame lengths
        buffer = self._buffer
        position = NodeStateHeaderDecoder.BLOCK_LENGTH
        header = MessageHeaderDecoder()
        try:
            while position + _HEADER <= buffer.capacity:
                header.wrap(buffer, position)
                found, length = header.template_id, header.frame_length
                if found == template_id:
                    return position
                if found == NodeStateFooterEncoder.TEMPLATE_ID:
                    return NULL_VALUE
                if length < 0:
                    raise CorruptFileError(f"Message length {length} < 0, file corrupt?", path=str(self.path),
                                           offset=position)
                if length == 0:
                    return NULL_VALUE
                position += _align(length, _ALIGNMENT)
        finally:
            header.release()
        return NULL_VALUE

    # -- the candidate term ---------------------------------------------------------------------------------------

    def candidate_term_id(self) -> int:
        """The candidate term id (volatile read; -1 when none yet)."""
        return self._buffer.get_i64_volatile(self._candidate_term_offset + _CANDIDATE_TERM_ID_OFFSET)

    def candidate_term(self) -> tuple[int, int, int]:
        """``(candidate_term_id, timestamp, log_position)`` of the last update."""
        offset = self._candidate_term_offset
        return (self.candidate_term_id(), self._buffer.get_i64(offset + _TIMESTAMP_OFFSET),
                self._buffer.get_i64(offset + _LOG_POSITION_OFFSET))

    def update_candidate_term_id(self, candidate_term_id: int, log_position: int, timestamp_ms: int) -> None:
        """Write log position and timestamp, then the candidate term id with release ordering, then sync the
        file when the file sync level asks for it."""
        offset = self._candidate_term_offset
        self._buffer.put_i64(offset + _LOG_POSITION_OFFSET, log_position)
        self._buffer.put_i64(offset + _TIMESTAMP_OFFSET, timestamp_ms)
        self._buffer.put_i64_ordered(offset + _CANDIDATE_TERM_ID_OFFSET, candidate_term_id)
        self._sync()

    def propose_max_candidate_term_id(self, candidate_term_id: int, log_position: int, timestamp_ms: int) -> int:
        """Raise the candidate term id to ``candidate_term_id`` if it is higher; returns the id now held."""
        existing = self.candidate_term_id()
        if candidate_term_id > existing:
            self.update_candidate_term_id(candidate_term_id, log_position, timestamp_ms)
            return candidate_term_id
        return existing

    def migrate_candidate_term_id(self, mark_file_candidate_term_id: int, timestamp_ms: int) -> bool:
        """Take over the candidateTermId an older Aeron kept in the mark file (``ConsensusModule.Context.conclude``):
        only when this file holds none yet and the mark file has one; returns whether it was taken."""
        if self.candidate_term_id() == NULL_VALUE and mark_file_candidate_term_id != NULL_VALUE:
            self.update_candidate_term_id(mark_file_candidate_term_id, NULL_VALUE, timestamp_ms)
            return True
        return False

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def _sync(self) -> None:
        if self._file_sync_level > 0:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        """Unmap (idempotent)."""
        if not self._buffer.is_closed:
            self._buffer.close()

    def __enter__(self) -> NodeStateFile:  # noqa: PYI034 (not meant to be subclassed)
        """The node state file itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close it."""
        self.close()

