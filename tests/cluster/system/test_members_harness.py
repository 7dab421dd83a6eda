# SPDX-License-Identifier: Apache-2.0
"""The system tests' member harness: what its failure messages say."""
from __future__ import annotations

import pathlib

from aeron.cluster.service.cluster_mark_file import ClusterMarkFile
from tests.cluster.system.members import MemberProcess


def test_a_members_errors_are_described_with_their_counts(tmp_path: pathlib.Path) -> None:
    member = MemberProcess(0, "", tmp_path)
    assert member.describe_errors() == ""                       # no mark file yet
    cluster_dir = pathlib.Path(member.cluster_dir)
    cluster_dir.mkdir()
    with ClusterMarkFile.create(cluster_dir / ClusterMarkFile.FILENAME, 1) as mark:
        mark.encoder().put_aeron_directory(member.aeron_dir)
        for _ in range(3):
            mark.error_log.record(RuntimeError("failed to join live log\nat a line not shown"))
        mark.signal_ready(1)
    described = member.describe_errors()
    assert "3x " in described and "failed to join live log" in described and "a line not shown" not in described
