"""Findings on the same lines become one inline comment (one thread), not one thread each.

The publishers ask which of the findings they would post inline share a place (file, side, first and
last line); the first of each group (or the one with a verified fix, whose suggestion the comment
carries) leads, the others ride along in its body with their own fingerprint markers, so each is
still known as posted on the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..types import Finding


def same_place_groups(
    findings: Iterable[Finding], inline: Callable[[Finding], bool]
) -> tuple[dict[str, tuple[Finding, ...]], set[str]]:
    """(lead fingerprint -> the findings that ride along, the riders' fingerprints) over the findings
    `inline` says would be posted on their lines now; findings alone on their lines are not listed."""
    places: dict[tuple[str, str, int, int], list[Finding]] = {}
    for f in findings:
        if inline(f):
            places.setdefault((f.path, f.side, f.line, f.last_line), []).append(f)
    riders_of: dict[str, tuple[Finding, ...]] = {}
    riders: set[str] = set()
    for group in places.values():
        if len(group) < 2:
            continue
        lead = next((f for f in group if f.verified and f.suggestion is not None), group[0])
        rest = tuple(f for f in group if f is not lead)
        riders_of[lead.fingerprint] = rest
        riders |= {f.fingerprint for f in rest}
    return riders_of, riders
