"""The target table: which chips PTX is emitted for, at which PTX ISA version, with which features.

A feature is a name the emitter asks for before it uses an instruction that only some
chips have; asking on a chip without it raises `TargetError` (a program that needs a
newer chip), never PTX that fails to assemble.

    >>> target("sm_90").ptx_version, "bf16_math" in target("sm_80").features
    ('8.0', False)
    >>> sorted(TARGETS)
    ['sm_80', 'sm_90', 'sm_90a']
"""

from __future__ import annotations

from dataclasses import dataclass

# What each feature lets the emitter write, and the first chip that has it.
FEATURES: dict[str, tuple[str, int]] = {
    "bf16_cvt": ("cvt between bf16 and f32; fma, min, max, neg, abs on bf16", 80),
    "f16_minmax": ("min/max on f16 and the .NaN variants of min/max", 80),
    "cp_async": ("cp.async copies from global to shared memory", 80),
    "tensor_cores": ("ldmatrix, mma.sync and wmma on f16, bf16 and s8 (the tensor cores)", 80),
    "cvt_x2": ("cvt.rn.f16x2.f32 and cvt.rn.bf16x2.f32, two f32 rounded into one word", 80),
    "bf16_math": ("add, sub, mul, setp, ex2, tanh on bf16; cvt between bf16 and any type", 90),
    "atom_add_bf16": ("atom.add.noftz.bf16", 90),
    "async_proxy": ("fence.proxy.async; bulk copies and TMA loads, TMA stores, bulk groups", 90),
    "mbarrier": ("mbarrier transaction counts, try_wait and fence.mbarrier_init", 90),
    "elect": ("elect.sync, one lane of a warp chosen", 90),
    "stmatrix": ("stmatrix: 8 x 8 b16 matrices stored from a warp's registers (PTX ISA 7.8)", 90),
    "cluster": ("thread-block clusters and distributed shared memory", 90),
    "wgmma": ("warpgroup matrix multiply-accumulate (sm_90a only)", 900),
    "setmaxnreg": ("setmaxnreg: moving registers between warpgroups (sm_90a only)", 900),
}


@dataclass(frozen=True)
class Target:
    """A chip PTX is written for: `.target name`, `.version ptx_version`."""

    name: str
    sm: int
    ptx_version: str
    features: frozenset[str]

    def has(self, feature: str) -> bool:
        if feature not in FEATURES:
            raise KeyError(f"unknown target feature `{feature}`")
        return feature in self.features


def _make(name: str, sm: int, arch_specific: bool = False) -> Target:
    level = sm * 10 if arch_specific else sm
    have = frozenset(f for f, (_, first) in FEATURES.items() if first <= level)
    # PTX ISA 8.0 (CUDA 12.0) is the first to know sm_90a; one version for every target
    # keeps the text the same across chips.
    return Target(name, sm, "8.0", have)


TARGETS: dict[str, Target] = {
    "sm_80": _make("sm_80", 80),
    "sm_90": _make("sm_90", 90),
    "sm_90a": _make("sm_90a", 90, arch_specific=True),
}


def target(name: str) -> Target:
    """The target called `name`; ValueError listing the known ones otherwise."""
    try:
        return TARGETS[name]
    except KeyError:
        known = ", ".join(sorted(TARGETS))
        raise ValueError(f"unknown target `{name}`: PTX is emitted for {known}") from None
