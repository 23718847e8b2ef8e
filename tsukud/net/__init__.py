"""Network access shared by every feature (GitHub, registries, downloads, search).

``tsukud.net.http`` is the one place that talks HTTP: URL policy (HTTPS only, plain
HTTP to loopback; private addresses only for configured endpoints), redirects checked
at every hop, timeouts, size caps, a small ETag-revalidated cache and rate-limit
bookkeeping. Import it inside functions: it loads httpx2.
"""
