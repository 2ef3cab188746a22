"""The lowering: hir tile programs to lir, the per-thread IR (`phobos.lower.lir`)."""
