# SPDX-License-Identifier: Apache-2.0
from typing import Any

def scan_frames(buffer: Any, offset: int, limit: int) -> tuple[int, int]: ...
