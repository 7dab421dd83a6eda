# SPDX-License-Identifier: Apache-2.0
"""Aeron Cluster samples: the cluster tutorial's client (``python -m aeron.samples.cluster.<name>``)."""
