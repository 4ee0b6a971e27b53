"""Scripts that measure the book's performance figures (``make bench``; not tests)."""
