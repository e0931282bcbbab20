"""Use-cases over the core: plain functions that return result objects; they never print."""
