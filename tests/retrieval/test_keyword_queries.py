"""What a keyword query asks, as a user sees it in the ranking, on both stores: the words the
question is about, not its noise words; a word said twice counts more, but not without
bound; quoted and stop-word queries still find what they name.

The real model, real files, the local SQLite index and a real Redis with the Query Engine.
"""

from __future__ import annotations

import pytest
import redis
from postgres_server import drop_index as drop_pg_index
from test_hybrid_search import postgres_database, project, ready_tool, redis_database

#: Chatty notes full of the words a question is asked with, and the one note that names EL1.
NOISE = {
    f"chat/thread{i}.md": f"""
        # Thread {i}

        I don't see how it did all that. How did you do it all? I did see all of it, and I
        don't know how. All of us did, and the team's notes say we all did see how.
        """
    for i in range(3)
}
DOCS = {
    **NOISE,
    "arm/levels.md": """
        # Exception levels

        Kernel code runs at EL1; applications run at EL0 and the hypervisor at EL2.
        """,
    "arm/caches.md": """
        # Caches

        The data cache is write-back; cleaning a line writes it to memory.
        """,
    "physics/boundary.md": """
        # Boundary layers

        Near the wall the boundary layer thickens downstream of the leading edge.
        """,
    "physics/shocks.md": """
        # Shock waves

        A normal shock wave slows the supersonic stream to subsonic speed at once.
        """,
    "ops/oom.md": """
        # Crashes

        The worker crashed because the machine ran out of memory during the export.
        """,
    "ops/memory.md": """
        # Memory

        Memory use, memory limits and memory graphs: the memory page shows memory.
        """,
}


@pytest.fixture(
    scope="module", params=["local", "redis", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def tool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    database = ""
    index = "kw_queries_" + tmp_path_factory.mktemp("x").name
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        database = redis_database(url, index)
    elif request.param == "postgres":
        url = request.getfixturevalue("pg_url")
        database = postgres_database(url, index)
    tool = ready_tool(project(tmp_path_factory.mktemp(request.param), DOCS, database))
    yield tool
    tool.close()
    if request.param == "postgres":
        drop_pg_index(url, index)


def first(tool, query: str) -> str:
    results, _ = tool.find(query, mode="keyword")
    assert results, query
    return results[0].doc_id


@pytest.mark.redis
def test_noise_words_of_a_question_do_not_outrank_its_rare_word(tool) -> None:
    # "I", "don't", "see", "how", "did", "all" fill the chatty notes; EL1 is in one note
    assert first(tool, "I don't see how EL1 did it all?") == "arm/levels.md"
    assert first(tool, "what runs at EL1's level, did you see how?") == "arm/levels.md"
    results, _ = tool.find("I don't see how EL1 did it all?", mode="hybrid")
    assert results[0].doc_id == "arm/levels.md"


@pytest.mark.redis
def test_a_word_the_query_repeats_weighs_more(tool) -> None:
    # "boundary" and "shock" are equally rare; the query that says one twice prefers it
    assert first(tool, "boundary boundary layer or shock wave") == "physics/boundary.md"
    assert first(tool, "boundary layer or shock shock wave") == "physics/shocks.md"


@pytest.mark.redis
def test_a_word_said_over_and_over_does_not_outweigh_the_rest(tool) -> None:
    # "shock" three times against "boundary" and "layer" once (all as rare): counted three
    # times, "shock" alone would outscore both; saturated it weighs 1.5 against their 2
    assert first(tool, "shock shock shock boundary layer") == "physics/boundary.md"


@pytest.mark.redis
def test_quoted_words_and_stop_word_queries_are_still_asked(tool) -> None:
    # unquoted, "out" is a stop word and the page that says "memory" most wins
    assert first(tool, "out of memory") == "ops/memory.md"
    assert first(tool, '"out of memory"') == "ops/oom.md"
    # nothing but stop words: asked anyway, rather than an empty keyword side
    assert first(tool, "how did you do it all") in NOISE


@pytest.mark.redis
def test_a_redis_holding_other_data_ranks_as_an_empty_one(
    redis_server_factory, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # FT.CREATE scans the whole keyspace; chunks written before that scan ends were indexed
    # twice and the copies skewed BM25's statistics (every chunk 9 -> 10 or 11 index entries)
    shared, empty = redis_server_factory(), redis_server_factory()
    with redis.Redis.from_url(shared.url) as client, client.pipeline(transaction=False) as pipe:
        for i in range(5000):
            pipe.set(f"someone-else:{i}", "x")
        pipe.execute()
    queries = ["I don't see how EL1 did it all?", "boundary layer or shock wave", "memory"]
    seen = []
    for server in (empty, shared):
        database = redis_database(server.url, "kb")
        built = ready_tool(project(tmp_path_factory.mktemp("shared"), DOCS, database))
        try:
            found = {q: built.find(q, mode="keyword")[0] for q in queries}
            seen.append({q: [(r.doc_id, r.score) for r in found[q]] for q in queries})
        finally:
            built.close()
    for query in queries:
        on_empty, on_shared = seen[0][query], seen[1][query]
        assert [d for d, _ in on_shared] == [d for d, _ in on_empty], query
        for (_, a), (_, b) in zip(on_shared, on_empty, strict=True):
            assert a == pytest.approx(b, abs=1e-9), query
