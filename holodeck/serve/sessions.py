"""The REST server's conversations: one agent (its own message history) per session id,
bounded in number and in idle time, so neither memory nor a stale turn grows without end.

Two sessions never share an ``Agent``: the history one session's turns build is the only
history its model sees. A session answers one message at a time (``busy``); a full store
makes room by dropping the session idle the longest, and refuses only when every session
is in the middle of a turn.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from holodeck.agent.loop import Agent
from holodeck.serve.api_models import new_ulid

#: How many sessions are kept at most (the original's default).
MAX_SESSIONS = 1000
#: How long a session may sit unused before it is forgotten (the original's 30 minutes).
SESSION_TTL_SECONDS = 1800.0


class SessionsFull(Exception):
    """Every kept session is answering a message: no room for another one now."""


@dataclass
class Session:
    """One conversation: its agent, the lock that keeps its turns one at a time, its use."""

    id: str
    agent: Agent
    used: float
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def busy(self) -> bool:
        return self.lock.locked()


class SessionStore:
    """Sessions by id, least recently used first; ``make_agent`` builds a new one's agent."""

    def __init__(
        self,
        make_agent: Callable[[], Agent],
        max_sessions: int = MAX_SESSIONS,
        ttl_seconds: float = SESSION_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._make_agent = make_agent
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self.max_sessions = max_sessions
        self.ttl_seconds = ttl_seconds
        self._clock = clock

    def __len__(self) -> int:
        return len(self._sessions)

    def get_or_create(self, session_id: str | None) -> Session:
        """The session ``session_id`` names (a new one under that id if unknown or expired),
        or a new one with a fresh id; ``SessionsFull`` when no idle session can make room."""
        now = self._clock()
        self._expire(now)
        session = self._sessions.get(session_id) if session_id else None
        if session is None:
            self._make_room()
            session = Session(session_id or new_ulid(), self._make_agent(), now)
            self._sessions[session.id] = session
        session.used = now
        self._sessions.move_to_end(session.id)
        return session

    def delete(self, session_id: str) -> bool:
        """Forget a session (its history goes with it); False if there was none."""
        return self._sessions.pop(session_id, None) is not None

    def _expire(self, now: float) -> None:
        """Drop the sessions idle longer than the TTL (oldest first: they lead the order)."""
        for session in list(self._sessions.values()):
            if now - session.used <= self.ttl_seconds:
                break
            if not session.busy:
                del self._sessions[session.id]

    def _make_room(self) -> None:
        """Drop the least recently used idle session while the store is full."""
        while len(self._sessions) >= self.max_sessions:
            idle = next((s for s in self._sessions.values() if not s.busy), None)
            if idle is None:
                raise SessionsFull(
                    f"all {self.max_sessions} sessions are answering a message; try again shortly"
                )
            del self._sessions[idle.id]
