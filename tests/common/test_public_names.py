# SPDX-License-Identifier: Apache-2.0
"""The names users import from the top package and the client are the objects of the modules that define them,
and the modules that moved to aeron.common left no alias behind (the package is pre-1.0: CHANGELOG.md)."""
from __future__ import annotations

import importlib

import pytest

import aeron
import aeron.common.version
from aeron.common.paths import default_aeron_dir


def test_the_top_package_and_the_client_keep_their_names():
    from aeron.client import ChannelUri
    from aeron.client import default_aeron_dir as client_default
    from aeron.client.context import default_aeron_dir as context_default
    from aeron.common.channel_uri import ChannelUri as common_channel_uri
    assert client_default is context_default is default_aeron_dir
    assert ChannelUri is common_channel_uri
    assert aeron.__version__ == aeron.common.version.__version__
    for name in aeron.__all__:
        assert getattr(aeron, name) is not None, name


@pytest.mark.parametrize("old", ["aeron.errors", "aeron.agent", "aeron.command", "aeron.client.channel_uri"])
def test_the_old_homes_of_the_common_modules_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
