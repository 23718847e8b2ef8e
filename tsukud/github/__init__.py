"""The GitHub REST API as tsuku needs it: releases, tags, repository metadata, contents.

``tsukud.github.client`` imports the HTTP layer (httpx2); import it inside functions.
"""
