"""What package registries answer, read by pure functions: one module per registry.

One module per ecosystem's registry, named by its record in ``ecosystems.py`` (which
pairs up the names each part of tsuku calls that ecosystem by). Each module knows its
registry's URL shapes, which names are valid package names there, and how to read the
version list, the latest version and the executables a package declares. No I/O: the
installer (versions of ecosystem actions), the builders and discovery fetch the bytes
and hand the decoded documents in.
"""
