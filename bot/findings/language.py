"""`review.language`: the instruction that makes the model write its prose in the team's language.

Only the model's own text changes (finding messages, explanations, `/ask` answers, the walkthrough):
code, identifiers, file paths, quotes and CWE ids stay exactly as they are, so anchoring by quote and
the JSON schema are unaffected. The summary's fixed UI strings (headings, table columns) stay English.
"""

from __future__ import annotations

import re

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


# --- does a text read as the asked language? (for the translate pass and bench/language.py) ----------

# Languages told apart by their script: the share of letters in it.
_SCRIPTS: dict[str, str] = {
    "ja": "\u3040-\u30ff\u4e00-\u9fff",
    "zh": "\u4e00-\u9fff",
    "ko": "\uac00-\ud7af\u1100-\u11ff",
    "ru": "\u0400-\u04ff",
    "uk": "\u0400-\u04ff",
    "el": "\u0370-\u03ff",
    "ar": "\u0600-\u06ff",
    "he": "\u0590-\u05ff",
    "th": "\u0e00-\u0e7f",
    "hi": "\u0900-\u097f",
}
# Latin-script languages: their most common short words, against English's.
_WORDS: dict[str, frozenset[str]] = {
    code: frozenset(words.split())
    for code, words in {
        "en": "the is are this that of to and in it not with for be on an as by was can when if or does",
        "de": "der die das und ist nicht ein eine einen zu mit den dem des wird werden sich auf für von im "
        "es wenn oder kann wird sind auch bei",
        "fr": "le la les et est pas une des du un que qui dans pour ce cette sur au il se ne peut si ou sont",
        "es": "el la los las y es no una del que un en para por con se lo al su este esta puede si o son",
        "it": "il lo la gli le e è non una del che un per con si della di in questo questa può se sono",
        "pt": "o os as e é não uma do da que um em para com se no na este esta pode ou são",
        "nl": "de het een en is niet van dat die met voor op te zijn wordt deze kan als of",
    }.items()
}
_CODE = re.compile(r"`[^`]*`|\b\w+[._(/]\w*\)?|\S*[=<>{}\[\]]\S*")


def written_in(text: str, code: str) -> bool | None:
    """Whether `text` reads as the language `code`; None when it cannot tell (a language without a
    script or word list here, or too little prose once code spans and identifiers are left out)."""
    key = code.strip().lower().replace("_", "-").split("-")[0]
    prose = _CODE.sub(" ", text)
    if key in _SCRIPTS:
        letters = [c for c in prose if c.isalpha()]
        if len(letters) < 4:
            return None
        ours = sum(1 for c in letters if re.match(f"[{_SCRIPTS[key]}]", c))
        return ours / len(letters) >= 0.3
    if key not in _WORDS or key == "en":
        return None
    words = re.findall(r"[^\W\d_]+", prose.lower())
    ours = sum(1 for w in words if w in _WORDS[key])
    english = sum(1 for w in words if w in _WORDS["en"])
    if ours + english < 2:
        return None
    return ours >= english
