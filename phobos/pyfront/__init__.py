"""The Python spelling: reads `@ph.kernel` source (never runs it) into the Phobos AST."""
