# SPDX-License-Identifier: Apache-2.0
"""Test-support extensions that cimport aeron._core (built by ./run.sh with AERON_PY_BUILD_TESTS=1)."""
