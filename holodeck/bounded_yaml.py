"""YAML parsed with limits: aliases may not expand past a small budget, values not nest deeply.

PyYAML's safe loader is safe from code execution, not from size: a few hundred bytes of
aliases referring to aliases (a "billion laughs") load as a small shared structure that every
later walk (``${VAR}`` substitution, validation, turning front-matter tags into strings)
expands to billions of values, and a value nested a few thousand levels deep ends in a bare
RecursionError. agent.yaml, config.yaml, test-case files and markdown front matter are all
read here, so each limit is refused with the line it was hit on, before anything walks it.

Configuration is also read with unique keys: YAML says a mapping's keys are unique, and PyYAML
keeps the last of a repeated key without a word, so ``source: docs`` then ``source: /etc``
would read /etc while a reader of the file sees docs first.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

KeyPath = tuple[str | int, ...]

#: Deepest nesting of values, aliases included. holodeck's own files need fewer than ten.
MAX_DEPTH = 100
#: Values that aliases may add to a document in total (an alias adds every value under the
#: node it names). Reusing a block of settings in every tool stays far below it.
MAX_ALIAS_VALUES = 10_000


class YAMLLimitError(yaml.MarkedYAMLError):
    """A document over a limit; ``problem`` says which, ``problem_mark`` where."""


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A key given twice in one mapping: ``context_mark`` is the first, ``problem_mark`` the
    repeat, ``path`` the repeated key's place in the document (``("tools", 0, "source")``)."""

    def __init__(
        self, mapping: yaml.MappingNode, first: yaml.Node, repeat: yaml.Node, key: Any
    ) -> None:
        super().__init__(
            "while constructing a mapping",
            first.start_mark,
            f"found duplicate key {key!r}",
            repeat.start_mark,
        )
        self.mapping = mapping
        self.key = repeat.value if isinstance(repeat, yaml.ScalarNode) else str(key)
        self.path: KeyPath = (self.key,)


class BoundedLoader(yaml.SafeLoader):
    """``SafeLoader`` that measures every node as it is composed and refuses what is too big,
    and, with ``unique_keys``, a key given twice in one mapping.

    Each node's expanded size (values under it, aliases counted in full) and height are kept
    by node, so an alias costs one lookup and the whole check stays linear in the text.
    """

    def __init__(
        self, stream: str, max_alias_values: int = MAX_ALIAS_VALUES, unique_keys: bool = False
    ) -> None:
        super().__init__(stream)
        self.max_alias_values = max_alias_values
        self.unique_keys = unique_keys
        self._depth = 0
        self._alias_values = 0
        self._measure: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height)
        #: Each mapping's keys as written: a merge (``<<: *base``) puts base's pairs into the
        #: node itself when it is constructed, and those may repeat its own keys on purpose.
        self._own_keys: dict[int, list[yaml.Node]] = {}

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
        if isinstance(node, yaml.MappingNode) and self.unique_keys:
            self._own_keys[id(node)] = [key for key, _ in node.value]
        sizes = [self._measure[id(child)] for child in children]
        height = 1 + max((h for _, h in sizes), default=0)
        if height > MAX_DEPTH:  # deep through aliases of deep values
            raise YAMLLimitError(None, None, _too_deep(), mark)
        self._measure[id(node)] = (1 + sum(n for n, _ in sizes), height)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """The mapping, refusing a key written twice in it (merged keys are not written)."""
        if self.unique_keys and isinstance(node, yaml.MappingNode):
            seen: dict[Any, yaml.Node] = {}
            for key_node in self._own_keys.get(id(node), []):
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, Hashable):
                    continue  # refused by the base class, with its own message
                if key in seen:
                    raise DuplicateKeyError(node, seen[key], key_node, key)
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _too_deep() -> str:
    return f"values nested more than {MAX_DEPTH} levels deep (aliases included)"


def load_bounded(
    text: str, max_alias_values: int = MAX_ALIAS_VALUES, *, unique_keys: bool = False
) -> tuple[Any, yaml.Node | None]:
    """The value of one YAML document and its node tree (for line numbers), parsed once.

    Raises ``YAMLLimitError`` over a limit, ``DuplicateKeyError`` for a key given twice in
    a mapping (with ``unique_keys``), another ``yaml.YAMLError`` for invalid YAML.
    """
    loader = BoundedLoader(text, max_alias_values, unique_keys)
    try:
        node = loader.get_single_node()
        try:
            data = loader.construct_document(node) if node is not None else None
        except DuplicateKeyError as exc:
            exc.path = (*_path_to(node, exc.mapping), exc.key)
            raise
    finally:
        loader.dispose()
    return data, node


def _path_to(root: yaml.Node | None, target: yaml.Node) -> KeyPath:
    """Keys and indexes from ``root`` down to ``target`` (each node visited once)."""
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())] if root is not None else []
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else "?"
                stack.append((value, (*path, name)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
    return ()
