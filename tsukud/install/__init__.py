"""Installing recipes: safe extraction now; download and the installer build on it."""

from tsukud.install.extract import (
    ArchiveEntry,
    ArchiveLimitExceeded,
    CorruptArchive,
    ExtractError,
    ExtractLimits,
    ExtractReport,
    UnsafeArchive,
    extract,
    list_entries,
)

__all__ = [
    "ArchiveEntry",
    "ArchiveLimitExceeded",
    "CorruptArchive",
    "ExtractError",
    "ExtractLimits",
    "ExtractReport",
    "UnsafeArchive",
    "extract",
    "list_entries",
]
