"""Tests that run the pipeline against the fake container engine (tests/fakes.py), the one seam."""
