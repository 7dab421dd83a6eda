# SPDX-License-Identifier: Apache-2.0
"""What the package's commands (the driver, the tools, the archive tool) share about how they were started."""
from __future__ import annotations

import os
import sys

__all__ = ["program_name"]


def program_name(script: str, module: str) -> str:
    """The command's name for its usage line, as the user started it: ``script``, its console script
    (pyproject.toml ``[project.scripts]``), when ``sys.argv[0]`` is that, else ``python -m <module>``."""
    return script if os.path.basename(sys.argv[0]) == script else f"python -m {module}"
