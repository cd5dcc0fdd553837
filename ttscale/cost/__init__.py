"""The cost model: FLOPs, memory bytes and Kinetics eFLOPs of generating with a given model and accelerator.

    >>> from ttscale.cost import CostModel, ModelShape, load_hardware
    >>> model = CostModel(shape=ModelShape.preset("Qwen3-8B"), hardware=load_hardware("B200"))
    >>> cost = model.expected(prompt_tokens=155, gen_lengths=[9000, 12000], samples=8)
    >>> cost.compute_flops, cost.memory_bytes, cost.eflops  # doctest: +SKIP

`ttscale.cost.meter` holds the ledger's `flop` / `eflop` meters.
"""

from ttscale.cost.hardware import DEFAULT_HARDWARE, Hardware, HardwareError, hardware_names, load_hardware
from ttscale.cost.model import Cost, CostInputError, CostModel, SparseAttention
from ttscale.cost.shapes import ModelShape, ModelShapeError, load_shape, preset_names

__all__ = [
    "DEFAULT_HARDWARE",
    "Cost",
    "CostInputError",
    "CostModel",
    "Hardware",
    "HardwareError",
    "ModelShape",
    "ModelShapeError",
    "SparseAttention",
    "hardware_names",
    "load_hardware",
    "load_shape",
    "preset_names",
]
