"""How a large library's lists are shared among the groups its first k-means draws."""

from __future__ import annotations

import numpy as np
import pytest

from holodeck.vectorstore.sqlite.lists import _shares


@pytest.mark.parametrize(
    ("sizes", "lists"),
    [([50, 50, 50, 50], 4), ([500, 3, 0, 97], 12), ([1, 1, 1, 997], 8), ([7, 7, 7], 21)],
)
def test_every_list_is_drawn_once_and_no_group_draws_more_than_its_sample(
    sizes: list[int], lists: int
) -> None:
    sample = np.array(sizes)
    shares = _shares(sample, lists)
    assert int(shares.sum()) == lists
    assert np.all(shares <= sample)
    assert np.all((shares >= 1) == (sample >= 1))  # a group with a sample draws a list


def test_a_group_draws_in_proportion_to_its_sample() -> None:
    shares = _shares(np.array([600, 300, 100]), 100)
    assert shares.tolist() == [60, 30, 10]
