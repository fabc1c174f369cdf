"""Exception types of meshrt; every one is a ValueError naming the field at fault.

They live in one module below everything else so that each layer can raise
them without importing the layers above it.
"""

__all__ = ["MeshError", "ShardingError", "CollectiveError", "MLIRError"]


class MeshError(ValueError):
    """An invalid mesh shape, axis, device index or communicator."""


class ShardingError(ValueError):
    """An invalid sharding field, text form, or a shape it cannot shard."""


class CollectiveError(ValueError):
    """Invalid collective input, or arguments that disagree across a device group."""


class MLIRError(ValueError):
    """MLIR text that cannot be read, verified or run; the message starts with ``file:line:col:``."""
