"""Text that XML can hold: the reports written as XML (JUnit, the HTML page's SVG plots)
carry what a model or an agent wrote, which may hold characters XML 1.0 forbids (ESC,
NUL, backspace). One of them and a CI dashboard or a browser refuses the whole file."""

from __future__ import annotations

import re

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """``text`` with every character XML cannot hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)
