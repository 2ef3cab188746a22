"""Diagnostics: data (`Diagnostic`, `Label`), error codes, and renderers.

Depends on nothing else in phobos but `phobos.source`.
"""

from phobos.diagnostics.diagnostic import CompileError, Diagnostic, DiagnosticSink, Label

__all__ = ["CompileError", "Diagnostic", "DiagnosticSink", "Label"]
