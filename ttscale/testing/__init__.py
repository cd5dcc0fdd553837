"""Simulators for testing and benchmarking without a model: named as such, never a stand-in for vLLM in a claim.

`LatencyEngine` (the Engine protocol over a scripted policy, timed by a `LatencyModel`: zero-cost for the
harness's ceiling, or a rate model of a GPU engine) lives in `ttscale.testing.latency`.
"""

from ttscale.testing.latency import LatencyEngine, LatencyModel

__all__ = ["LatencyEngine", "LatencyModel"]
