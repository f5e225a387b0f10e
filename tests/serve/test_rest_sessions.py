"""The REST server's sessions are bounded (issue 46): in number (the least recently used
idle one makes room; a store whose every session is answering refuses) and in idle time;
each session has an agent of its own, so no history is ever shared."""

from __future__ import annotations

import asyncio

import pytest

from holodeck.serve.api_models import is_ulid
from holodeck.serve.sessions import SessionsFull, SessionStore


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def store(max_sessions: int = 2, ttl: float = 60.0) -> tuple[SessionStore, Clock]:
    clock = Clock()
    made: list[object] = []

    def make_agent() -> object:
        made.append(object())
        return made[-1]

    return SessionStore(make_agent, max_sessions, ttl, clock), clock  # type: ignore[arg-type]


def test_a_new_session_gets_a_ulid_and_an_agent_of_its_own() -> None:
    sessions, _ = store()
    a, b = sessions.get_or_create(None), sessions.get_or_create(None)
    assert is_ulid(a.id) and a.id != b.id and a.agent is not b.agent
    assert sessions.get_or_create(a.id) is a


def test_a_full_store_drops_the_least_recently_used_session() -> None:
    sessions, clock = store(max_sessions=2)
    a = sessions.get_or_create(None)
    clock.now = 1
    b = sessions.get_or_create(None)
    clock.now = 2
    sessions.get_or_create(a.id)  # a is used again: b is now the oldest
    c = sessions.get_or_create(None)
    assert len(sessions) == 2
    assert sessions.get_or_create(a.id) is a and sessions.get_or_create(c.id) is c
    assert sessions.get_or_create(b.id) is not b  # forgotten: a new session under its id


def test_a_store_whose_sessions_are_all_answering_refuses_a_new_one() -> None:
    async def run() -> None:
        sessions, _ = store(max_sessions=1)
        a = sessions.get_or_create(None)
        async with a.lock:
            with pytest.raises(SessionsFull, match="all 1 sessions are answering"):
                sessions.get_or_create(None)
        assert sessions.get_or_create(None) is not a

    asyncio.run(run())


def test_an_idle_session_expires_after_its_ttl() -> None:
    sessions, clock = store(ttl=60)
    a = sessions.get_or_create(None)
    clock.now = 59
    assert sessions.get_or_create(a.id) is a
    clock.now = 59 + 61
    assert sessions.get_or_create(a.id) is not a
