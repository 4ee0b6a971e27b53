"""Authoring and classroom tools of the book (run from the repository root as ``python -m tools.<name>``),
and the helpers they share with the tests and benchmarks (:mod:`tools.toc`, :mod:`tools.browser`)."""
