# SPDX-License-Identifier: Apache-2.0
# The per-entry dispatch of Aeron Cluster's replicated log (a clustered service's BoundedLogAdapter): each whole
# entry's message header read in place, session messages handed on with their fields, the rest by template id.
cimport cython


@cython.final
cdef class LogEntryDispatcher:
    cdef object on_session_message   # (log_position, cluster_session_id, timestamp, buffer, offset, length, header)
    cdef object on_event             # (template_id, buffer, offset, length, header): every other template
