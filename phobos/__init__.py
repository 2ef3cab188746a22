"""Phobos: a tile-level GPU kernel language for NVIDIA GPUs, its compiler and runtime.

Kernels are written in `.ph` text or as decorated Python (`import phobos.lang as ph`).
"""

__version__ = "0.1.0"
