"""Hits per behaviour rule per corpus, from a bench's result rows (bench/quality.py, bench/realworld.py).

Every row of `bot.evidence.behaviour.rules.RULES` is printed, with no hits too, and any other behaviour
rule id the rows hold: on bug cases, how many it flagged on the right lines (at any severity) and how
many it fired on at all; on the other cases (ordinary commits, intended `alt`/`fix` changes), how many
it fired on at medium or above (noise that counts against "quiet") and at any severity. `origin` says
where the rule came from (a general oracle, or the case it was shaped by).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.evidence.behaviour.rules import RULES  # noqa: E402
from bot.types import severity_rank  # noqa: E402

Row = dict[str, Any]


def table(
    rows: list[Row],
    *,
    corpus: Callable[[Row], str],
    is_bug: Callable[[Row], bool],
    located: Callable[[Row, dict[str, Any]], bool],
) -> str:
    """One line per (rule, corpus)."""
    medium = severity_rank("medium")
    # (rule, corpus) -> counts
    n: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    corpora: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    seen: list[str] = [r.id for r in RULES]
    for row in rows:
        if row.get("error"):
            continue
        where, bug = corpus(row), is_bug(row)
        corpora[where]["bug" if bug else "other"] += 1
        fired: dict[str, set[str]] = defaultdict(set)
        for f in row.get("findings", []):
            rule = str(f.get("rule_id") or "")
            if f.get("source") != "behaviour" or not rule:
                continue
            if rule not in seen:
                seen.append(rule)
            fired[rule].add("any")
            if severity_rank(str(f.get("severity", "info"))) >= medium:
                fired[rule].add("medium")
            if bug and located(row, f):
                fired[rule].add("located")
        for rule, how in fired.items():
            c = n[(rule, where)]
            if bug:
                c["located"] += "located" in how
                c["bug_any"] += 1
            else:
                c["other_medium"] += "medium" in how
                c["other_any"] += 1
    origin = {r.id: r.origin for r in RULES}
    lines = ["hits per behaviour rule (bug cases: on the right lines / fired; other cases: >=medium / fired)"]
    for where in sorted(corpora):
        bugs, other = corpora[where]["bug"], corpora[where]["other"]
        lines.append(f"  {where}: {bugs} bug case(s), {other} other case(s)")
        for rule in seen:
            c = n.get((rule, where), {})
            lines.append(
                f"    {rule:<36} bugs {c.get('located', 0):>3}/{c.get('bug_any', 0):<3}"
                f" other {c.get('other_medium', 0):>3}/{c.get('other_any', 0):<3}"
                f"  {origin.get(rule, '(no row in rules.py)')[:70]}"
            )
    return "\n".join(lines)
