"""Test-time strategies, one per file (installed as `ttscale.strategies`; registered in `ttscale.STRATEGIES`)."""
