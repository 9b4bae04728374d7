"""Every bundle file's sha256 and size, recorded in config.json's "files" when the bundle is written.

Loading a model compares the sizes of the files it opens (a stat each, so a truncated or
half-copied file fails at load time with its name); `verify` reads every file and compares its
sha256 too (`mt-models verify` and `install`), which catches bytes changed in place.

Files the runtime opens (the tokenizer and every variant's graphs) must be present. The others
(parity.json, a shipped model's fp16 checkpoint and card) may be left out of a copy, as the wheel
leaves out the checkpoint, but what is present must match. Bundles exported before checksums have
no "files": they load without these checks, and `verify` says it has nothing to check against.

    python -m mtkit.runtime.checksums BUNDLE_DIR    # record the checksums of a bundle's files
                                                    # (after editing a shipped model's card)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import bundle_format as bf
from .bundle_format import BundleConfig, BundleError

CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    import hashlib   # OpenSSL's bindings: kept off mt-translate's start-up, which checks sizes only

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def bundle_files(directory: Path) -> list[str]:
    """Every regular file under `directory` but config.json (which holds the list) and hidden ones,
    as sorted relative POSIX paths."""
    directory = Path(directory)
    names = []
    for p in directory.rglob("*"):
        relative = p.relative_to(directory)
        if p.is_file() and relative.as_posix() != bf.CONFIG_FILE and not any(
                part.startswith(".") for part in relative.parts):
            names.append(relative.as_posix())
    return sorted(names)


def manifest(directory: Path) -> dict[str, dict]:
    """config.json's "files": {name: {"sha256": hex, "bytes": size}} for every bundle file."""
    return {name: {"sha256": file_sha256(Path(directory) / name), "bytes": (Path(directory) / name).stat().st_size}
            for name in bundle_files(directory)}


def runtime_files(config: BundleConfig) -> list[str]:
    """The files a Translator may open: the tokenizer, the word counts, and every variant's graphs and their data."""
    names = [config.tokenizer, *([config.lexicon] if config.lexicon else [])]
    for variant, entry in config.variants.items():
        names += [*bf.variant_graphs(variant, entry), *bf.variant_data(entry)]
    return names


def check_size(directory: Path, config: BundleConfig, name: str) -> None:
    """Raise BundleError naming the file if its size is not the one recorded (no record: no check)."""
    expected = config.files.get(name)
    path = Path(directory) / name
    if expected is None or not path.is_file():
        return   # a missing file gets its own message from whoever opens it
    size = path.stat().st_size
    if size != expected["bytes"]:
        raise BundleError(f"{path}: {size} bytes, but {bf.CONFIG_FILE} records {expected['bytes']}; the file is "
                          "damaged or incomplete (mt-models verify checks every file)")


@dataclass
class Verification:
    directory: Path
    checked: list[str] = field(default_factory=list)         # present and matching
    problems: list[str] = field(default_factory=list)        # "name: what is wrong"
    absent_optional: list[str] = field(default_factory=list)  # recorded, not needed to translate, not here
    unrecorded: list[str] = field(default_factory=list)      # here, but not in config.json's "files"
    recorded: bool = True                                     # False: an older bundle without checksums

    @property
    def ok(self) -> bool:
        return self.recorded and not self.problems

    @property
    def checked_bytes(self) -> int:
        return sum((self.directory / name).stat().st_size for name in self.checked)

    def error(self) -> str:
        """One message for a failed verification, naming every file at fault."""
        if not self.recorded:
            return (f"{self.directory / bf.CONFIG_FILE} records no checksums (the bundle was exported before "
                    "mt-export wrote them); re-export it to record them")
        return f"{self.directory}: " + "; ".join(self.problems)


def verify(directory: Path, config: BundleConfig | None = None) -> Verification:
    """Compare every file with its recorded size and sha256."""
    directory = Path(directory)
    config = config or BundleConfig.load(directory)
    result = Verification(directory, recorded=bool(config.files))
    if not result.recorded:
        return result
    needed = set(runtime_files(config))
    for name in sorted(needed - set(config.files)):
        result.problems.append(f"{name}: not in {bf.CONFIG_FILE}'s checksums, but the runtime opens it")
    for name, expected in sorted(config.files.items()):
        path = directory / name
        if not path.is_file():
            if name in needed:
                result.problems.append(f"{name}: missing")
            else:
                result.absent_optional.append(name)
        elif (size := path.stat().st_size) != expected["bytes"]:
            result.problems.append(f"{name}: {size} bytes, expected {expected['bytes']}")
        elif file_sha256(path) != expected["sha256"]:
            result.problems.append(f"{name}: sha256 does not match (the file was changed or damaged)")
        else:
            result.checked.append(name)
    result.unrecorded = [name for name in bundle_files(directory) if name not in config.files]
    return result


def record(directory: Path) -> BundleConfig:
    """Write the checksums of `directory`'s files into its config.json."""
    config = BundleConfig.load(directory)
    config.files = manifest(directory)
    config.save(directory)
    return config


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m mtkit.runtime.checksums BUNDLE_DIR")
    try:
        written = record(Path(sys.argv[1]))
    except BundleError as e:
        sys.exit(f"error: {e}")
    print(f"{Path(sys.argv[1]) / bf.CONFIG_FILE}: checksums of {len(written.files)} files recorded")
