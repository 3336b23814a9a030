"""A lab: one command on several engines at once, and its live display."""
