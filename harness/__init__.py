"""What ``tests/`` and ``bench/`` share: the real service in a process of its own and a way to
talk to it (``service``), a local target site (``site``), generated article pages (``pages``),
a process tree's CPU and memory (``procinfo``) and a billed usage row (``usage_rows``).

It imports nothing from either of them, so neither imports the other.
"""
