"""``tsukuctl create``: from a GitHub repository's releases to a validated recipe.

The modules here are the pure core: no network, no daemon, no LLM calls. They turn
release asset lists into prompt text and into recipes, check recipes before any
container runs, and clean up what goes back to the model.
"""
