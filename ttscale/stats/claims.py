"""The one claim grammar of `ttscale plan --claim` and `ttscale compare --until-decided` (`parse_claim`, also
`ttscale.comparisons.planning.parse_claim`): `better:T`, `equal:M`, `not-worse:M` in points, `ratio:H` in times.
It sits here, beside the Claim it makes, because the planner (above ttscale.comparisons.paired) and the sequential
driver that ttscale.comparisons.paired calls (ttscale.comparisons.until_decided) both read claims through it: in
either of them the other would import upwards.
"""

from __future__ import annotations

from ttscale.stats.power import Claim

_KINDS = {"better": "better", "equal": "equal", "not-worse": "not_worse", "not_worse": "not_worse", "ratio": "ratio"}

#: The claims `parse_claim` reads, in the words its errors give them.
ALLOWED = "better:T, equal:M, not-worse:M (points) or ratio:H (times)"
#: The accuracy claims alone, as a sequential comparison (ttscale.comparisons.until_decided) takes them: its
#: boundaries are for Tango's score statistic, and a cost ratio has none there.
ALLOWED_ACCURACY = "better:T, equal:M or not-worse:M (points; better:0 = the first strategy more accurate)"


def parse_claim(text: str, *, ratio: bool = True, what: str | None = None) -> Claim:
    """`better:T`, `equal:M`, `not-worse:M` (points) or `ratio:H` (times) as a Claim: the one claim grammar of
    `ttscale plan --claim` and `ttscale compare --until-decided`. `ratio=False` refuses a ratio (a sequential
    comparison tests accuracy claims only); `what` names the argument in the one-line error."""
    allowed = ALLOWED if ratio else ALLOWED_ACCURACY
    head = f"{what}: " if what else ""
    kind, _, value = str(text).partition(":")
    name = _KINDS.get(kind.strip())
    if name is None or not value.strip():
        raise ValueError(f"{head}{text!r} is not a claim it can test; give {allowed}")
    if name == "ratio" and not ratio:
        raise ValueError(f"{head}{text!r} is a cost ratio, which has no sequential boundary here; give {allowed}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{head}claim {text!r}: {value.strip()!r} is not a number; give {allowed}") from None
    # In the points the claim was written in (Claim's own bounds are proportions: 0.05 = 5 points).
    if name == "better" and not -100 < number < 100:
        raise ValueError(f"{head}claim {text!r}: better's threshold must be in (-100, 100) points, got {number:g}; "
                         f"give {allowed}")
    if name in ("equal", "not_worse") and not 0 < number < 100:
        raise ValueError(f"{head}claim {text!r}: {kind.strip()}'s margin must be in (0, 100) points, got {number:g}; "
                         f"give {allowed}")
    try:
        return Claim(kind=name, value=number if name == "ratio" else number / 100)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValueError(f"{head}claim {text!r}: {exc}; give {allowed}") from None


def claim_spec(claim: Claim) -> str:
    """`claim` as `parse_claim` reads it back (`--claim`, `--until-decided`): points, or times for a ratio."""
    if claim.kind == "ratio":
        return f"ratio:{claim.value:g}"
    return f"{claim.kind.replace('_', '-')}:{100 * claim.value:g}"


__all__ = ["ALLOWED", "ALLOWED_ACCURACY", "claim_spec", "parse_claim"]
