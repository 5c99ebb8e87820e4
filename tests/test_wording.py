"""The notes' shared wording."""

from bot.wording import first_few


def test_first_few_names_the_first_and_counts_the_rest() -> None:
    assert first_few([]) == ""
    assert first_few(["a", "b", "c"]) == "a, b, c"
    assert first_few(["a", "b", "c", "d", "e"]) == "a, b, c and 2 more"
    assert first_few(["a", "b", "c", "d", "e"], 5) == "a, b, c, d, e"
