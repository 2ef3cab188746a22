"""The checker: the AST of a program -> hir kernels specialised to one variant.

Names resolve to `hir.Sym`s (one per binding), `fn`s are inlined at their calls,
every expression gets a type and a uniformity, implicit conversions become
`hir.Convert`, constants fold, and each `@autotune` constant takes its value in the
variant. A bad program gives diagnostics, never an exception.

    >>> from phobos.source import SourceFile
    >>> from phobos.syntax.parser import parse
    >>> program, _ = parse(SourceFile("k.ph", '''
    ... @autotune(B in [16, 64])
    ... kernel k(x: tensor<f32>[N], a: f32) {
    ...   let base = ctx.block.x * B
    ...   x[base :+ B] = a * x[base :+ B]
    ... }'''))
    >>> kernels, diagnostics = check_program(program)
    >>> diagnostics, kernels[0].variant
    ([], (('B', 16),))
    >>> print(hir.dump(kernels[0].body.stmts[0]))
    let base: i32 = (ctx.block.x * 16: i32)
"""

from __future__ import annotations

from phobos.diagnostics.diagnostic import Diagnostic
from phobos.sema import hir
from phobos.sema.body import KernelChecker
from phobos.sema.context import kernel_setup
from phobos.sema.declarations import kernel_names, module_names
from phobos.syntax import ast


def check_kernel(
    program: ast.Program,
    kernel_name: str,
    variant: dict[str, int] | None = None,
    index_width: int = 32,
) -> tuple[hir.Kernel | None, list[Diagnostic]]:
    """Check one kernel of `program` in `variant` (None: each constant's first choice).

    Returns the hir kernel (None when it has errors) and the diagnostics.
    """
    kernels = [i for i in program.items if isinstance(i, ast.Kernel)]
    found = [k for k in kernels if k.name.id == kernel_name]
    if not found:
        known = ", ".join(f"`{k.name.id}`" for k in kernels) or "none"
        return None, [
            Diagnostic.error("E0250", f"no kernel named `{kernel_name}` (kernels: {known})", None)
        ]
    kernel, diags = _check_one(program, found[0], variant, index_width)
    module = module_names(program)
    return (None if module else kernel), module + diags


def check_program(
    program: ast.Program,
    variant: dict[str, int] | None = None,
    index_width: int = 32,
) -> tuple[list[hir.Kernel], list[Diagnostic]]:
    """Check every kernel of `program`; a kernel with errors is left out of the list."""
    out: list[hir.Kernel] = []
    module = module_names(program)  # a name defined twice: no kernel of the module compiles
    diagnostics: list[Diagnostic] = list(module)
    for item in program.items:
        if isinstance(item, ast.Kernel):
            kernel, diags = _check_one(program, item, variant, index_width)
            diagnostics.extend(diags)
            if kernel is not None and not module:
                out.append(kernel)
    return out, diagnostics


def _check_one(program, kernel_ast, variant, index_width):
    if index_width not in (32, 64):
        return None, [
            Diagnostic.error("E0453", f"an index is 32 or 64 bits wide, not {index_width}", None)
        ]
    named = kernel_names(kernel_ast)
    setup, diags = kernel_setup(kernel_ast, variant)
    diags = named + diags
    if any(d.severity == "error" for d in diags):
        return None, diags
    table: dict = {}
    result = None
    for _ in range(8):  # uniformity only rises, through three levels: a few passes settle
        checker = KernelChecker(program, kernel_ast, setup, index_width, table)
        result, pass_diags = checker.run()
        if not checker.changed:
            break
    diags = diags + pass_diags
    if any(d.severity == "error" for d in diags):
        return None, diags
    return result, diags


def check_stage(program: ast.Program, unit) -> list[hir.Kernel]:
    """The driver's `hir` stage: every kernel in its first-choice variant."""
    kernels, diagnostics = check_program(program)
    unit.diagnostics.extend(diagnostics)
    return kernels


def dump_kernels(kernels: list[hir.Kernel]) -> str:
    """The text `--emit hir` prints: each kernel's dump, a blank line between."""
    return "".join(hir.dump(k) + "\n\n" for k in kernels).rstrip("\n") + "\n"
