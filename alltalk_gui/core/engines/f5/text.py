"""Text for F5-TTS as F5 tokenizes it, the vocabulary check, and extending the vocabulary with consent.

F5-TTS v1 reads characters, not subwords: f5-tts's ``convert_char_to_pinyin`` turns Chinese characters into
pinyin syllables with tone numbers (``ni3``, each a token, with a space before it) and keeps every other
character as it is; ``list_str_to_idx`` then maps each token to its line in ``vocab.txt`` and silently maps
anything missing to id 0, the space. A transcript with characters the base model never saw therefore trains
on spaces: :func:`missing_tokens` reports them (with counts and an example clip) before training.

With the user's consent, :func:`extend_vocabulary` appends them to the vocabulary and grows the text
embedding by one row each, as F5's fine-tuning page does (``expand_model_embeddings``: old rows kept, new
rows ``randn``); the model learns them from the fine-tuning data only, so a handful of examples per new
character is the least that makes sense.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from alltalk_gui.core.engines.f5.files import EMBED_KEY
from alltalk_gui.core.engines.f5.upstream import f5_utils


def tokenize(text: str) -> list[str]:
    """The tokens F5 feeds its model for ``text``: pinyin for Chinese characters, characters otherwise."""
    return f5_utils().convert_char_to_pinyin([text], polyphone=True)[0]


def token_ids(tokens: list[str], vocab: dict[str, int]) -> list[int]:
    """Token ids as f5-tts maps them (a token not in ``vocab`` becomes 0, the space)."""
    return [vocab.get(token, 0) for token in tokens]


@dataclass(frozen=True)
class MissingToken:
    token: str
    count: int
    example: str  # the first transcript it appears in

    def describe(self) -> str:
        shown = repr(self.token) if self.token.strip() != self.token or not self.token.isprintable() else self.token
        return f"{shown} ({self.count}x, e.g. in \"{self.example[:60]}\")"


def missing_tokens(texts: list[str], vocab: list[str] | dict[str, int]) -> list[MissingToken]:
    """Tokens in ``texts`` that the vocabulary lacks, most frequent first (empty: everything is known)."""
    known = set(vocab)
    counts: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for text in texts:
        for token in tokenize(text):
            if token not in known:
                counts[token] += 1
                examples.setdefault(token, text)
    return [MissingToken(token, count, examples[token]) for token, count in counts.most_common()]


def missing_report(missing: list[MissingToken]) -> str:
    """One paragraph for the user: what is missing and what the choice is."""
    if not missing:
        return "Every character of the transcripts is in the model's vocabulary."
    listed = ", ".join(m.describe() for m in missing[:12]) + (f" and {len(missing) - 12} more" if len(missing) > 12 else "")
    return (f"{len(missing)} character(s) of the transcripts are not in the F5-TTS vocabulary: {listed}. "
            "Without them the model reads a space there. You can add them to the vocabulary (the model then "
            "learns them from your clips alone), or correct the transcripts.")


def extend_vocabulary(cfm, vocab: list[str], new_tokens: list[str], seed: int = 666) -> list[str]:
    """Append ``new_tokens`` to the vocabulary and grow ``cfm``'s text embedding to match, in place.

    Existing rows are kept; new rows are ``randn`` as in F5's ``expand_model_embeddings`` (same seed, 666).
    The CFM's token map (``vocab_char_map``) is updated too. Returns the new vocabulary (write it to the
    exported ``vocab.txt``).

    Raises:
        ValueError: a token is already in the vocabulary, or the embedding does not match ``vocab``.
    """
    import torch

    duplicates = sorted(set(new_tokens) & set(vocab))
    if duplicates or len(set(new_tokens)) != len(new_tokens):
        raise ValueError(f"tokens already in the vocabulary or given twice: {duplicates or new_tokens}")
    embedding = cfm.get_submodule(EMBED_KEY.rsplit(".", 1)[0])
    old = embedding.weight
    if old.shape[0] != len(vocab) + 1:
        raise ValueError(f"the text embedding has {old.shape[0]} rows, the vocabulary {len(vocab)} tokens (+1)")
    generator = torch.Generator().manual_seed(seed)
    added = torch.randn((len(new_tokens), old.shape[1]), generator=generator).to(old.device, old.dtype)
    grown = torch.nn.Embedding(old.shape[0] + len(new_tokens), old.shape[1], device=old.device, dtype=old.dtype)
    with torch.no_grad():
        grown.weight[: old.shape[0]] = old
        grown.weight[old.shape[0]:] = added
    grown.weight.requires_grad_(old.requires_grad)
    parent_name, _, child = EMBED_KEY.rsplit(".", 1)[0].rpartition(".")
    setattr(cfm.get_submodule(parent_name), child, grown)
    new_vocab = list(vocab) + list(new_tokens)
    cfm.vocab_char_map = {token: i for i, token in enumerate(new_vocab)}
    return new_vocab
