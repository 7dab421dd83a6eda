# SPDX-License-Identifier: Apache-2.0
from typing import Any

from aeron._core.term_appender import TermAppender

def two_buffer_offer(appender: TermAppender, buffer_one: Any, offset_one: int, length_one: int, buffer_two: Any,
                     offset_two: int = ..., length_two: int = ...,
                     reserved_value_supplier: Any = ...) -> int: ...
