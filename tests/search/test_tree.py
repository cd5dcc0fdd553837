"""Steps and the tree, without any engine: step ends, exact prefixes, unique-KV accounting vs brute force."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttscale.schema import Completion
from ttscale.search import Node, Tree, split_steps, step_end
from ttscale.search.steps import unescape


def test_split_steps_on_the_default_and_a_custom_delimiter() -> None:
    assert split_steps("a = 1\n\nb = 2\n\n\n\nc") == ["a = 1", "b = 2", "c"]
    assert split_steps("Step 1: x ## Step 2: y", delimiter="##") == ["Step 1: x ", " Step 2: y"]
    assert split_steps("") == []
    with pytest.raises(ValueError, match="non-empty"):
        split_steps("x", delimiter="")


def test_unescape_reads_command_line_escapes() -> None:
    assert unescape("\\n\\n") == "\n\n"
    assert unescape("<step>") == "<step>"


def _decode(ids: tuple[int, ...] | list[int]) -> str:
    return "".join("<eos>" if t == 0 else chr(t) for t in ids)


def _ids(text: str) -> tuple[int, ...]:
    return tuple(ord(c) for c in text)


@pytest.mark.parametrize(
    ("text", "ids", "reason", "expected"),
    [
        ("3 + 4 = 7", _ids("3 + 4 = 7\n\n"), "stop", ("\n\n", "open")),  # stopped on the delimiter
        ("3 + 4 = 7", (*_ids("3 + 4 = 7"), 0), "stop", ("", "stop")),  # EOS: the solution ended
        ("3 + 4 =", _ids("3 + 4 ="), "length", ("", "open")),  # token-count fallback
        ("3 +", _ids("3 +"), "abort", ("", "length")),
    ],
)
def test_step_end_tells_delimiter_from_eos(
    text: str, ids: tuple[int, ...], reason: str, expected: tuple[str, str]
) -> None:
    completion = Completion(text=text, token_ids=ids, finish_reason=reason)  # type: ignore[arg-type]
    assert step_end(completion, delimiter="\n\n", decode=_decode) == expected


def test_children_are_exact_token_prefix_extensions() -> None:
    tree = Tree([1, 2, 3])
    a = tree.add(tree.root, [4, 5, 10, 10], text="ab", separator="\n\n")
    b = tree.add(a, [6, 0], text="c", finish="stop")
    assert tree.path_ids(b) == [1, 2, 3, 4, 5, 10, 10, 6, 0]
    assert tree.path_ids(b)[: len(tree.path_ids(a))] == tree.path_ids(a)
    assert (b.depth, b.generated, b.complete, b.terminal) == (2, 6, True, True)
    assert b.steps() == ["ab", "c"] and b.solution() == "ab\n\nc"
    assert b.ancestors() == [a, tree.root] and b.path() == [a, b]
    with pytest.raises(ValueError, match="terminal"):
        tree.add(b, [7], text="d")


def test_a_token_count_cut_joins_without_a_separator() -> None:
    tree = Tree([1])
    a = tree.add(tree.root, [2, 3], text="12 + ")  # cut by step_tokens: no delimiter
    b = tree.add(a, [4], text="3 = 15")
    assert b.solution() == "12 + 3 = 15"


def test_unique_tokens_share_prompt_and_common_step_prefixes() -> None:
    tree = Tree([1, 2, 3, 4])
    a = tree.add(tree.root, [5, 6, 7], text="")
    b = tree.add(tree.root, [5, 6, 8], text="")  # shares [5, 6] with a
    c = tree.add(a, [9], text="")
    assert tree.unique_tokens([a]) == 7
    assert tree.unique_tokens([a, b]) == 8
    assert tree.unique_tokens([a, b, c]) == 9
    assert tree.unique_tokens([c, c, a]) == 8
    assert tree.unique_tokens([]) == 0
    assert tree.observe([a, b]) == 8 and tree.observe([c]) == 8 and tree.observe([a]) == 7
    stats = tree.stats()
    assert stats["peak_unique_kv_tokens"] == 8 and stats["unique_kv_tokens"] == 7
    assert stats["unique_kv_tokens_per_step"] == [8, 8, 7] and stats["steps"] == 3
    assert stats["nodes"] == 3 and stats["nodes_per_depth"] == [2, 1]


def _brute_force_union(tree: Tree, live: list[Node]) -> int:
    prefixes: set[tuple[int, ...]] = set()
    for node in live:
        ids = tuple(tree.path_ids(node))
        prefixes.update(ids[: i + 1] for i in range(len(ids)))
    return len(prefixes)


@settings(max_examples=150, deadline=None)
@given(
    prompt=st.lists(st.integers(0, 3), min_size=0, max_size=6),
    steps=st.lists(
        st.tuples(st.integers(0, 1000), st.lists(st.integers(0, 3), min_size=1, max_size=5)), max_size=25
    ),
    live_picks=st.lists(st.integers(0, 1000), max_size=12),
)
def test_unique_kv_equals_the_brute_force_union_of_prefixes(
    prompt: list[int], steps: list[tuple[int, list[int]]], live_picks: list[int]
) -> None:
    # A tiny alphabet makes shared and identical prefixes (across siblings and across depths) common.
    tree = Tree(prompt)
    for parent_pick, tokens in steps:
        tree.add(tree.nodes[parent_pick % len(tree.nodes)], tokens, text="")
    live = [tree.nodes[i % len(tree.nodes)] for i in live_picks]
    assert tree.unique_tokens(live) == _brute_force_union(tree, live)
    assert tree.unique_tokens(tree.nodes) == _brute_force_union(tree, tree.nodes)


def test_reference_kv_counts_nodes_as_the_ets_reference_code_does() -> None:
    # prompt (5 tokens) -> a (3) -> {b (2), c (4)}; a -> d (1) -> e (6); and f (3), a sibling of a
    # whose step is the same tokens as a: the reference counts it as a node of its own.
    tree = Tree(_ids("Q: 1?"))
    a = tree.add(tree.root, _ids("a=1"), text="a=1")
    b = tree.add(a, _ids("b="), text="b=")
    c = tree.add(a, _ids("c=12"), text="c=12")
    d = tree.add(a, _ids("d"), text="d")
    e = tree.add(d, _ids("e=1234"), text="e=1234")
    f = tree.add(tree.root, _ids("a=1"), text="a=1")
    # By hand, the reference's rule: the candidates' own steps + each distinct ancestor's step, no prompt.
    # Round 1 over {b, c, e, f}: own 2 + 4 + 6 + 3 = 15; ancestors a (3) and d (1), once each = 4.
    assert tree.reference_kv([b, c, e, f]) == 19
    # Round 2 over {c}: own 4 + ancestor a 3 = 7. A candidate listed twice counts twice (per candidate).
    assert tree.reference_kv([c]) == 7
    assert tree.reference_kv([c, c]) == 11
    # A candidate that is another candidate's ancestor counts twice too: as a candidate (its own step) and as
    # an ancestor (the reference keeps leaves in a list and ancestors in a dict): {a, d, e} = 3 + 1 + 6 + a 3 + d 1.
    assert tree.reference_kv([a, d, e]) == 14
    assert tree.stats()["reference_kv_tokens"] == 19 + 7 + 11 + 14
    assert tree.stats()["reference_kv_tokens_per_round"] == [19, 7, 11, 14]
    # Our exact count merges identical prefixes and includes the prompt: f shares a's tokens.
    assert tree.unique_tokens([b, c, e, f]) == 5 + 3 + 2 + 4 + 1 + 6
