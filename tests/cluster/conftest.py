# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the cluster tests: a copy of the golden Java node (tests/data/golden/cluster/node0), unpacked."""
import gzip
import pathlib
import shutil

import pytest

GOLDEN_CLUSTER = pathlib.Path(__file__).resolve().parents[1] / "data" / "golden" / "cluster"


def unpack(source: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    """Copy a golden directory, gunzipping its ``.gz`` files."""
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.suffix == ".gz":
            (target / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
        else:
            shutil.copy(path, target / path.name)
    return target


@pytest.fixture
def golden_node(tmp_path) -> pathlib.Path:
    """``node0/{cluster,archive}`` of the golden run, unpacked into a temporary directory."""
    node = tmp_path / "node0"
    unpack(GOLDEN_CLUSTER / "node0" / "cluster", node / "cluster")
    unpack(GOLDEN_CLUSTER / "node0" / "archive", node / "archive")
    return node


def expected(name: str) -> str:
    """An expected output of the Java ClusterTool (``offline/...`` or ``live/...``)."""
    return (GOLDEN_CLUSTER / "expected" / name).read_text()
