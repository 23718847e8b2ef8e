"""What package registries answer, read by pure functions: one module per registry.

npm (packuments), PyPI (the JSON API and wheel entry points), crates.io (the web API),
RubyGems (the versions API) and the Go module proxy (``@v/list``). Each module knows its
registry's URL shapes, which names are valid package names there, and how to read the
version list, the latest version and the executables a package declares. No I/O: the
installer (versions of ecosystem actions), the builders and discovery fetch the bytes
and hand the decoded documents in.
"""
