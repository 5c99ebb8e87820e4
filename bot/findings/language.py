"""`review.language`: the instruction that makes the model write its prose in the team's language.

Only the model's own text changes (finding messages, explanations, `/ask` answers, the walkthrough):
code, identifiers, file paths, quotes and CWE ids stay exactly as they are, so anchoring by quote and
the JSON schema are unaffected. The summary's fixed UI strings (headings, table columns) stay English.
"""

from __future__ import annotations

# Common codes -> the language's English name (what the model understands best in an instruction).
LANGUAGES: dict[str, str] = {
    "ar": "Arabic",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fi": "Finnish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "hu": "Hungarian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "nb": "Norwegian Bokmål",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "pt-br": "Brazilian Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sv": "Swedish",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "vi": "Vietnamese",
    "zh": "Simplified Chinese",
    "zh-cn": "Simplified Chinese",
    "zh-tw": "Traditional Chinese",
}


def language_name(code: str) -> str | None:
    """The English name of a language code (`de`, `pt-BR`, `zh-TW`), its base language's for an unknown
    region (`de-AT` -> German), None for an unknown code."""
    key = code.strip().lower().replace("_", "-")
    return LANGUAGES.get(key) or LANGUAGES.get(key.split("-")[0])


def instruction(code: str) -> str:
    """The paragraph appended to a system prompt; empty for English or no language."""
    name = language_name(code) if code.strip() else None
    if name is None or name == "English":
        return ""
    return (
        f"\nLanguage: write every message, explanation and summary sentence in {name}. Keep code, "
        "identifiers, file paths, quoted lines, JSON keys and enum values, and CWE ids exactly as they are "
        "(in English or as written in the code); a quote is still copied exactly from the code.\n"
    )
