"""Numbers written with a decimal suffix, such as `8k`, `1.5M`, `8.19B` or `3e15eflop`: one reader for the package.

Budgets (`ttscale.budget.Budget.parse`, a unit may follow) and the cost command's counts (`ttscale cost`,
signed numbers, no unit) both read them here; each caller words its own error for what does not parse.
"""

from __future__ import annotations

import decimal
import re
from decimal import Decimal

_QUANTITY = re.compile(
    r"^\s*(?P<num>[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"\s*(?P<mult>[kKMGBT]?)\s*(?P<unit>[a-zA-Z]*)\s*$"
)
#: Suffix → power of ten. B (billion) is G, as model sizes are written (8.19B parameters).
SUFFIXES = {"": 0, "k": 3, "K": 3, "M": 6, "G": 9, "B": 9, "T": 12}


def parse_quantity(
    text: str, *, signed: bool = False, unit: bool = False, suffixes: str = "".join(SUFFIXES)
) -> tuple[float, str] | None:
    """`(value, unit)` for a number with an optional suffix of `SUFFIXES`, or None when `text` is not one.

    `signed`: a leading + or − is allowed. `unit`: letters may follow the suffix (returned as written, `""`
    when none); without it, any trailing letters make the text unreadable. `suffixes`: the suffix letters this
    caller reads as multipliers; another letter of `SUFFIXES` starts the unit instead (budgets leave T out:
    `512Tokens` is 512 tokens, and `1T` is refused as an unknown unit, as it always was). The suffix is
    applied in decimal so that `8.19B` is exactly 8.19e9; a value beyond float range is ±inf (or 0), for the
    caller to refuse.
    """
    match = _QUANTITY.match(text)
    if not match or (not signed and match["num"][0] in "+-"):
        return None
    mult, written = match["mult"], match["unit"]
    if mult not in suffixes:
        mult, written = "", mult + written
    if written and not unit:
        return None
    try:
        value = float(Decimal(match["num"]).scaleb(SUFFIXES[mult]))
    except decimal.DecimalException:  # an exponent past Decimal's range, e.g. 1e99999999999999999999
        value = float(match["num"]) * 10.0 ** SUFFIXES[mult]
    return value, written


__all__ = ["SUFFIXES", "parse_quantity"]
