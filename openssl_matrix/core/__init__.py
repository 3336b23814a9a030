"""The bottom layer: errors, logging, clock, file and name helpers, YAML loading, release
numbers, units, statistics, the status vocabulary, the crash log, the shipped resources.
Imports nothing else of the package.
"""
