"""The Python spelling: reads `@ph.kernel` source (never runs it) into the Phobos AST.

`reader` turns Python's node positions into spans and resolves the module's imports
of `phobos.lang`; `translate` builds the AST; `spellings` is the table of what is
refused and how each refusal reads.
"""

from phobos.pyfront.translate import Translation, translate, translate_module

__all__ = ["Translation", "translate", "translate_module"]
