"""The `.ph` spelling: tokens, lexer, AST, parser, and the printers of both spellings."""
