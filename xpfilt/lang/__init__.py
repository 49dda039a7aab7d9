"""The profile language: XPath fragment parser, typed AST, profile combinations."""
