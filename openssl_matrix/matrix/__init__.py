"""The matrix file: its types (model), loading and checking it, release eras, patches, and
the vocabulary a matrix names (public-key and TLS suites, x86 instruction-set tables).
"""
