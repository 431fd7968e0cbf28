"""The languages the app works in: the one list the app, the CLI and ``project.json`` use, with what each needs.

It is XTTS v2's set of 17 (the default engine's), and beside the engines' interface rather than inside the XTTS
package because neutral packages need these facts too: how a language is written (spaces, sentence marks, word
counts) shapes clip cutting and editing whatever the engine. The character limits are XTTS's tokenizer limits,
used as the longest clip text worth training on; an engine with other limits would give its own.

A project's language is one of these codes (XTTS's own spelling: ``zh-cn``, not ``zh``). For each language this
module knows its name, the character limit coqui's tokenizer warns above (``VoiceBpeTokenizer.char_limits``; a
longer text is cut off in synthesis, so it is also the longest clip text worth training on), whether it is
written without spaces between words (then clips are measured in characters, not words), and which Python
packages its text cleaning imports (coqui-tts does not install them by default).

Nothing here imports coqui or torch: it answers instantly in listing commands and dialogs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    code: str                      # project and XTTS code (XttsConfig.languages)
    name: str                      # English name, for menus
    char_limit: int                # coqui's VoiceBpeTokenizer.char_limits for this language
    spaced: bool = True            # words separated by spaces (False: zh, ja)
    packages: tuple[tuple[str, str], ...] = ()   # (module to import, PyPI package) its text cleaning needs

    @property
    def tokenizer_code(self) -> str:
        """The code coqui's text cleaning takes (the region dropped: ``zh-cn`` -> ``zh``)."""
        return self.code.split("-")[0]

    @property
    def label(self) -> str:
        return f"{self.name} ({self.code})"


# In XttsConfig().languages order. Character limits from coqui-tts 0.28's tokenizer.
LANGUAGES: tuple[Language, ...] = (
    Language("en", "English", 250),
    Language("es", "Spanish", 239),
    Language("fr", "French", 273),
    Language("de", "German", 253),
    Language("it", "Italian", 213),
    Language("pt", "Portuguese", 203),
    Language("pl", "Polish", 224),
    Language("tr", "Turkish", 226),
    Language("ru", "Russian", 182),
    Language("nl", "Dutch", 251),
    Language("cs", "Czech", 186),
    Language("ar", "Arabic", 166),
    Language("zh-cn", "Chinese", 82, spaced=False, packages=(("pypinyin", "pypinyin"),)),
    Language("hu", "Hungarian", 224),
    Language("ko", "Korean", 95, packages=(("ko_speech_tools", "ko-speech-tools"),)),
    Language("ja", "Japanese", 71, spaced=False,
             packages=(("cutlet", "cutlet"), ("fugashi", "fugashi"), ("unidic_lite", "unidic-lite"))),
    Language("hi", "Hindi", 150),
)
CODES: tuple[str, ...] = tuple(lang.code for lang in LANGUAGES)
_BY_CODE = {lang.code: lang for lang in LANGUAGES}
# Spellings people and other tools use for the same language.
_ALIASES = {"zh": "zh-cn", "zh-hans": "zh-cn", "cn": "zh-cn", "jp": "ja", "kr": "ko", "cz": "cs"}


class UnknownLanguage(ValueError):
    """A code that is none of XTTS's 17 languages; the message lists them."""


def normalise(code: str) -> str:
    """The project code for ``code`` (case, ``_`` and aliases forgiven: ``ZH`` -> ``zh-cn``).

    Raises:
        UnknownLanguage: not one of the app's languages.
    """
    key = str(code).strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in _BY_CODE:
        raise UnknownLanguage(f"'{code}' is not one of the app's languages; use one of {', '.join(CODES)}.")
    return key


def language(code: str) -> Language:
    """The :class:`Language` for a code (see :func:`normalise`). Raises UnknownLanguage."""
    return _BY_CODE[normalise(code)]


def char_limit(code: str, default: int = 250) -> int:
    """XTTS's character limit for ``code``; ``default`` for a code that is not an XTTS language."""
    try:
        return language(code).char_limit
    except UnknownLanguage:
        return default


def is_spaced(code: str) -> bool:
    """False for languages written without spaces between words (zh-cn, ja)."""
    try:
        return language(code).spaced
    except UnknownLanguage:
        return True


def missing_packages(code: str) -> list[str]:
    """The PyPI packages ``code``'s text cleaning needs that are not installed (empty when all are)."""
    return [package for module, package in language(code).packages if importlib.util.find_spec(module) is None]


def missing_sentence(code: str) -> str | None:
    """One sentence saying what to install for ``code``, or None when nothing is missing."""
    missing = missing_packages(code)
    if not missing:
        return None
    lang = language(code)
    return (f"{lang.name} text needs the Python package{'s' if len(missing) > 1 else ''} {', '.join(missing)}, "
            f"which {'are' if len(missing) > 1 else 'is'} not installed: run the install again "
            f"(bash packaging/run.sh) or 'pip install {' '.join(missing)}'.")


def word_count(text: str, code: str) -> int:
    """How many words ``text`` has; in languages written without spaces (zh-cn, ja) every letter counts as one
    (a Chinese character is a syllable, about what a short word is elsewhere), so speech-rate checks hold."""
    if is_spaced(code):
        return len(text.split())
    return sum(1 for ch in text if ch.isalnum())


# Sentence and clause ends of every XTTS language: Latin, CJK (full-width and half-width), Arabic, Devanagari.
SENTENCE_ENDS = (".", "!", "?", "…", "。", "！", "？", "｡", "．", "‼", "⁉", "؟", "।", "॥")
CLAUSE_ENDS = (",", ";", ":", "—", "–", "，", "；", "：", "、", "､", "،", "؛")


def split_text(text: str, code: str, limit: int | None = None) -> list[str]:
    """``text`` in pieces XTTS can speak one at a time: at most ``limit`` characters (default: the language's
    limit), cut after the last sentence end that fits, else a clause mark, else a space, else at the limit.

    coqui's own splitting (``enable_text_splitting``) needs spaCy, which is not installed; this needs nothing.
    """
    limit = limit or char_limit(code)
    pieces: list[str] = []
    rest = " ".join(text.split())
    while len(rest) > limit:
        head = rest[:limit]
        cut = 0
        for marks in (SENTENCE_ENDS, CLAUSE_ENDS, (" ",)):
            cut = max((i + 1 for i, ch in enumerate(head) if ch in marks), default=0)
            if cut:
                break
        cut = cut or limit
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        pieces.append(rest)
    return [p for p in pieces if p]


def spoken_pieces(text: str, code: str, limit: int | None, before_piece: Callable[[int, int], None] | None
                  ) -> Iterator[str]:
    """:func:`split_text`'s pieces one by one, ``before_piece(pieces done, pieces in all)`` called before each: the
    one safe point where a long take can show how far it got and be stopped (the callback raises), since a model's
    synthesis of one piece cannot be cut short safely."""
    pieces = split_text(text, code, limit)
    for done, piece in enumerate(pieces):
        if before_piece is not None:
            before_piece(done, len(pieces))
        yield piece
