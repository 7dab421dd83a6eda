# SPDX-License-Identifier: Apache-2.0
"""What the client and the driver share (Aeron's aeron_common): errors, agents and idle strategies, channel URIs
and their value syntax, the driver-protocol codecs, paths and the version. Imports only ``aeron._core`` and
itself (docs/layers.md); kept empty so that ``aeron._core`` can raise ``aeron.common.errors`` without a cycle."""
