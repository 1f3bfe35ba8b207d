"""A built Lambda layer's size as Lambda counts it: its files unpacked (the 250 MB limit of a
function with its layers) and zipped (the 50 MB of an upload)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def layer_size(root: Path) -> tuple[int, int]:
    """(bytes unpacked, bytes zipped with deflate) of every file under `root`."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.relative_to(root))
    return sum(p.stat().st_size for p in files), buffer.tell()
