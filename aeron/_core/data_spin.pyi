# SPDX-License-Identifier: Apache-2.0
from collections.abc import Sequence

from aeron._core.send_pass import SendPass

class DataSpin:
    @property
    def rounds(self) -> int: ...
    def set(self, passes: Sequence[SendPass], fds: Sequence[int]) -> None: ...
    def wait(self, timeout_ns: int) -> bool: ...
