"""Who fills a library and who may read it, asked of ``holodeck.ownership`` directly.

Run against the memory and the local adapter (the Redis adapter's record has its own test);
the local one is reopened from disk to prove the owner record is kept with the index. The
commands' view of the same rules is in tests/integration/test_library_ownership.py and
tests/tools/test_library_access.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from holodeck import ownership
from holodeck.errors import ConfigError
from holodeck.ownership import (
    LibraryOwnedError,
    check_readable,
    check_reader,
    claim_for_ingest,
    claim_library,
    filled_elsewhere,
    source_label,
)
from holodeck.vectorstore.adapter import IndexAdapter
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import ChunkRecord, chunk_id_for
from holodeck.vectorstore.store import VectorStore

OWNER_A = {"project_id": "proj-a", "source": "docs", "root": "/a", "description": "docs of /a"}
OWNER_B = {"project_id": "proj-b", "source": "docs", "root": "/b", "description": "docs of /b"}


def record(index: int = 0, seed: int = 0) -> ChunkRecord:
    vec = np.random.default_rng(seed).normal(size=8).astype(np.float32)
    return ChunkRecord(
        chunk_id=chunk_id_for("t1", "lib", "a.md", index),
        tenant_id="t1",
        library_id="lib",
        book_id=".",
        doc_id="a.md",
        chunk_index=index,
        content=f"chunk {index} of a.md",
        vector=vec / np.linalg.norm(vec),
        embedding_model="m1",
        source_path="a.md",
        mtime=1.0,
        content_hash=str(seed),
        token_count=3,
    )


def read_as(adapter: IndexAdapter, root: Path, project_id: str) -> None:
    """Library kb of tenant t1 read by project ``project_id`` (no explicit tenant)."""
    check_readable(
        lambda: adapter,
        "t1",
        "kb",
        agent_name="agent",
        explicit_tenant=False,
        root=root,
        source=root / "docs",
        project_id=project_id,
    )


@pytest.fixture(params=["memory", "local"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], VectorStore]:
    """A factory: calling it again for ``local`` reopens the index from disk."""
    memory = MemoryIndexAdapter()

    def make() -> VectorStore:
        if request.param == "memory":
            return VectorStore(memory)
        return VectorStore(LocalIndexAdapter(tmp_path / "index"))

    return make


def test_a_library_belongs_to_one_owner(make_store: Callable[[], VectorStore]) -> None:
    store = make_store()
    assert claim_library(store.adapter, "t1", "lib", OWNER_A).outcome == "new"
    store.upsert_chunks("t1", [record(index=0, seed=1)])
    store.adapter.flush()
    adapter = make_store().adapter  # local: reopened from disk, the owner with it
    with pytest.raises(LibraryOwnedError) as refused:
        claim_library(adapter, "t1", "lib", OWNER_B)
    assert refused.value.owner == OWNER_A and refused.value.exit_code == 2
    assert adapter.library_owner("t1", "lib") == OWNER_A  # nothing changed
    assert claim_library(adapter, "t1", "other-lib", OWNER_B).outcome == "new"
    assert claim_library(adapter, "t2", "lib", OWNER_B).outcome == "new"
    moved = {**OWNER_A, "root": "/ci/checkout", "description": "docs of /ci/checkout"}
    assert claim_library(adapter, "t1", "lib", moved).outcome == "same"  # same id and source
    assert adapter.library_owner("t1", "lib") == moved  # the description follows
    taken = claim_library(adapter, "t1", "lib", OWNER_B, take_over=True)
    assert (taken.outcome, taken.previous) == ("taken", moved)
    # the new owner's record, and whom it took the library from
    assert adapter.library_owner("t1", "lib") == {**OWNER_B, "taken_from": "proj-a"}
    b_moved = {**OWNER_B, "root": "/b2", "description": "docs of /b2"}
    assert claim_library(adapter, "t1", "lib", b_moved).outcome == "same"
    assert adapter.library_owner("t1", "lib") == {**b_moved, "taken_from": "proj-a"}


def test_a_library_without_owner_record_is_adopted(make_store: Callable[[], VectorStore]) -> None:
    store = make_store()
    store.upsert_chunks("t1", [record(index=0, seed=1), record(index=1, seed=2)])
    store.adapter.flush()  # chunks, as an older release left them: no owner record
    assert claim_library(store.adapter, "t1", "lib", OWNER_B).outcome == "adopted"
    assert claim_library(store.adapter, "t1", "lib", OWNER_B).outcome == "same"


def test_a_moved_source_is_recorded_only_when_the_caller_says_so() -> None:
    adapter = MemoryIndexAdapter()
    claim_library(adapter, "t1", "lib", OWNER_A)
    handbook = {**OWNER_A, "source": "handbook"}
    claim = claim_library(adapter, "t1", "lib", handbook)
    assert (claim.outcome, claim.previous) == ("moved", OWNER_A)
    assert adapter.library_owner("t1", "lib") == OWNER_A  # the documents have not followed yet
    ownership.record_owner(adapter, "t1", "lib", handbook)
    assert adapter.library_owner("t1", "lib") == handbook


def test_a_reader_reads_its_own_or_an_unclaimed_library_only() -> None:
    adapter = MemoryIndexAdapter()
    assert check_reader(adapter, "t1", "lib", None) is None  # nobody has claimed it
    claim_library(adapter, "t1", "lib", OWNER_A)
    assert check_reader(adapter, "t1", "lib", "proj-a") == OWNER_A
    for stranger in ("proj-b", None):
        with pytest.raises(LibraryOwnedError) as refused:
            check_reader(adapter, "t1", "lib", stranger)
        assert refused.value.owner == OWNER_A and refused.value.exit_code == 2


def test_filled_elsewhere_compares_the_recorded_source(tmp_path: Path) -> None:
    adapter = MemoryIndexAdapter()
    docs, handbook = tmp_path / "docs", tmp_path / "handbook"
    assert not filled_elsewhere(adapter, "t1", "lib", tmp_path, docs)  # unclaimed
    claim_library(adapter, "t1", "lib", OWNER_A)
    assert not filled_elsewhere(adapter, "t1", "lib", tmp_path, docs)
    assert filled_elsewhere(adapter, "t1", "lib", tmp_path, handbook)
    assert source_label(tmp_path, tmp_path) == "."
    assert source_label(tmp_path, Path("/elsewhere/docs")) == "/elsewhere/docs"


def test_an_ingest_is_refused_with_one_line_naming_the_fix(tmp_path: Path) -> None:
    adapter = MemoryIndexAdapter()
    claim_library(adapter, "t1", "kb", OWNER_A)
    with pytest.raises(ConfigError) as refused:
        claim_for_ingest(
            adapter, "t1", "kb", OWNER_B, take_over=False, agent_name="", project_root=tmp_path
        )
    assert not isinstance(refused.value, LibraryOwnedError) and refused.value.exit_code == 2
    assert str(refused.value) == (
        "agent 't1', tool 'kb': the library of tenant 't1' in the memory index is filled by "
        "another project; nothing was changed. To keep both, set tenant: to another value in "
        "agent.yaml or rename the tool; to take it over, set tenant: t1 explicitly; if both "
        "are one project, commit .holodeck/project_id so every checkout shares its id"
    )
    assert adapter.library_owner("t1", "kb") == OWNER_A


def test_an_ingest_says_what_its_claim_found(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = MemoryIndexAdapter()

    def claim(owner: dict[str, str], take_over: bool = False) -> dict[str, str] | None:
        return claim_for_ingest(
            adapter,
            "t1",
            "kb",
            owner,
            take_over=take_over,
            agent_name="agent",
            project_root=tmp_path,
        )

    with caplog.at_level(logging.INFO, logger="holodeck.ingest"):
        assert claim(OWNER_A) is None and not caplog.records  # new: nothing to say
        assert claim(OWNER_B, take_over=True) is None
        (tmp_path / "docs").mkdir()
        assert claim({**OWNER_B, "source": "handbook"}) == {**OWNER_B, "taken_from": "proj-a"}
    taken, moved = caplog.records
    assert taken.levelno == logging.WARNING and "taken over by docs of /b" in taken.getMessage()
    assert moved.levelno == logging.WARNING  # the old folder still exists
    assert moved.getMessage().startswith("Library kb was filled from docs, now from handbook")
    assert "docs still exists" in moved.getMessage()


def test_a_reader_with_an_explicit_tenant_opens_nothing(tmp_path: Path) -> None:
    def never() -> IndexAdapter:
        raise AssertionError("the index was opened")

    found = check_readable(
        never,
        "t1",
        "kb",
        agent_name="agent",
        explicit_tenant=True,
        root=tmp_path,
        source=tmp_path / "docs",
        project_id=None,
    )
    assert found is None


def test_a_reader_of_another_projects_library_is_refused(tmp_path: Path) -> None:
    adapter = MemoryIndexAdapter()
    claim_library(adapter, "t1", "kb", OWNER_A)
    with pytest.raises(ConfigError) as refused:
        read_as(adapter, tmp_path, "proj-b")
    assert "is filled by another project, so this project may not read it" in str(refused.value)
    assert "proj-a" not in str(refused.value) and "docs of /a" not in str(refused.value)


def test_a_reader_of_its_moved_library_is_warned_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ownership, "_WARNED_MOVED", set())
    adapter = MemoryIndexAdapter()
    claim_library(adapter, "t1", "kb", OWNER_A)
    with caplog.at_level(logging.WARNING, logger="holodeck.tools"):
        for _ in range(2):
            found = check_readable(
                lambda: adapter,
                "t1",
                "kb",
                agent_name="agent",
                explicit_tenant=False,
                root=tmp_path,
                source=tmp_path / "handbook",
                project_id="proj-a",
            )
            assert found == "proj-a"
    assert [r.getMessage() for r in caplog.records] == [
        "kb: indexed from docs, but its source is now handbook; results name the old paths "
        "until `holodeck ingest` moves them"
    ]


def test_a_reader_reads_the_project_id_until_it_is_found(tmp_path: Path) -> None:
    adapter = MemoryIndexAdapter()

    def read(known: str | None) -> str | None:
        return check_readable(
            lambda: adapter,
            "t1",
            "kb",
            agent_name="agent",
            explicit_tenant=False,
            root=tmp_path,
            source=tmp_path / "docs",
            project_id=known,
        )

    assert read(None) is None  # no file yet, and reading does not create one
    assert not (tmp_path / ".holodeck").exists()
    (tmp_path / ".holodeck").mkdir()
    (tmp_path / ".holodeck" / "project_id").write_text("# id\nproj-a-123\n", encoding="utf-8")
    assert read(None) == "proj-a-123"
    assert read("proj-a-123") == "proj-a-123"


def test_the_project_a_library_was_taken_from_is_told_so(tmp_path: Path) -> None:
    """After another project took the library over (its agent sets ``tenant:``), the old
    owner's search and ingest say what happened and how to take it back."""
    adapter = MemoryIndexAdapter()
    claim_library(adapter, "t1", "kb", OWNER_A)
    claim_library(adapter, "t1", "kb", OWNER_B, take_over=True)
    with pytest.raises(ConfigError) as read:
        read_as(adapter, tmp_path, "proj-a")
    with pytest.raises(ConfigError) as filled:
        claim_for_ingest(
            adapter, "t1", "kb", OWNER_A, take_over=False, agent_name="", project_root=tmp_path
        )
    for refused in (read.value, filled.value):
        assert refused.exit_code == 2
        assert "was this project's until another project took it over" in str(refused)
        assert "To take it back, set tenant: t1 explicitly" in str(refused)
        assert "proj-b" not in str(refused) and "docs of /b" not in str(refused)
    # a third project is told the plain refusal: nothing was taken from it
    with pytest.raises(ConfigError) as third:
        read_as(adapter, tmp_path, "proj-c")
    assert "is filled by another project, so this project may not read it" in str(third.value)
