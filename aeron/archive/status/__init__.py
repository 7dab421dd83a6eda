# SPDX-License-Identifier: Apache-2.0
"""The archive's counters as other components read them (Aeron's ``io.aeron.archive.status``): a recording's
position counter, :class:`~aeron.archive.status.recording_pos.RecordingPos`."""
