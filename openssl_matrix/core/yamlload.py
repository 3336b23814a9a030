"""YAML with limits: the one loader for matrix files, report specs and patch metadata.

A hand-written matrix uses anchors, aliases and merge keys (``<<: *defaults``) now and
then; it never needs a document of megabytes, a nesting a hundred levels deep, or an
alias that expands into millions of nodes ("billion laughs"). Those are refused before
anything walks the document:

* ``MAX_BYTES`` (1 MiB) of UTF-8 text, the same cap as the readers' (:data:`TOO_LARGE`);
* ``MAX_DEPTH`` levels of nested mappings and lists;
* ``MAX_ALIASES`` alias references, and ``MAX_NODES`` nodes once every alias is
  expanded (counted on the node graph, each shared node once: linear time);
* an alias inside the value it names (``a: &a [*a]``), which would never end;
* a mapping with the same key twice is refused with both lines and its key path (PyYAML
  would keep the last one silently), checked as the document is read, before any alias
  is followed.

Errors are :class:`YamlProblem` with a short message (never the offending text in full);
callers wrap it in their own error naming the file.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 1 << 20
#: What a file larger than MAX_BYTES is told, whether found by its reader or here.
TOO_LARGE = (f"larger than {MAX_BYTES} bytes (1 MiB), the most YAML this tool reads (a "
             "hand-written file is far smaller)")
MAX_DEPTH = 40
MAX_ALIASES = 1000
MAX_NODES = 100_000


class YamlProblem(Exception):
    """The text is not YAML this tool reads; ``str()`` is a one-line reason."""

    def __init__(self, message: str, *, keypath: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.keypath = keypath


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader with depth and alias limits while composing, duplicate keys refused."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._path: list[str] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YamlProblem(f"more than {MAX_ALIASES} alias references (line "
                                  f"{mark.line + 1}); this tool reads hand-written files")
        self._depth += 1
        if isinstance(index, yaml.ScalarNode):
            self._path.append(f".{_short(index.value, 40, quote=False)}")
        elif isinstance(index, int) and not isinstance(index, bool):
            self._path.append(f"[{index}]")
        else:
            self._path.append("")
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YamlProblem(f"nested more than {MAX_DEPTH} levels deep (line "
                                  f"{mark.line + 1})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._path.pop()

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        """Refuse the same key twice in one mapping, as written (before merge keys are
        applied: ``<<: *base`` followed by a key of base is an override, not a repeat)."""
        node: yaml.MappingNode = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, str], int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or \
                    key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = (key_node.tag, key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise YamlProblem(f"duplicate key {_short(key_node.value)} (line {line}; "
                                  f"first at line {seen[key]})",
                                  keypath="".join(self._path).lstrip("."))
            seen[key] = line
        return node

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node)
        return super().construct_document(node)


def _short(value: Any, limit: int = 60, *, quote: bool = True) -> str:
    text = repr(str(value)) if quote else str(value)
    return text if len(text) <= limit else f"{text[:limit]}…"


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand to more than MAX_NODES nodes, or refer to
    the value that holds them (``a: &a [*a]``: a value without end, which would hang
    whatever walks it)."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()  # the nodes on the current path from the root
    # iterative post-order over the node graph; each node's expanded size once
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if done:
            open_.discard(id(node))
            total = 1 + sum(sizes.get(id(c), 0) for c in children)
            sizes[id(node)] = total
            if total > MAX_NODES:
                raise YamlProblem(f"the document expands to more than {MAX_NODES} values "
                                  f"through aliases (line {node.start_mark.line + 1}); "
                                  "this tool reads hand-written files")
            continue
        open_.add(id(node))
        stack.append((node, True))
        for c in children:
            if id(c) in open_:
                raise YamlProblem(f"an alias refers to the value that holds it (line "
                                  f"{node.start_mark.line + 1}): it would never end")
            if id(c) not in sizes:
                stack.append((c, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load_yaml(text: str) -> Any:
    """The one document in ``text``, within the limits above; YamlProblem otherwise."""
    size = len(text) if len(text) > MAX_BYTES else len(text.encode("utf-8", "replace"))
    if size > MAX_BYTES:
        raise YamlProblem(f"the file is {size} bytes or more, {TOO_LARGE}")
    loader: _LimitedLoader | None = None
    try:
        loader = _LimitedLoader(text)
        return loader.get_single_data()
    except YamlProblem:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = str(getattr(exc, "problem", None) or exc or "invalid YAML")[:200]
        raise YamlProblem(f"YAML syntax error{where}: {problem}") from None
    except RecursionError:
        raise YamlProblem(f"nested more than {MAX_DEPTH} levels deep") from None
    finally:
        if loader is not None:
            loader.dispose()
