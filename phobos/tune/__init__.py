"""The autotuner: every variant of a kernel's `@autotune` space compiled, checked
against a reference, timed fairly, and remembered.

- `variants`: the space compiled in parallel processes, race-checked; each variant
  left out with its reason.
- `check`: a variant's run on copies of the arguments, canary bytes after each tensor,
  compared with the reference within its element type's rounding.
- `timing`: CUDA events around each launch, the L2 flushed, variants taking turns.
- `records`: one readable JSON record per (kernel, key values) in the kernel cache.
- `tuner`: the steps above in order; `kernel.tune(...)` calls it.

`python -m phobos.tune show KERNEL` lists and explains the records.
"""
