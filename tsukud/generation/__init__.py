"""Writing a recipe with a model: the loop both writers share.

``tsukuctl create`` (from a repository's releases) and the instructions builder (from a
vendor's install page) ask a model differently and check its answers by different
rules, but the run around it is one: ask, judge the answer by code, validate the recipe
in the container, give the model the failure and ask again, at most ``max_repairs``
times. :mod:`tsukud.generation.loop` is that run; each writer passes what differs as a
:class:`~tsukud.generation.loop.Strategy`. Below both writers, above validation and the
LLM service: it imports neither writer.
"""
