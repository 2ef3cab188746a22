"""What the Python spelling refuses, and how each refusal reads.

Every Python construct without a Phobos counterpart (PYTHON.md "Where Phobos and
Python differ") is one row here: an error code in E0100-E0199, the message, the
label under the span and the fix. The translator only decides *where*; the words
live in this table so they read alike and a reader can see every refusal at once.

    >>> from phobos.source import SourceFile
    >>> span = SourceFile("k.py", "a ** b").span(2, 4)
    >>> d = refuse("pow", span)
    >>> d.code, d.message, d.help
    ('E0101', '`**` is not an operator in Phobos', ('use `ph.pow(a, b)`',))
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from phobos.diagnostics import Diagnostic, Label
from phobos.source import Span

# Error codes of the Python front end; each has phobos/diagnostics/explain/<code>.md.
SYNTAX = "E0100"  # Python's own parser refused the module
OPERATOR = "E0101"  # an operator Phobos does not have
EXPRESSION = "E0102"  # an expression form Phobos does not have
COLLECTION = "E0103"  # a tuple, list, dict or set
LITERAL = "E0104"  # a string, bytes, None, ..., a complex number
STATEMENT = "E0105"  # a statement Phobos does not have
LOOP_ELSE = "E0106"  # `for ... else`, `while ... else`
TARGET = "E0107"  # an assignment target Phobos cannot write
DECLARATION = "E0108"  # a local's annotation, or a `ph.let`/`ph.var` misused
RETURN_VALUE = "E0109"  # `return e` outside a one-line fn
PARAMETER = "E0110"  # a parameter form Phobos does not have
TYPE = "E0111"  # not a Phobos type
UNKNOWN_NAME = "E0112"  # `ph.foo` that phobos.lang does not hold
ATTRIBUTE_ACCESS = "E0113"  # `x.y` other than `ph.name` and `ph.ctx.field`
KEYWORD_ARG = "E0114"  # a keyword argument that configures nothing
DECORATOR = "E0115"  # a decorator Phobos does not spell
ATTRIBUTE_ARG = "E0116"  # an attribute argument that is not a literal
FOR_HEADER = "E0117"  # a `for` that is not over `range(...)`
SLICE = "E0118"  # a slice step, `:+` without a start
NOT_A_VALUE = "E0119"  # `ph.let`, `ph.kernel`, the module itself used as a value
RESERVED = "E0120"  # a Python name that is a Phobos keyword
NESTING = "E0121"  # nested too deeply to translate
USES_GLOBAL = "E0122"  # a `uses` name the module also binds
MISSING_FUTURE = "E0123"  # annotations Python evaluates: no `from __future__ import annotations`

CODES = (
    SYNTAX, OPERATOR, EXPRESSION, COLLECTION, LITERAL, STATEMENT, LOOP_ELSE, TARGET,
    DECLARATION, RETURN_VALUE, PARAMETER, TYPE, UNKNOWN_NAME, ATTRIBUTE_ACCESS, KEYWORD_ARG,
    DECORATOR, ATTRIBUTE_ARG, FOR_HEADER, SLICE, NOT_A_VALUE, RESERVED, NESTING, USES_GLOBAL,
    MISSING_FUTURE,
)  # fmt: skip


@dataclass(frozen=True)
class Refusal:
    """One row: `message`, `label` and `help` may name `{fields}` filled in at the site."""

    code: str
    message: str
    label: str = ""
    help: str = ""


# fmt: off
REFUSALS: dict[str, Refusal] = {
    # -- operators ------------------------------------------------------------
    "pow": Refusal(OPERATOR, "`**` is not an operator in Phobos", "power", "use `ph.pow(a, b)`"),
    "matmul": Refusal(OPERATOR, "`@` is not an operator in Phobos", "matrix product",
                      "use `ph.dot(a, b)`"),
    "pow_assign": Refusal(OPERATOR, "`**=` is not an operator in Phobos", "",
                          "write `x = ph.pow(x, e)`"),
    "matmul_assign": Refusal(OPERATOR, "`@=` is not an operator in Phobos", "",
                             "write `acc += ph.dot(a, b)`"),
    "is": Refusal(OPERATOR, "`{op}` is not an operator in Phobos", "identity test",
                  "compare values with `==` or `!=`"),
    "in": Refusal(OPERATOR, "`{op}` is not an operator in Phobos", "membership test",
                  "`in` is only written in a loop header, `for i in range(lo, hi)`; "
                  "compare against each value with `==` and `or`"),
    "uadd": Refusal(OPERATOR, "unary `+` is not an operator in Phobos", "",
                    "remove the `+`; `:+` is only written in a slice, `A[s:+n]`"),
    # -- expressions ----------------------------------------------------------
    "ifexp": Refusal(EXPRESSION, "conditional expressions are not supported in Phobos", "",
                     "use `ph.where(c, a, b)`, or an `if` statement"),
    "lambda": Refusal(EXPRESSION, "lambdas are not supported in Phobos", "",
                      "write a `@ph.fn` of the module and pass its name"),
    "comprehension": Refusal(EXPRESSION, "{what} are not supported in Phobos", "",
                             "write a `for` loop over `range(...)`"),
    "walrus": Refusal(EXPRESSION, "`:=` is not supported in Phobos", "",
                      "declare the value first: `x: ph.let = e`"),
    "yield": Refusal(EXPRESSION, "`{what}` is not supported in Phobos", "",
                     "a kernel writes its results into tensors"),
    "await": Refusal(EXPRESSION, "`await` is not supported in Phobos", "",
                     "a kernel runs on the device; remove the `await`"),
    "starred": Refusal(EXPRESSION, "`*` unpacking is not supported in Phobos", "",
                       "pass each argument by itself"),
    "slice_value": Refusal(EXPRESSION, "a slice is only written inside `[...]`", "",
                           "write it as a subscript, `A[s:e]`"),
    "expression": Refusal(EXPRESSION, "this expression is not supported in Phobos", "",
                          "write it with the spellings of PYTHON.md \"Spellings\""),
    # -- literals and collections ----------------------------------------------
    "tuple": Refusal(COLLECTION, "tuples are not supported in Phobos", "",
                     "bind each value by itself: `a: ph.let = x`"),
    "list": Refusal(COLLECTION, "lists are not supported in Phobos", "",
                    "use a tile: `t: ph.var[ph.tile[ph.f32][R, C]]`"),
    "dict": Refusal(COLLECTION, "dicts are not supported in Phobos", "",
                    "bind each value by itself: `a: ph.let = x`"),
    "set": Refusal(COLLECTION, "sets are not supported in Phobos", "",
                   "bind each value by itself: `a: ph.let = x`"),
    "string": Refusal(LITERAL, "strings are not supported in Phobos", "",
                      "a string is only written as a name in a decorator, "
                      "`@ph.aligned(M=\"TILE_M\")`, or as a def's docstring"),
    "fstring": Refusal(LITERAL, "f-strings are not supported in Phobos", "",
                       "a kernel has no text; remove it"),
    "bytes": Refusal(LITERAL, "bytes literals are not supported in Phobos", "",
                     "pass the bytes in a `ph.tensor[ph.u8][N]`"),
    "none": Refusal(LITERAL, "`None` is not a value in Phobos", "",
                    "leave the value out: `t: ph.var[T]` declares without one"),
    "ellipsis": Refusal(LITERAL, "`...` is not a value in Phobos", "", "write `pass`"),
    "complex": Refusal(LITERAL, "complex numbers are not supported in Phobos", "",
                       "keep the real and imaginary parts in two values"),
    # -- statements -------------------------------------------------------------
    "with": Refusal(STATEMENT, "`with` is not supported in Phobos", "",
                    "a kernel has no context managers; write the body's statements directly"),
    "try": Refusal(STATEMENT, "`try` is not supported in Phobos", "",
                   "a kernel has no exceptions; test the condition with `if`"),
    "raise": Refusal(STATEMENT, "`raise` is not supported in Phobos", "",
                     "a kernel has no exceptions; leave it with `return`"),
    "assert": Refusal(STATEMENT, "`assert` is not supported in Phobos", "",
                      "promise a shape with `@ph.aligned(...)`, or test it with `if`"),
    "del": Refusal(STATEMENT, "`del` is not supported in Phobos", "",
                   "a binding lives to the end of its block"),
    "global": Refusal(STATEMENT, "`{what}` is not supported in Phobos", "",
                      "a fn reads its caller's names: list them in `@ph.fn(uses=(...))`"),
    "import": Refusal(STATEMENT, "`import` inside a {item} is not supported", "",
                      "import at the top of the module"),
    "nested_def": Refusal(STATEMENT, "a def inside a {item} is not supported", "",
                          "move it to the module level as a `@ph.fn`"),
    "class": Refusal(STATEMENT, "a class inside a {item} is not supported", "",
                     "define it outside the {item}"),
    "async": Refusal(STATEMENT, "`{what}` is not supported in Phobos", "", "remove `async`"),
    "match": Refusal(STATEMENT, "`match` is not supported in Phobos", "",
                     "write `if` ... `elif` ... `else`"),
    "type_alias": Refusal(STATEMENT, "`type` aliases are not supported in Phobos", "",
                          "write the type out where it is used"),
    "statement": Refusal(STATEMENT, "this statement is not supported in Phobos", "",
                         "write it with the spellings of PYTHON.md \"Spellings\""),
    "loop_else": Refusal(LOOP_ELSE, "`{loop}` ... `else` is not supported in Phobos", "",
                         "set a `ph.var` flag before `break` and test it after the loop"),
    # -- assignments and declarations --------------------------------------------
    "unpack": Refusal(TARGET, "tuple unpacking is not supported in Phobos", "",
                      "assign each name by itself"),
    "multi_target": Refusal(TARGET, "chained assignment is not supported in Phobos", "",
                            "assign each target by itself"),
    "bad_target": Refusal(TARGET, "cannot assign to {what} in Phobos", "",
                          "assign to a name or a subscript, `x = e` or `A[i] = e`"),
    "local_annotation": Refusal(DECLARATION, "a local's annotation must be `ph.let` or `ph.var`",
                                "not a declaration",
                                "declare it: `x: ph.let[ph.f32] = e` or `x: ph.var[ph.f32] = e`"),
    "decl_target": Refusal(DECLARATION, "only a name can be declared", "",
                           "declare a name, `x: ph.let = e`; assign to a subscript, `A[i] = e`"),
    "let_needs_value": Refusal(DECLARATION, "`ph.let` needs a value", "",
                               "write `x: ph.let = e`, or `x: ph.var[T]` for a tile"),
    "var_needs_type": Refusal(DECLARATION, "`ph.var` without a value needs a type", "",
                              "write `t: ph.var[ph.tile[ph.f32][R, C]]`"),
    "decl_args": Refusal(DECLARATION, "`ph.{decl}[...]` takes one type", "",
                         "write `x: ph.{decl}[ph.f32] = e`"),
    "return_value": Refusal(RETURN_VALUE, "{item} cannot return a value", "",
                            "only a fn whose whole body is `return e` returns a value; "
                            "a statement fn's last bare expression is the value `ph.generate` "
                            "takes"),
    # -- parameters ----------------------------------------------------------------
    "varargs": Refusal(PARAMETER, "`{what}` parameters are not supported in Phobos", "",
                       "list every parameter by name"),
    "default": Refusal(PARAMETER, "parameter defaults are not supported in Phobos", "",
                       "remove the default; every argument is passed"),
    "kwonly": Refusal(PARAMETER, "keyword-only parameters are not supported in Phobos", "",
                      "remove the `*`"),
    "posonly": Refusal(PARAMETER, "positional-only parameters are not supported in Phobos", "",
                       "remove the `/`"),
    "param_type": Refusal(PARAMETER, "kernel parameter `{name}` needs a type", "",
                          "annotate it: `{name}: ph.f32` or `{name}: ph.tensor[ph.f32][N]`"),
    "fn_param_type": Refusal(PARAMETER, "a fn parameter takes no type", "",
                             "remove the annotation: a fn is inlined and takes its "
                             "arguments' types"),
    # -- types -----------------------------------------------------------------------
    "not_a_type": Refusal(TYPE, "not a Phobos type", "",
                          "write `ph.f32`, `ph.tensor[ph.f16][M, K]` or `ph.tile[ph.f32][R, C]`"),
    "elem_type": Refusal(TYPE, "the element type must be a scalar type", "",
                         "write `ph.{kind}[ph.f32][...]`"),
    "needs_dims": Refusal(TYPE, "`ph.{kind}[T]` needs dimensions", "",
                          "write `ph.{kind}[ph.f32][M, 64]`"),
    "bad_dim": Refusal(TYPE, "a dimension is a name or an integer", "",
                       "write `M`, `TILE_K` or `64`"),
    # -- names -----------------------------------------------------------------------
    "unknown": Refusal(UNKNOWN_NAME, "`phobos.lang` has no `{name}`", "", "{help}"),
    "attribute": Refusal(ATTRIBUTE_ACCESS, "attribute access is not supported in Phobos", "",
                         "only `ph.<name>` and `ph.ctx.<field>` are read with a dot"),
    "foreign": Refusal(ATTRIBUTE_ACCESS, "`{name}` is not Phobos", "Triton's spelling", "{help}"),
    "ctx_field": Refusal(ATTRIBUTE_ACCESS, "`ph.ctx` has no field `{name}`", "",
                         "the fields are {fields}"),
    "ctx_axis": Refusal(ATTRIBUTE_ACCESS, "`ph.ctx.{field}` has no axis `{name}`", "",
                        "the axes are `x`, `y` and `z`"),
    "ctx_no_axis": Refusal(ATTRIBUTE_ACCESS, "`ph.ctx.{field}` has no axes", "",
                           "write `ph.ctx.{field}`"),
    "ctx_needs_axis": Refusal(ATTRIBUTE_ACCESS, "`ph.ctx.{field}` is read along an axis", "",
                              "write `ph.ctx.{field}.x`, `.y` or `.z`"),
    "ctx_alone": Refusal(NOT_A_VALUE, "`ph.ctx` is read only through its fields", "",
                         "write `ph.ctx.block.x`, `ph.ctx.lane`, ..."),
    "module_value": Refusal(NOT_A_VALUE, "`{name}` is the `phobos.lang` module, not a value",
                            "", "write `{name}.<name>`"),
    "not_a_value": Refusal(NOT_A_VALUE, "`ph.{name}` is not a value", "", "{help}"),
    "unroll_outside": Refusal(NOT_A_VALUE, "`ph.unroll` is only written in a loop header", "",
                              "write `for i in ph.unroll(n, range(lo, hi)):`"),
    "reserved": Refusal(RESERVED, "`{name}` is a keyword in Phobos", "",
                        "rename it; Phobos reserves `{name}`"),
    # -- calls ---------------------------------------------------------------------------
    "keyword": Refusal(KEYWORD_ARG, "`{callee}` takes no keyword arguments", "",
                       "pass it by position; only a collective or `ph.shfl` is configured "
                       "by keyword"),
    "config_key": Refusal(KEYWORD_ARG, "`{key}` does not configure `{callee}`", "",
                          "the configuration keywords are {keys}"),
    "kwargs": Refusal(KEYWORD_ARG, "`**` unpacking is not supported in Phobos", "",
                      "pass each keyword by itself"),
    # -- decorators and attributes ----------------------------------------------------------
    "decorator": Refusal(DECORATOR, "`@{name}` is not a Phobos attribute", "",
                         "a kernel takes only `@ph.<attribute>` decorators; remove it"),
    "not_attribute": Refusal(DECORATOR, "`ph.{name}` is not an attribute", "",
                             "the attributes are {names}"),
    "kernel_and_fn": Refusal(DECORATOR, "a def is either a `@ph.kernel` or a `@ph.fn`", "",
                             "remove one of them"),
    "fn_attribute": Refusal(DECORATOR, "a fn takes no attributes", "",
                            "attributes belong on the `@ph.kernel` that calls it"),
    "no_kernel": Refusal(DECORATOR, "`@ph.{name}` applies only to a `@ph.kernel`", "",
                         "add `@ph.kernel` above it"),
    "decorated_class": Refusal(DECORATOR, "`@ph.{name}` applies to a function", "",
                               "write `def`, not `class`"),
    "async_def": Refusal(DECORATOR, "a `@ph.{name}` cannot be `async`", "", "remove `async`"),
    "kernel_option": Refusal(DECORATOR, "`ph.kernel` has no option `{name}`", "",
                             "the options are `key`, `reference`, `rtol` and `atol`"),
    "fn_option": Refusal(DECORATOR, "`ph.fn` has no option `{name}`", "",
                         "write `@ph.fn(uses=(\"W\", \"C\"))`"),
    "positional_option": Refusal(DECORATOR, "`ph.{name}` takes its options by keyword", "",
                                 "{help}"),
    "uses_global": Refusal(USES_GLOBAL, "`{name}` in `uses` of fn `{fn}` is also bound by the module",
                           "read from the caller",
                           "Python would read the module's `{name}` where Phobos reads the "
                           "caller's; rename one of them"),
    "name_list": Refusal(DECORATOR, "`{option}` is a tuple of names as strings", "",
                         "write `{option}=(\"M\", \"N\")`"),
    "attr_arg": Refusal(ATTRIBUTE_ARG, "an attribute argument is a literal", "",
                        "write an integer, a float, `True`, `False`, or a name as a string"),
    "attr_name": Refusal(ATTRIBUTE_ARG, "a name in an attribute is written as a string", "",
                         "write `\"{name}\"`"),
    "search_dim": Refusal(ATTRIBUTE_ARG, "a search dimension lists integers", "",
                          "write `{name}=[32, 256]`"),
    # -- loops and subscripts -------------------------------------------------------------
    "for_iter": Refusal(FOR_HEADER, "a `for` loop runs over `range(...)`", "",
                        "write `for i in range(lo, hi)` or `for i in ph.unroll(n, range(lo, hi))`"),
    "for_target": Refusal(FOR_HEADER, "a loop variable is one name", "",
                          "write `for i in range(lo, hi)`"),
    "range_args": Refusal(FOR_HEADER, "`range` takes one to three arguments", "",
                          "write `range(hi)`, `range(lo, hi)` or `range(lo, hi, step)`"),
    "unroll_args": Refusal(FOR_HEADER, "`ph.unroll` takes a count and a `range(...)`", "",
                           "write `ph.unroll(n, range(lo, hi))`"),
    "slice_step": Refusal(SLICE, "slice steps are not supported in Phobos", "",
                          "take every element of a slice: `A[s:e]` or `A[s:+n]`"),
    "slice_len_start": Refusal(SLICE, "`:+` needs a start", "", "write `A[0:+n]` or `A[:n]`"),
    "nesting": Refusal(NESTING, "this {item} is nested too deeply to translate", "",
                       "split the expression with `ph.let` declarations"),
}
# fmt: on


def refuse(row_key: str, span: Span, **fields: str) -> Diagnostic:
    """The diagnostic of row `row_key` at `span`, its text filled from `fields`."""
    row = REFUSALS[row_key]
    helps = (row.help.format(**fields),) if row.help else ()
    helps = tuple(h for h in helps if h)
    return Diagnostic.error(
        row.code,
        row.message.format(**fields),
        Label(span, row.label.format(**fields)),
        help=helps,
    )


def syntax_error(message: str, span: Span) -> Diagnostic:
    """Python's own syntax error, in Phobos's layout."""
    return Diagnostic.error(SYNTAX, message, Label(span, ""))


# Python nodes refused wherever they appear as an expression, by row.
EXPRESSION_ROWS: dict[type, str] = {
    ast.IfExp: "ifexp",
    ast.Lambda: "lambda",
    ast.NamedExpr: "walrus",
    ast.Await: "await",
    ast.Starred: "starred",
    ast.Tuple: "tuple",
    ast.List: "list",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.JoinedStr: "fstring",
    ast.Slice: "slice_value",
}

COMPREHENSIONS: dict[type, str] = {
    ast.ListComp: "list comprehensions",
    ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions",
    ast.GeneratorExp: "generator expressions",
}

# Python statements refused wherever they appear in a body, by row.
STATEMENT_ROWS: dict[type, str] = {
    ast.With: "with",
    ast.Try: "try",
    ast.Raise: "raise",
    ast.Assert: "assert",
    ast.Delete: "del",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.FunctionDef: "nested_def",
    ast.AsyncFunctionDef: "nested_def",
    ast.ClassDef: "class",
}
if hasattr(ast, "TryStar"):  # Python 3.11
    STATEMENT_ROWS[ast.TryStar] = "try"
if hasattr(ast, "Match"):
    STATEMENT_ROWS[ast.Match] = "match"
if hasattr(ast, "TypeAlias"):  # Python 3.12
    STATEMENT_ROWS[ast.TypeAlias] = "type_alias"
