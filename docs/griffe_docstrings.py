# SPDX-License-Identifier: Apache-2.0
"""Griffe extension for the API reference: docstrings written for ``help()`` read well as Markdown.

* Cython embeds a compiled function's signature as its docstring's first line (``TermAppender.offer(self,
  buffer, ...)``); the page already shows the typed signature from the .pyi, so the line goes.
* Sphinx roles (``:class:`Aeron```, ``:meth:`close```) become inline code.
"""
from __future__ import annotations

import re
from typing import Any

import griffe

_EMBEDDED_SIGNATURE = re.compile(r"^[\w.]+\(.*\)(\s*->.*)?$")
_ROLE = re.compile(r":(?:class|meth|func|attr|mod|exc|data|obj):`~?([^`]+)`")


class MarkdownDocstrings(griffe.Extension):
    """Rewrite each docstring once the object tree is complete (compiled objects come from inspection)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Drop an embedded signature line and turn Sphinx roles into code spans."""
        docstring = obj.docstring
        if docstring is None:
            return
        text = docstring.value
        if obj.is_function:
            first, _, rest = text.partition("\n")
            if _EMBEDDED_SIGNATURE.match(first.strip()):
                text = rest.strip()
        docstring.value = _ROLE.sub(r"`\1`", text)
