"""One rule for echoing input back: a short prefix plus the full length, never the whole string.

Anything taken from an event or an API answer that ends up in a result, a log line or a notification goes through
`clip`, so a 5 MB detail-type costs a few dozen bytes wherever it is quoted. Stdlib only: loaded at `cdk synth`
by the construct (settings_seam.py).
"""

from __future__ import annotations

ECHO_LIMIT = 64


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` itself when short; else its first ``limit`` characters and its length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...({len(text)} chars)"
