# SPDX-License-Identifier: Apache-2.0
"""The Aeron client: Python control objects over the compiled core (STYLE.md section 2)."""
