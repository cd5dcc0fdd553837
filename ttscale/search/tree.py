"""The search tree: every node is its parent's token prefix plus one step.

Nodes keep token ids, not only text, so a child's prompt is byte-for-byte its parent's prompt
followed by the step the engine produced (the prefix cache hits; nothing is re-tokenised).

Unique KV tokens. The tree also keeps a token trie of every prefix it has seen. The KV a search
holds at a moment is the union of the prefixes of its live nodes; with the trie, that union is
counted exactly at token level (two siblings that start with the same tokens share them, as
their KV does), by walking up from each live node's end until an already counted edge. The trie
is a radix trie: an edge is a run of tokens, split only where two prefixes part. A step is one
edge (no Python object per token), and a count costs O(distinct edges), not O(tokens).
This is ETS's `global_kv_size`, in tokens, prompt included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ttscale.search.steps import Finish, split_steps

_NO_TOKEN = 0  # trie index of the empty prefix (a sentinel that is not a token)


@dataclass(eq=False)
class Node:
    """One node of the search tree (identity semantics: two nodes with the same text are two nodes)."""

    id: int
    parent: Node | None
    token_ids: tuple[int, ...]
    """This node's own tokens: the prompt for the root, one step (delimiter tokens included) otherwise."""
    text: str = ""
    """The step's text as the engine returned it (a matched delimiter is not in it); '' for the root."""
    separator: str = ""
    """What follows the step in the solution text: the delimiter when the step stopped on it, else ''."""
    depth: int = 0
    """Steps from the root (the root is 0, its children 1)."""
    generated: int = 0
    """Tokens generated on the path from the root to this node (the prompt not included)."""
    finish: Finish = "open"
    children: list[Node] = field(default_factory=list)
    step_scores: tuple[float, ...] | None = None
    """The verifier's score of every step of the path (filled by `Search.score`)."""
    value: float | None = None
    """The step scores aggregated into one number (last / min / prod / mean)."""
    logprob: float | None = None
    """The step's mean token log-probability under the policy, when the search asked for it (Search(logprobs=True))."""
    kv_end: int = _NO_TOKEN
    """Index, in the tree's token trie, of the edge that ends with the path's last token."""
    split_at: str | None = None
    """For a node generated to the end of its solution in one request (search-and-learn's last iteration):
    the delimiter its text is cut at into the steps a verifier scores, as search-and-learn re-splits
    completions. None: the node is one step."""

    @property
    def terminal(self) -> bool:
        """True when the node can no longer be extended (its solution ended, or a limit cut it)."""
        return self.finish != "open"

    @property
    def complete(self) -> bool:
        """True when the policy ended the solution itself (EOS)."""
        return self.finish == "stop"

    def path(self) -> list[Node]:
        """The nodes from the root's child down to this node (the root excluded)."""
        nodes: list[Node] = []
        node: Node | None = self
        while node is not None and node.parent is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]

    def steps(self) -> list[str]:
        """The texts of the path's steps, in order: what a process verifier scores (a node run to the end of
        its solution contributes each of its steps, so min / prod / mean see them as a step search would)."""
        out: list[str] = []
        for node in self.path():
            pieces = split_steps(node.text, delimiter=node.split_at) if node.split_at else []
            out.extend(pieces or [node.text])
        return out

    def solution(self) -> str:
        """The solution text so far: each step followed by the delimiter it ended on (none after the last)."""
        path = self.path()
        if not path:
            return ""
        return "".join(node.text + node.separator for node in path[:-1]) + path[-1].text

    def ancestors(self) -> list[Node]:
        """Parent, grandparent, ... up to and including the root."""
        out: list[Node] = []
        node = self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out


class Tree:
    """The nodes of one problem's search, with exact unique-KV accounting over a token trie."""

    def __init__(self, prompt_ids: Sequence[int]) -> None:
        # The radix trie as three parallel arrays: parent edge, the edge's tokens, and children by
        # their first token. Index 0 is the empty prefix; every other index is a run of tokens that
        # all prefixes through it share, ending where a node ends or where two prefixes part.
        self._trie_parent: list[int] = [_NO_TOKEN]
        self._trie_edge: list[tuple[int, ...]] = [()]
        self._trie_children: list[dict[int, int]] = [{}]
        self._held: list[LivePrefixes] = []  # kept up to date when an edge is split
        self.root = Node(id=0, parent=None, token_ids=tuple(prompt_ids))
        self.root.kv_end = self._insert(_NO_TOKEN, self.root.token_ids)
        self.nodes: list[Node] = [self.root]
        self.kv_per_step: list[int] = []
        """Unique KV tokens at each observation (one per expansion round)."""
        self.peak_kv = 0
        self.reference_kv_per_round: list[int] = []
        """The ETS reference code's KV at each selection (`reference_kv`); its sum is the paper's metric."""

    # -- building ---------------------------------------------------------------------------------
    def add(
        self,
        parent: Node,
        token_ids: Sequence[int],
        *,
        text: str,
        separator: str = "",
        finish: Finish = "open",
        split_at: str | None = None,
    ) -> Node:
        """A new child of `parent` made of one step (or of several, cut at `split_at` for scoring)."""
        if parent.terminal:
            raise ValueError(f"node {parent.id} is terminal ({parent.finish}); it has no children")
        child = Node(
            id=len(self.nodes),
            parent=parent,
            token_ids=tuple(token_ids),
            text=text,
            separator=separator,
            depth=parent.depth + 1,
            generated=parent.generated + len(token_ids),
            finish=finish,
            split_at=split_at,
        )
        child.kv_end = self._insert(parent.kv_end, child.token_ids)
        parent.children.append(child)
        self.nodes.append(child)
        return child

    def path_ids(self, node: Node) -> list[int]:
        """The full token sequence of `node`: the prompt followed by every step of its path."""
        parts: list[tuple[int, ...]] = []
        current: Node | None = node
        while current is not None:
            parts.append(current.token_ids)
            current = current.parent
        return [token for part in reversed(parts) for token in part]

    # -- KV accounting ----------------------------------------------------------------------------
    def unique_tokens(self, nodes: Iterable[Node]) -> int:
        """Tokens in the union of the full prefixes (prompt included) of `nodes`."""
        seen: set[int] = set()
        edge, parent = self._trie_edge, self._trie_parent
        total = 0
        for node in nodes:
            index = node.kv_end
            while index != _NO_TOKEN and index not in seen:
                seen.add(index)
                total += len(edge[index])
                index = parent[index]
        return total

    def observe(self, live: Iterable[Node], *, held: LivePrefixes | None = None) -> int:
        """Record the KV the search holds now (the union of the prefixes of `live` and of `held`); returns it."""
        size = self.unique_tokens(live) if held is None else held.union_with(live)
        self.kv_per_step.append(size)
        self.peak_kv = max(self.peak_kv, size)
        return size

    def reference_kv(self, candidates: Iterable[Node]) -> int:
        """The KV the ETS paper reports for one selection round (SqueezeAILab/ETS `Tree.get_kv_size`).

        Per node, not per token prefix: each candidate's own step tokens, plus the step tokens of every
        distinct ancestor, the prompt left out (the reference's root counts the length of a tokenizer's
        output dict, 2, not the prompt). Identical sibling steps are two nodes and count twice; a candidate
        that the selection prunes still counts (the reference sums over all candidates of the round).
        """
        own = 0
        ancestors: dict[int, int] = {}
        for node in candidates:
            own += len(node.token_ids)
            for up in node.ancestors():
                if up.parent is not None:  # the root: the prompt, left out
                    ancestors[up.id] = len(up.token_ids)
        size = own + sum(ancestors.values())
        self.reference_kv_per_round.append(size)
        return size

    # -- reporting --------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        per_depth: list[int] = []
        for node in self.nodes[1:]:
            while len(per_depth) < node.depth:
                per_depth.append(0)
            per_depth[node.depth - 1] += 1
        return {
            "steps": len(self.kv_per_step),
            "nodes": len(self.nodes) - 1,
            "nodes_per_depth": per_depth,
            "complete": sum(node.complete for node in self.nodes),
            "unique_kv_tokens": self.kv_per_step[-1] if self.kv_per_step else 0,
            "peak_unique_kv_tokens": self.peak_kv,
            "unique_kv_tokens_per_step": list(self.kv_per_step),
            "reference_kv_tokens": sum(self.reference_kv_per_round),
            "reference_kv_tokens_per_round": list(self.reference_kv_per_round),
        }

    # -- internals --------------------------------------------------------------------------------
    def _insert(self, start: int, tokens: Sequence[int]) -> int:
        """Index of the edge that ends `tokens` appended to the prefix ending at `start` (made if new)."""
        index, rest = start, tuple(tokens)
        while rest:
            child = self._trie_children[index].get(rest[0])
            if child is None:  # the usual case for a fresh step: one new edge, whole
                return self._new_edge(index, rest)
            edge = self._trie_edge[child]
            shared = len(edge) if rest[: len(edge)] == edge else _common_length(edge, rest)
            if shared < len(edge):
                child = self._split(child, shared)
            index, rest = child, rest[shared:]
        return index

    def _new_edge(self, parent: int, tokens: tuple[int, ...]) -> int:
        index = len(self._trie_parent)
        self._trie_parent.append(parent)
        self._trie_edge.append(tokens)
        self._trie_children.append({})
        self._trie_children[parent][tokens[0]] = index
        return index

    def _split(self, index: int, at: int) -> int:
        """Cut edge `index` after `at` tokens; returns the new upper edge. The lower part keeps the index,
        so a node that ended with the whole edge still ends with it."""
        edge = self._trie_edge[index]
        upper = self._new_edge(self._trie_parent[index], edge[:at])  # replaces `index` under the parent
        self._trie_children[upper][edge[at]] = index
        self._trie_parent[index] = upper
        self._trie_edge[index] = edge[at:]
        for held in self._held:
            held.split(index, upper)
        return upper


def _common_length(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    shared, limit = 0, min(len(a), len(b))
    while shared < limit and a[shared] == b[shared]:
        shared += 1
    return shared


class LivePrefixes:
    """The union of the full prefixes of a set of nodes that changes a few nodes at a time, kept up to date in
    O(depth) per change: for a search whose live set is most of its tree (MCTS's leaves waiting to be expanded),
    where `Tree.unique_tokens` of the whole set at every expansion would cost O(tree) each, O(tree²) in all."""

    def __init__(self, tree: Tree) -> None:
        self._tree = tree
        tree._held.append(self)
        self._count: dict[int, int] = {}  # trie edge → live nodes whose prefix holds it
        self._nodes: dict[int, Node] = {}
        self.tokens = 0
        """Tokens in the union of the live nodes' prefixes (prompt included)."""

    def __contains__(self, node: Node) -> bool:
        return node.id in self._nodes

    def add(self, node: Node) -> None:
        if node.id in self._nodes:
            return
        self._nodes[node.id] = node
        index = node.kv_end
        while index != _NO_TOKEN:
            held = self._count.get(index, 0)
            if not held:
                self.tokens += len(self._tree._trie_edge[index])
            self._count[index] = held + 1
            index = self._tree._trie_parent[index]

    def discard(self, node: Node) -> None:
        if self._nodes.pop(node.id, None) is None:
            return
        index = node.kv_end
        while index != _NO_TOKEN:
            held = self._count[index] - 1
            if held:
                self._count[index] = held
            else:
                del self._count[index]
                self.tokens -= len(self._tree._trie_edge[index])
            index = self._tree._trie_parent[index]

    def split(self, lower: int, upper: int) -> None:
        """Edge `lower` was cut and `upper` now leads to it: every prefix through one goes through the other."""
        if lower in self._count:
            self._count[upper] = self._count[lower]

    def union_with(self, extra: Iterable[Node]) -> int:
        """Tokens in the union of the live prefixes and those of `extra` (which stay out of the set)."""
        total, seen = self.tokens, set()
        edge, parent = self._tree._trie_edge, self._tree._trie_parent
        for node in extra:
            index = node.kv_end
            while index != _NO_TOKEN and index not in seen and index not in self._count:
                seen.add(index)
                total += len(edge[index])
                index = parent[index]
        return total
