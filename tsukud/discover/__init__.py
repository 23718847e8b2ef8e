"""Discovery: from a bare tool name to a verified source (issue 6).

``tsukuctl install stripe-cli`` with no recipe asks discovery where the tool comes from:

1. the name is normalised and checked against known names (:mod:`.normalize`);
2. stage 1, the registry: a recipe, else a tsuku discovery entry (:mod:`.registry_lookup`);
3. stage 2, package ecosystems probed in parallel (:mod:`.ecosystem`);
4. stage 3, an LLM with web search extracts candidates (:mod:`.llm_discovery`, :mod:`.search`,
   :mod:`.sanitize_html`);
5. deterministic verification against GitHub and the decision (:mod:`.verify`);
6. the user confirms what was found (:mod:`.present` renders it).

:mod:`.chain` runs the stages with injected parts; :mod:`.service` wires them to the daemon.
Nothing heavy is imported here: the daemon loads this package only when discovery runs.
"""
