"""Running a bench: the session, one cell, command lines, the TLS runner, host accounting and
guards, statistics, the CPU model.
"""
