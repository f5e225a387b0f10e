"""The REST server's rate limit (issue 46, item B): per client address, ``per_minute``
requests in a burst, then one more each time its share of the minute has passed; the
refusal says how many seconds to wait. A clock of the test's own: no timing."""

from __future__ import annotations

from holodeck.serve.limits import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_one_request_per_share_of_the_minute() -> None:
    clock = Clock()
    limiter = RateLimiter(6, clock)  # one every 10 s once the burst is spent
    assert [limiter.retry_after("a") for _ in range(6)] == [0] * 6
    assert limiter.retry_after("a") == 10
    clock.now += 9.0
    assert limiter.retry_after("a") == 1
    clock.now += 1.5  # 10.5 s since the burst: one request, then wait for the next share
    assert limiter.retry_after("a") == 0
    assert limiter.retry_after("a") == 10  # 0.05 of a request left: 9.5 s to a whole one


def test_clients_are_counted_apart() -> None:
    clock = Clock()
    limiter = RateLimiter(1, clock)
    assert limiter.retry_after("a") == 0
    assert limiter.retry_after("a") == 60
    assert limiter.retry_after("b") == 0
