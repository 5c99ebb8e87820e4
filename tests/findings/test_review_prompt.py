"""The review's system prompt teaches by varied examples, not one category (a 1.5B model copies the only
example it is shown: with "e.g. CWE-89" as the prompt's one example, it labelled right diagnoses of
JavaScript and Go logic bugs "security, CWE-89")."""

from __future__ import annotations

import re

from bot.findings import analyze


def test_the_examples_cover_a_logic_bug_an_off_by_one_a_leak_and_an_injection() -> None:
    text = analyze.system_prompt()
    for kind in ("a logic bug", "an off-by-one", "a resource leak", "an injection"):
        assert f"- {kind}:" in text
    categories = re.findall(r'category "(\w+)"', text)
    assert categories.count("bug") >= 3 and categories.count("security") == 1
    # no CWE is given as a bare example to copy outside the one security example
    assert text.count("CWE-") == 1
