"""Container sandbox for recipe validation.

``runtime`` is the container runtime adapter (aiodocker over trio-asyncio; Docker or
Podman); ``image`` builds and imports the offline busybox validation image. Import the
submodules directly: this package imports nothing heavy on its own, so the daemon starts
fast and aiodocker is loaded only when a sandbox is first used.
"""

from __future__ import annotations
