"""prereview's hidden markers in the form Bitbucket hides.

Bitbucket renders comments as Markdown without raw HTML, so `<!-- prereview:fp=… -->` would show as
text. A Markdown link reference definition that nothing references renders as nothing and is kept
byte for byte: each marker line is written as `[prereview:fp=…]: #` and read back as the HTML form,
so the rest of prereview (fingerprints, the summary marker, the walkthrough block) reads Bitbucket
comments like any other forge's. Untrusted text cannot forge one: on writing, a line that already
looks like the reference form gets an invisible break (`escape.ZWSP`) before the real markers are
converted, so only the bot's own markers come back as markers.
"""

from __future__ import annotations

import re

from ...render.escape import ZWSP

_BODY = r"prereview:[a-z-]+(?:=[0-9A-Za-z._-]*)?"
_HTML = re.compile(rf"^<!-- ({_BODY}) -->$", re.M)
_REF = re.compile(rf"^\[({_BODY})\]: #$", re.M)


def to_bitbucket(text: str) -> str:
    text = re.sub(r"^\[prereview:", f"[{ZWSP}prereview:", text, flags=re.M)
    return _HTML.sub(r"[\1]: #", text)


def from_bitbucket(text: str) -> str:
    return _REF.sub(r"<!-- \1 -->", text)
