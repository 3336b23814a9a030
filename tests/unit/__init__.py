"""Tests that need no engine and no fake: pure functions, parsers, the matrix and spec
loaders, the CLI table.
"""
