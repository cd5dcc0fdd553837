"""ttscale.search.tree: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

from ttscale.search.tree import Tree


def test_a_fresh_tree() -> None:
    tree = Tree([1, 2, 3])
    assert tree.root.id == 0 and tree.root.depth == 0
    assert tree.root.solution() == "" and tree.root.steps() == []
    assert tree.peak_kv == 0
    stats = tree.stats()
    assert stats["unique_kv_tokens"] == 0 and stats["peak_unique_kv_tokens"] == 0
    assert stats["complete"] == 0 and stats["nodes"] == 0


def test_solution_joins_steps_with_their_separators() -> None:
    tree = Tree([1])
    a = tree.add(tree.root, [2, 3], text="a", separator="\n\n")
    b = tree.add(a, [4], text="b", separator="\n\n")
    assert a.solution() == "a"
    assert b.solution() == "a\n\nb"  # no separator after the last step
    assert tree.root.children == [a] and a.children == [b]
    assert [n.id for n in tree.nodes] == [0, 1, 2]


def test_a_node_run_to_the_end_is_split_at_its_own_delimiter() -> None:
    tree = Tree([1])
    node = tree.add(tree.root, [2, 3, 4], text="x||y", split_at="||", finish="stop")
    assert node.steps() == ["x", "y"]
    plain = tree.add(tree.root, [5], text="p\n\nq")
    assert plain.steps() == ["p\n\nq"]  # one step: no split


def test_stats_counts_complete_nodes() -> None:
    tree = Tree([1])
    tree.add(tree.root, [2], text="a", finish="stop")
    tree.add(tree.root, [3], text="b", finish="length")
    tree.add(tree.root, [4], text="c", finish="stop")
    tree.observe(tree.nodes[1:])
    stats = tree.stats()
    assert stats["complete"] == 2
    assert stats["nodes"] == 3 and stats["nodes_per_depth"] == [3]
    assert stats["unique_kv_tokens"] == 4 and stats["peak_unique_kv_tokens"] == 4  # prompt 1 + 3 steps
