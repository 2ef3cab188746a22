"""`phobos.syntax.ast.dump`: the text form `--emit ast` prints."""

from __future__ import annotations

from phobos.source import SourceFile
from phobos.syntax import ast as A

S = SourceFile("x.ph", "").span(0, 0)


def n(name: str) -> A.Name:
    return A.Name(name, span=S)


def i(value: int) -> A.Int:
    return A.Int(value, span=S)


def test_a_kernel():
    body = A.Block(
        (
            A.Let(n("y"), None, A.Binary("+", n("x"), i(1), span=S), span=S),
            A.If(A.Bool(True, span=S), A.Block((A.Return(span=S),), span=S), None, span=S),
        ),
        span=S,
    )
    param = A.Param(
        n("x"), A.TensorType(A.ScalarType("f32", span=S), (n("N"), i(4)), span=S), span=S
    )
    attr = A.Attribute(n("launch"), (A.PositionalArg(i(256), span=S),), span=S)
    kernel = A.Kernel((attr,), n("k"), (param,), body, span=S)
    assert A.dump(A.Program((kernel,), span=S)) == (
        "Program\n"
        "  items[0]: Kernel name=k\n"
        "    attrs[0]: Attribute name=launch\n"
        "      args[0]: PositionalArg\n"
        "        value: Int 256\n"
        "    params[0]: Param name=x\n"
        "      type: TensorType\n"
        "        elem: ScalarType f32\n"
        "        dims[0]: Name N\n"
        "        dims[1]: Int 4\n"
        "    body: Block\n"
        "      stmts[0]: Let name=y type=None\n"
        "        value: Binary op=+\n"
        "          left: Name x\n"
        "          right: Int 1\n"
        "      stmts[1]: If orelse=None\n"
        "        cond: Bool True\n"
        "        then: Block\n"
        "          stmts[0]: Return\n"
    )


def test_plain_fields_defaults_and_spellings():
    call = A.Call(
        n("sum"),
        (A.Float(0.5, "0.50", span=S),),
        (A.ConfigItem("over", A.Ctx("lane", span=S), span=S),),
        span=S,
    )
    assert A.dump(call) == (
        "Call\n"
        "  func: Name sum\n"
        "  args[0]: Float 0.5 text=0.50\n"
        "  config[0]: ConfigItem key=over\n"
        "    value: Ctx field=lane\n"
    )
    # Defaults are left out; spellings kept for printing are shown when set.
    assert A.dump(A.Call(n("f"), (), span=S)) == "Call args=[]\n  func: Name f\n"
    div = A.Binary("/", i(1), i(2), spelling="//", span=S)
    assert A.dump(div).splitlines()[0] == "Binary op=/ spelling=//"
    assert A.dump(A.Ctx("block", "x", span=S)) == "Ctx field=block axis=x\n"


def test_functions_write_their_parameters_inline():
    fn = A.Function(n("f"), (n("a"), n("b")), n("a"), uses=("c",), span=S)
    assert A.dump(fn) == "Function name=f params=[a, b] uses=[c]\n  body: Name a\n"
    attr = A.Attribute(n("inline"), None, span=S)
    assert A.dump(attr) == "Attribute name=inline args=None\n"


def test_equal_trees_dump_equal_and_different_trees_differ():
    a = A.Binary("+", n("x"), i(1), span=S)
    b = A.Binary("+", n("x"), i(1), span=SourceFile("y.ph", "abc").span(1, 2))
    c = A.Binary("+", n("x"), i(2), span=S)
    assert A.dump(a) == A.dump(b)
    assert A.dump(a) != A.dump(c)
