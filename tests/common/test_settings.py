# SPDX-License-Identifier: Apache-2.0
"""read_properties: a launcher's key=value and -Dkey=value arguments and properties files, later ones winning."""
import pytest

from aeron.common.settings import read_properties


def test_arguments_and_files_in_order(tmp_path):
    props_file = tmp_path / "node.properties"
    props_file.write_text("# a comment\n! another\naeron.dir = /dev/shm/a\naeron.cluster.member.id=1\n\nno-equals\n"
                          "aeron.cluster.members=0,h:1|1,h:2\n")
    props = read_properties(["aeron.dir=/dev/shm/first", str(props_file), "-Daeron.cluster.member.id=2",
                             "aeron.archive.dir=/x=y"])
    assert props == {"aeron.dir": "/dev/shm/a", "aeron.cluster.member.id": "2",
                     "aeron.cluster.members": "0,h:1|1,h:2", "aeron.archive.dir": "/x=y"}


def test_a_missing_file_raises(tmp_path):
    with pytest.raises(OSError):
        read_properties([str(tmp_path / "absent.properties")])


def test_property_items_from_a_mapping_or_strings():
    from aeron.common.errors import ConfigurationError
    from aeron.common.settings import property_items
    assert property_items({" aeron.dir ": "/d", "x": 1}) == [("aeron.dir", "/d"), ("x", 1)]
    assert property_items(["-Daeron.dir=/d", "a.b = c=d"]) == [("aeron.dir", "/d"), ("a.b", " c=d")]
    with pytest.raises(ConfigurationError, match="expected key=value"):
        property_items(["aeron.dir"])


def test_resolve_named_finds_a_nested_attribute_or_says_why_not():
    from aeron.common.errors import ConfigurationError
    from aeron.common.settings import resolve_named
    assert resolve_named("aeron.common.settings:read_properties", "x") is read_properties
    assert resolve_named("os:path.join", "x").__name__ == "join"
    with pytest.raises(ConfigurationError, match="my supplier 'nocolon': expected package.module:name"):
        resolve_named("nocolon", "my supplier")
    with pytest.raises(ConfigurationError, match="my supplier 'no_such_module_xyz:a'"):
        resolve_named("no_such_module_xyz:a", "my supplier")
    with pytest.raises(ConfigurationError, match="has no attribute"):
        resolve_named("os:no_such_attribute", "my supplier")
