"""The checker: from the AST to `hir`, the checked program specialised to one variant."""
