"""``tsukuctl eval``: how well the recipe builder does, measured over a corpus whose
right answers are known (docs/eval.md).

``corpus.py`` reads a corpus and checks a created recipe against its known answer;
``figures.py`` turns the outcomes into the figures a run prints and two runs' difference
with its significance. Both are pure; the run itself is ``flows/eval_run.py``.
"""
