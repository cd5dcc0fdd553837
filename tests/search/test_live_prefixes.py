"""`LivePrefixes`: the union of a changing set of nodes' prefixes, kept up to date, equals the brute-force union."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.search.test_tree import _brute_force_union
from ttscale.search import LivePrefixes, Node, Tree


@settings(max_examples=200, deadline=None)
@given(
    prompt=st.lists(st.integers(0, 3), min_size=0, max_size=6),
    changes=st.lists(
        st.tuples(st.sampled_from(["grow", "add", "discard"]), st.integers(0, 1000),
                  st.lists(st.integers(0, 3), min_size=1, max_size=5)),
        max_size=60,
    ),
    extra=st.lists(st.integers(0, 1000), max_size=6),
)
def test_the_kept_union_equals_the_brute_force_one_after_any_adds_discards_and_growth(
    prompt: list[int], changes: list[tuple[str, int, list[int]]], extra: list[int]
) -> None:
    # A tiny alphabet makes shared prefixes common: edges are held by several nodes at once, and a node added
    # later splits edges that held nodes already end on.
    tree = Tree(prompt)
    held = LivePrefixes(tree)
    members: dict[int, Node] = {}
    for change, pick, tokens in changes:
        node = tree.nodes[pick % len(tree.nodes)]
        if change == "grow":
            tree.add(node, tokens, text="")
        elif change == "add":
            held.add(node)  # twice is once
            members[node.id] = node
        else:
            held.discard(node)  # a node not held is no change
            members.pop(node.id, None)
        assert held.tokens == _brute_force_union(tree, list(members.values()))
    others = [tree.nodes[i % len(tree.nodes)] for i in extra]
    union = [*members.values(), *others]
    assert held.union_with(others) == _brute_force_union(tree, union) == tree.unique_tokens(union)
    assert held.tokens == _brute_force_union(tree, list(members.values()))  # the extra ones stay out


def test_a_held_node_whose_edge_a_later_node_splits_is_still_counted_and_released() -> None:
    tree = Tree([0])
    a = tree.add(tree.root, [1, 2, 3], text="")
    held = LivePrefixes(tree)
    held.add(a)
    assert held.tokens == 4  # the prompt and a's 3 tokens
    b = tree.add(tree.root, [1, 2, 9], text="")  # splits a's edge into [1, 2] + [3]
    assert held.union_with([b]) == 5 and held.tokens == 4
    held.add(b)
    held.discard(a)  # walks a's edges, the new upper one included: each still counted for b
    assert held.tokens == 4 == _brute_force_union(tree, [b])
    held.discard(b)
    assert held.tokens == 0
