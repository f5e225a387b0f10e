"""YAML parsed with limits: aliases may not expand past a small budget, values not nest deeply.

PyYAML's safe loader is safe from code execution, not from size: a few hundred bytes of
aliases referring to aliases (a "billion laughs") load as a small shared structure that every
later walk (``${VAR}`` substitution, validation, turning front-matter tags into strings)
expands to billions of values, and a value nested a few thousand levels deep ends in a bare
RecursionError. agent.yaml, config.yaml, test-case files and markdown front matter are all
read here, so each limit is refused with the line it was hit on, before anything walks it.
"""

from __future__ import annotations

from typing import Any

import yaml

#: Deepest nesting of values, aliases included. holodeck's own files need fewer than ten.
MAX_DEPTH = 100
#: Values that aliases may add to a document in total (an alias adds every value under the
#: node it names). Reusing a block of settings in every tool stays far below it.
MAX_ALIAS_VALUES = 10_000


class YAMLLimitError(yaml.MarkedYAMLError):
    """A document over a limit; ``problem`` says which, ``problem_mark`` where."""


class BoundedLoader(yaml.SafeLoader):
    """``SafeLoader`` that measures every node as it is composed and refuses what is too big.

    Each node's expanded size (values under it, aliases counted in full) and height are kept
    by node, so an alias costs one lookup and the whole check stays linear in the text.
    """

    def __init__(self, stream: str, max_alias_values: int = MAX_ALIAS_VALUES) -> None:
        super().__init__(stream)
        self.max_alias_values = max_alias_values
        self._depth = 0
        self._alias_values = 0
        self._measure: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        mark = self.peek_event().start_mark
        if self.check_event(yaml.AliasEvent):
            node = super().compose_node(parent, index)
            if node is None:
                return None
            measured = self._measure.get(id(node))
            if measured is None:  # the anchored node is still being composed: it holds itself
                raise YAMLLimitError(
                    None, None, "an alias refers to a value that contains it (a loop)", mark
                )
            self._alias_values += measured[0]
            if self._alias_values > self.max_alias_values:
                raise YAMLLimitError(
                    None,
                    None,
                    f"aliases expand to more than {self.max_alias_values:,} values (an alias "
                    "bomb?); write the values out or use fewer aliases",
                    mark,
                )
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YAMLLimitError(None, None, _too_deep(), mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is None:
            return None
        if isinstance(node, yaml.SequenceNode):
            children: list[yaml.Node] = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            children = []
        sizes = [self._measure[id(child)] for child in children]
        height = 1 + max((h for _, h in sizes), default=0)
        if height > MAX_DEPTH:  # deep through aliases of deep values
            raise YAMLLimitError(None, None, _too_deep(), mark)
        self._measure[id(node)] = (1 + sum(n for n, _ in sizes), height)
        return node


def _too_deep() -> str:
    return f"values nested more than {MAX_DEPTH} levels deep (aliases included)"


def load_bounded(
    text: str, max_alias_values: int = MAX_ALIAS_VALUES
) -> tuple[Any, yaml.Node | None]:
    """The value of one YAML document and its node tree (for line numbers), parsed once.

    Raises ``YAMLLimitError`` over a limit, another ``yaml.YAMLError`` for invalid YAML.
    """
    loader = BoundedLoader(text, max_alias_values)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node
