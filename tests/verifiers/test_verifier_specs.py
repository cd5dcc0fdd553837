"""A verifier spec's grammar (ttscale.search.specs): a value in parentheses is taken whole, so a nested verifier (GRM's
meta RM) takes options of its own; every spec written before groups existed parses as it did; malformed and unknown
specs are refused in one line, naming what is allowed."""

from __future__ import annotations

import pytest

from ttscale.registry import UnknownNameError
from ttscale.search.specs import parse_verifier_spec, render_verifier_spec
from ttscale.verifiers.grm import GRM
from ttscale.verifiers.loading import build_verifier, check_verifier_spec


def _before_groups(spec: str) -> tuple[str, dict[str, str]]:
    """The parser as it was before groups (commit f077289's ttscale/search/score.py), for comparison."""
    name, _, rest = spec.partition(":")
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"verifier options must look like key=value, got {item!r} in {spec!r}")
        options[key.strip()] = value.strip()
    if not name.strip():
        raise ValueError(f"verifier spec must start with a name, got {spec!r}")
    return name.strip(), options


WRITTEN = [  # specs from README, the tests and the benchmarks, and edge cases of the old form
    "prm", "arithmetic", "llm_judge", "grm:samples=4", "grm:samples=8,meta=llm_judge,meta_top=4",
    "prm:model=Qwen/Qwen2.5-Math-PRM-7B,gpu_memory_utilization=0.3,max_model_len=4096,engine_args=max_num_seqs=64",
    "genrm:verifications=4,max_tokens=128", "noisy_oracle:noise=0.3, seed=2", " prm : model = x , agg=min ,",
    "prm:url=a=b", "prm:step_tag=a(b)", "prm:tag=a)b,x=1", "prm:tag=x(", "grm:meta=prm:model=x", "prm:a=1,a=2",
    "prm:system=", "deepseek_grm:samples=2",
]


@pytest.mark.parametrize("spec", WRITTEN)
def test_every_spec_written_before_groups_parses_as_it_did(spec: str) -> None:
    assert parse_verifier_spec(spec) == _before_groups(spec)


@pytest.mark.parametrize("spec", ["prm:model", "prm: =x", " :a=b"])
def test_malformed_specs_are_refused_as_before(spec: str) -> None:
    with pytest.raises(ValueError) as now:
        parse_verifier_spec(spec)
    with pytest.raises(ValueError) as before:
        _before_groups(spec)
    assert str(now.value) == str(before.value)


def test_a_value_in_parentheses_is_taken_whole_and_groups_nest() -> None:
    # Before groups, the first spec gave grm an option `aggregate` (refused) and meta the text "(prm:model=DIR".
    assert parse_verifier_spec("grm:samples=4,meta=(prm:model=DIR,aggregate=min),meta_top=2") == (
        "grm", {"samples": "4", "meta": "prm:model=DIR,aggregate=min", "meta_top": "2"})
    assert parse_verifier_spec("grm:meta=(grm:samples=2,meta=(prm:model=DIR,aggregate=min)),samples=4") == (
        "grm", {"meta": "grm:samples=2,meta=(prm:model=DIR,aggregate=min)", "samples": "4"})
    assert parse_verifier_spec("grm:meta= ( llm_judge ) ") == ("grm", {"meta": "llm_judge"})
    assert parse_verifier_spec("prm:step_tag=((x))") == ("prm", {"step_tag": "(x)"})  # a value that begins with (


def test_render_writes_what_parse_reads_back() -> None:
    for name, options in [("grm", {"samples": "4", "meta": "prm:model=DIR,aggregate=min"}), ("prm", {}),
                          ("prm", {"step_tag": "(x)", "model": "a(b)"}), ("grm", {"meta": "grm:meta=(prm:a=1,b=2)"})]:
        assert parse_verifier_spec(render_verifier_spec(name, options)) == (name, options)
    assert render_verifier_spec("grm", {"samples": "4", "meta": "prm:a=1,b=2"}) == "grm:samples=4,meta=(prm:a=1,b=2)"
    with pytest.raises(ValueError, match="no verifier spec can write"):
        render_verifier_spec("prm", {"tag": "a,b)"})


@pytest.mark.parametrize(("spec", "message"), [
    ("grm:meta=(prm:model=DIR,aggregate=min", "the '(' opening option 'meta''s value is never closed"),
    ("grm:meta=(prm:model=DIR)x,samples=2", "option 'meta' has 'x' after the ')' closing its value"),
    ("grm:meta=(llm_judge:bogus=1)", "grm's option meta: verifier llm_judge has no option 'bogus' (its options: "
                                     "default)"),
    ("grm:k=4", "verifier grm has no option 'k' (its options: group, max_tokens, meta, meta_top, samples, shuffle, "
                "temperature)"),
    ("grm:meta=(grm:meta=(prm:x=1))", "grm's option meta: grm's option meta: verifier prm has no option 'x'"),
])
def test_malformed_or_unknown_nested_specs_are_one_line(spec: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        check_verifier_spec(spec)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_an_unknown_meta_rm_is_refused_when_the_grm_is_built() -> None:
    with pytest.raises(UnknownNameError, match="grm's option meta: unknown verifier 'nosuch'"):
        check_verifier_spec("grm:meta=nosuch")
    with pytest.raises(UnknownNameError, match="unknown verifier 'nosuch'"):
        GRM(meta="nosuch")
    built = build_verifier("deepseek_grm:samples=2,meta=(prm:model=DIR,aggregate=min),meta_top=1")
    assert isinstance(built, GRM)
    assert (built.samples, built.meta, built.meta_top) == (2, "prm:model=DIR,aggregate=min", 1)
