"""Model management: checksums in config.json, `mt-models` (list, info, verify, install, remove),
and resolving a model by name. Downloads come from an HTTP server on 127.0.0.1 in a thread."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ENGLISH, GERMAN, ORT_THREADS, stderr_on_terminal
from mtkit.runtime import ModelLoadError, Translator, bundle, checksums, install, model_store
from mtkit.runtime.bundle_format import BundleConfig
from mtkit.runtime.models_cli import cli


# Every test here gets an empty models directory and cache (conftest.models_dir).
pytestmark = pytest.mark.usefixtures("models_dir")


def mt_models(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def translates(model) -> bool:
    return Translator(model, threads=ORT_THREADS).translate(GERMAN[0], beam_size=1)[0].text == ENGLISH[0]


def copy_bundle(fixture_bundle, dest: Path) -> Path:
    return Path(shutil.copytree(fixture_bundle, dest))


def corrupt(directory: Path, name: str = "decoder.int8.onnx") -> None:
    """Overwrite 100 bytes in the middle of a file, keeping its size."""
    path = directory / name
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 100] = bytes(255 - b for b in data[middle:middle + 100])
    path.write_bytes(bytes(data))


def make_tgz(directory: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(directory, arcname=directory.name)
    return dest


def leftovers(models_dir: Path) -> list[str]:
    return sorted(p.name for p in models_dir.iterdir()) if models_dir.exists() else []


# ----- checksums ------------------------------------------------------------------------------------


def test_export_records_every_files_checksum(fixture_bundle):
    config = BundleConfig.load(fixture_bundle)
    names = sorted(p.name for p in fixture_bundle.iterdir() if p.name != "config.json")
    assert sorted(config.files) == names
    for name, entry in config.files.items():
        assert entry == {"sha256": checksums.file_sha256(fixture_bundle / name),
                         "bytes": (fixture_bundle / name).stat().st_size}
    assert checksums.verify(fixture_bundle).ok


def test_the_shipped_model_verifies():
    result = checksums.verify(bundle.MODELS_DIR / "de-en")
    assert result.ok and {"encoder.int8.onnx", "decoder.int8.onnx", "tokenizer.model"} <= set(result.checked)
    assert result.absent_optional == [] and result.unrecorded == []


def test_a_load_checks_the_sizes_of_the_files_it_opens(fixture_bundle, tmp_path):
    d = copy_bundle(fixture_bundle, tmp_path / "grown")
    with open(d / "encoder.int8.onnx", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ModelLoadError, match=r"encoder.int8.onnx: \d+ bytes, but config.json records"):
        Translator(d, threads=ORT_THREADS)


def test_a_bundle_without_checksums_still_loads(fixture_bundle, tmp_path):
    d = copy_bundle(fixture_bundle, tmp_path / "old")
    config = json.loads((d / "config.json").read_text())
    del config["files"]
    (d / "config.json").write_text(json.dumps(config))
    with open(d / "parity.json", "a") as f:   # unchecked: nothing recorded to compare with
        f.write(" ")
    assert translates(d)
    result = mt_models("verify", d)
    assert result.exit_code == 1 and "records no checksums" in result.stderr
    result = mt_models("install", d)
    assert result.exit_code == 0 and "installed without verification" in result.stderr
    assert translates("old")


def test_verify_names_a_file_changed_in_place(fixture_bundle, tmp_path):
    d = copy_bundle(fixture_bundle, tmp_path / "corrupt")
    size = (d / "decoder.int8.onnx").stat().st_size
    corrupt(d)
    assert (d / "decoder.int8.onnx").stat().st_size == size
    Translator(d, threads=ORT_THREADS)   # the size is right, so a load does not notice
    result = mt_models("verify", d)
    assert result.exit_code == 1
    assert "decoder.int8.onnx: sha256 does not match" in result.stderr
    assert "encoder" not in result.stderr and "tokenizer" not in result.stderr


# ----- mt-models over a models directory ----------------------------------------------------------------


def test_install_list_info_verify_remove(fixture_bundle, tmp_path, models_dir):
    source = copy_bundle(fixture_bundle, tmp_path / "tiny-de-en")
    result = mt_models("install", source)
    assert result.exit_code == 0, result.output
    assert "installed tiny-de-en" in result.stdout and "7 files verified" in result.stdout
    assert leftovers(models_dir) == ["tiny-de-en"]

    listing = mt_models("list")
    assert listing.exit_code == 0
    rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:] if line.strip()}
    assert "installed" in rows["tiny-de-en"] and "de->en, en->de" in rows["tiny-de-en"]
    assert "shipped" in rows["de-en*"]               # the shipped model is the default (*)
    assert f"models directory: {models_dir}" in listing.stdout

    info = mt_models("info", "tiny-de-en")
    assert info.exit_code == 0
    assert "source     installed" in info.stdout and "fp32" in info.stdout and "int8" in info.stdout
    assert "7 files recorded" in info.stdout

    verify = mt_models("verify", "tiny-de-en")
    assert verify.exit_code == 0 and "7 files verified" in verify.stdout

    assert translates("tiny-de-en")
    assert Translator("tiny-de-en", threads=ORT_THREADS).path == (models_dir / "tiny-de-en").resolve()

    removed = mt_models("remove", "tiny-de-en")
    assert removed.exit_code == 0 and leftovers(models_dir) == []
    assert "tiny-de-en" not in mt_models("list").stdout
    gone = mt_models("info", "tiny-de-en")
    assert gone.exit_code == 1 and "mt-models list shows the models" in gone.stderr


def test_install_from_archives(fixture_bundle, tmp_path, models_dir):
    tgz = make_tgz(copy_bundle(fixture_bundle, tmp_path / "from-tgz"), tmp_path / "from-tgz.tar.gz")
    zpath = tmp_path / "bundle.zip"
    with zipfile.ZipFile(zpath, "w") as z:              # files at the archive's root
        for f in fixture_bundle.iterdir():
            z.write(f, f.name)
    assert mt_models("install", tgz).exit_code == 0
    assert mt_models("install", zpath, "--name", "from-zip").exit_code == 0
    assert leftovers(models_dir) == ["from-tgz", "from-zip"]
    assert translates("from-tgz") and translates("from-zip")


@pytest.mark.parametrize("variable", ["MT_CACHE_DIR", "XDG_CACHE_HOME"])
def test_an_unwritable_cache_names_itself_and_mt_cache_dir(fixture_bundle, tmp_path, monkeypatch, variable):
    """An archive given with -m is unpacked in the cache; when that cannot be made (its path a regular
    file, a read-only disk) the error said only '.../mtkit/bundles: Not a directory'."""
    tgz = make_tgz(copy_bundle(fixture_bundle, tmp_path / "m"), tmp_path / "m.tar.gz")
    (tmp_path / "a-file").write_text("")
    monkeypatch.delenv("MT_CACHE_DIR")
    monkeypatch.setenv(variable, str(tmp_path / "a-file"))
    with pytest.raises(ModelLoadError) as error:
        Translator(tgz)
    message = str(error.value)
    assert f"{bundle.cache_dir()}: cannot unpack m.tar.gz in the cache directory (Not a directory)" in message
    assert "set MT_CACHE_DIR to a writable directory" in message and len(message.splitlines()) == 1


def test_install_keeps_an_installed_model_unless_forced(fixture_bundle, models_dir):
    assert mt_models("install", fixture_bundle, "--name", "m").exit_code == 0
    again = mt_models("install", fixture_bundle, "--name", "m")
    assert again.exit_code == 1 and "already installed" in again.stderr and "--force" in again.stderr
    assert mt_models("install", fixture_bundle, "--name", "m", "--force").exit_code == 0
    assert leftovers(models_dir) == ["m"] and translates("m")


def test_install_refuses_a_corrupted_bundle_and_leaves_nothing(fixture_bundle, tmp_path, models_dir):
    d = copy_bundle(fixture_bundle, tmp_path / "corrupt")
    corrupt(d)
    for source in (d, make_tgz(d, tmp_path / "corrupt.tar.gz")):
        result = mt_models("install", source)
        assert result.exit_code == 1
        assert "decoder.int8.onnx: sha256 does not match" in result.stderr and "nothing was installed" in result.stderr
        assert leftovers(models_dir) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_is_one_line_naming_the_models_directory(fixture_bundle, tmp_path, server, models_dir):
    """The disk fills up while a bundle directory is copied, an archive unpacked or a URL downloaded:
    one line naming the models directory, and nothing installed. A download had said 'download failed
    (OSError: [Errno 28] No space left on device)', as if the network had, and an archive named the
    hidden temporary directory, gone by then. The disk fills as a file size limit makes it
    (RLIMIT_FSIZE: a write past it fails with EFBIG), in the command's process only."""
    import resource

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))     # less than the .onnx files

    www, url = server
    make_tgz(fixture_bundle, www / "m.tar.gz")
    for source, verb in ((fixture_bundle, "copy"), (www / "m.tar.gz", "unpack"), (f"{url}/m.tar.gz", "download")):
        done = subprocess.run([str(Path(sys.executable).parent / "mt-models"), "install", str(source), "--name", "m"],
                              capture_output=True, text=True, timeout=120, preexec_fn=small_disk)
        assert (done.returncode, done.stderr) == (
            1, f"mt-models: error: {source}: cannot {verb} into {models_dir} (File too large)\n")
        assert leftovers(models_dir) == []


def test_install_reports_what_it_verified_as_verify_does(fixture_bundle, tmp_path):
    d = copy_bundle(fixture_bundle, tmp_path / "partial")
    (d / "parity.json").unlink()                  # recorded, not needed to translate
    (d / "notes.txt").write_text("mine")          # not recorded
    installed = mt_models("install", d)
    assert installed.exit_code == 0, installed.output
    verified = mt_models("verify", "partial")
    assert "6 files verified" in installed.stdout and "6 files verified" in verified.stdout
    for line in ("not here, not needed to translate: parity.json", "not covered by the checksums: notes.txt"):
        assert line in installed.stdout and line in verified.stdout


def damaged_archives(fixture_bundle, tmp_path) -> dict[str, Path]:
    """name -> an archive that cannot be unpacked: not one at all, cut short, or changed inside."""
    tgz = make_tgz(fixture_bundle, tmp_path / "whole.tar.gz").read_bytes()
    zpath = tmp_path / "whole.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for f in fixture_bundle.iterdir():
            z.write(f, f.name)
    garbled = bytearray(tgz)
    garbled[200:204] = bytes(255 - b for b in garbled[200:204])   # deflate data: zlib.error, not a ReadError
    archives = {"bad.tar.gz": b"not a tarball", "cut.tar.gz": tgz[: len(tgz) // 2], "garbled.tar.gz": garbled,
                "cut.zip": zpath.read_bytes()[:5000]}
    for name, data in archives.items():
        (tmp_path / name).write_bytes(bytes(data))
    return {name: tmp_path / name for name in archives}


def test_install_says_in_one_line_what_is_wrong_with_an_archive(fixture_bundle, tmp_path, models_dir):
    for name, path in damaged_archives(fixture_bundle, tmp_path).items():
        result = mt_models("install", path)
        assert result.exit_code == 1 and leftovers(models_dir) == []
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        why = "not a valid .tar.gz / .zip archive" if name == "bad.tar.gz" else "archive is truncated or damaged"
        assert f"{path}: cannot unpack: {why}" in result.stderr


def test_list_shows_a_broken_model_without_failing(models_dir):
    (models_dir / "broken").mkdir(parents=True)
    (models_dir / "broken" / "config.json").write_text("{")
    result = mt_models("list")
    assert result.exit_code == 0 and "de-en*" in result.stdout
    assert "broken: " in result.stdout and "config.json: not valid JSON" in result.stdout


def test_errors_and_usage(fixture_bundle, tmp_path):
    assert mt_models("--version").stdout.startswith("mt-models ")
    assert mt_models("install").exit_code == 2                    # usage: SOURCE missing
    assert mt_models("frobnicate").exit_code == 2
    missing = mt_models("install", tmp_path / "nowhere")
    assert missing.exit_code == 1 and "nowhere: no such file or directory" in missing.stderr
    ftp = mt_models("install", "ftp://example.org/m.tar.gz")
    assert ftp.exit_code == 1 and "unsupported URL scheme 'ftp' (use http or https" in ftp.stderr
    for name in ("../escape", ""):                                # "" is not the default name
        bad_name = mt_models("install", fixture_bundle, "--name", name)
        assert bad_name.exit_code == 1 and f"{name!r} is not a valid model name" in bad_name.stderr
    shipped = mt_models("remove", "de-en")
    assert shipped.exit_code == 1 and "not installed" in shipped.stderr
    assert (bundle.MODELS_DIR / "de-en" / "config.json").is_file()


# ----- resolving a name ---------------------------------------------------------------------------------


def test_names_resolve_installed_first_then_shipped_and_paths_win(fixture_bundle, tmp_path, monkeypatch, models_dir):
    assert bundle.resolve_model("de-en") == (bundle.MODELS_DIR / "de-en").resolve()   # shipped
    install.install(str(fixture_bundle), "de-en")                                      # a user's copy wins
    assert bundle.resolve_model("de-en") == (models_dir / "de-en").resolve()
    monkeypatch.chdir(tmp_path)
    copy_bundle(fixture_bundle, tmp_path / "de-en-local")
    (tmp_path / "de-en").mkdir()                                 # an existing path is a path, even if empty
    with pytest.raises(ModelLoadError, match="de-en/config.json: missing"):
        Translator(tmp_path / "de-en")
    # As a name, it says which model the name gives elsewhere: a data folder called de-en in the current
    # directory had made -m de-en fail with only 'de-en/config.json: missing; is de-en a model bundle?'
    with pytest.raises(ModelLoadError, match=f"^de-en: a folder here, not a model bundle; paths come before "
                                             f"names: give the model named de-en by its path, {models_dir / 'de-en'}$"):
        Translator("de-en")
    assert Translator("de-en-local", threads=ORT_THREADS).path == (tmp_path / "de-en-local").resolve()
    monkeypatch.setenv("MT_MODEL", "de-en-local")
    assert Translator(threads=ORT_THREADS).path == (tmp_path / "de-en-local").resolve()
    with pytest.raises(ModelLoadError, match="no-such-model: no such file or directory, nor a model of that name"):
        Translator("no-such-model")


def test_installing_under_a_shipped_models_name_says_so_and_list_marks_it(fixture_bundle, models_dir):
    result = mt_models("install", fixture_bundle, "--name", "de-en")
    assert result.exit_code == 0, result.output
    assert "-m de-en now gives the installed one; without -m the shipped one stays the default" in result.stderr
    assert bundle.resolve_model("de-en") == (models_dir / "de-en").resolve()
    assert bundle.resolve_model(None) == (bundle.MODELS_DIR / "de-en").resolve()
    listing = mt_models("list").stdout
    rows = [line.split() for line in listing.splitlines() if line.startswith("de-en")]
    assert [(r[0], r[-1]) for r in rows] == [("de-en*", str(bundle.MODELS_DIR / "de-en")),   # still the default
                                             ("de-en", str(models_dir / "de-en"))]
    assert "shipped (shadowed)" in listing
    assert "(shadowed): -m de-en gives the installed de-en, not the shipped one" in listing
    other = mt_models("install", fixture_bundle, "--name", "mine")
    assert other.exit_code == 0 and "shipped" not in other.stderr


def test_models_dir_defaults_to_the_user_data_dir(tmp_path, monkeypatch):
    import sys

    monkeypatch.delenv("MT_MODELS_DIR")
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        assert model_store.models_dir() == tmp_path / "data" / "mtkit" / "models"
    assert model_store.models_dir().parts[-2:] == ("mtkit", "models")


# ----- installing from a URL ----------------------------------------------------------------------------


class Handler(SimpleHTTPRequestHandler):
    """Serves files; under /truncated/ it promises the whole file and sends half."""

    def do_GET(self):
        if not self.path.startswith("/truncated/"):
            return super().do_GET()
        data = (Path(self.directory) / self.path.rsplit("/", 1)[-1]).read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path, monkeypatch):
    """(folder, base URL) of an HTTP server on 127.0.0.1; its thread stops at the test's end, or after
    60 s whatever happens."""
    www = tmp_path / "www"
    www.mkdir()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(www)))
    httpd.timeout = 0.1
    stop, deadline = threading.Event(), time.monotonic() + 60

    def serve():
        while not stop.is_set() and time.monotonic() < deadline:
            httpd.handle_request()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{httpd.server_address[1]}"
    stop.set()
    thread.join(5)
    httpd.server_close()


def test_install_from_a_url(fixture_bundle, tmp_path, server, models_dir):
    www, url = server
    make_tgz(copy_bundle(fixture_bundle, tmp_path / "web-model"), www / "web-model.tar.gz")
    result = mt_models("install", f"{url}/web-model.tar.gz")
    assert result.exit_code == 0, result.output
    assert leftovers(models_dir) == ["web-model"] and translates("web-model")


def test_a_download_on_a_terminal_names_its_archive_as_written(fixture_bundle, tmp_path, server, models_dir):
    """The progress line went through rich's markup: 'de-en[v2] [b].tar.gz', installed --name web, was
    shown downloading as 'downloading de-en '."""
    www, url = server
    make_tgz(copy_bundle(fixture_bundle, tmp_path / "web-model"), www / "de-en[v2] [b].tar.gz")
    code, shown = stderr_on_terminal([str(Path(sys.executable).parent / "mt-models"), "install", "--name", "web",
                                      f"{url}/de-en%5Bv2%5D%20%5Bb%5D.tar.gz"])
    assert code == 0 and leftovers(models_dir) == ["web"]
    assert "downloading de-en[v2] [b] " in shown.decode()


def test_a_failed_or_interrupted_download_leaves_nothing(fixture_bundle, tmp_path, server, models_dir):
    www, url = server
    make_tgz(copy_bundle(fixture_bundle, tmp_path / "web-model"), www / "web-model.tar.gz")
    truncated = mt_models("install", f"{url}/truncated/web-model.tar.gz")
    assert truncated.exit_code == 1 and "download incomplete" in truncated.stderr
    missing = mt_models("install", f"{url}/absent.tar.gz")
    assert missing.exit_code == 1 and "HTTP 404" in missing.stderr
    corrupt_dir = copy_bundle(fixture_bundle, tmp_path / "bad")
    corrupt(corrupt_dir)
    make_tgz(corrupt_dir, www / "bad.tar.gz")
    bad = mt_models("install", f"{url}/bad.tar.gz")
    assert bad.exit_code == 1 and "decoder.int8.onnx: sha256 does not match" in bad.stderr

    for name, path in damaged_archives(fixture_bundle, tmp_path).items():   # served whole, so no Content-Length gap
        shutil.copy(path, www / name)
        result = mt_models("install", f"{url}/{name}")
        assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert f"{url}/{name}: download incomplete or not an archive (" in result.stderr
        assert ".install-" not in result.stderr                 # not the temporary file, gone by now

    def interrupt(total):
        def advance(n):
            raise KeyboardInterrupt
        return advance

    with pytest.raises(KeyboardInterrupt):
        install.install(f"{url}/web-model.tar.gz", show_progress=interrupt)
    assert leftovers(models_dir) == []


def test_cache_shows_its_parts_and_clears_them(fixture_bundle, tmp_path, monkeypatch):
    """mt-models cache: each part and its size; --clear empties it, and a translator builds its
    optimized graphs again at the next load."""
    root = tmp_path / "cache"
    monkeypatch.setenv("MT_CACHE_DIR", str(root))
    result = mt_models("cache")
    assert result.exit_code == 0 and result.output == f"{root}: empty\n"
    assert translates(fixture_bundle)                      # writes the optimized graphs into ort/
    (root / "bench").mkdir()
    (root / "bench" / "model.bin").write_bytes(b"x" * 3 * 2**20)
    result = mt_models("cache")
    lines = result.output.splitlines()
    assert result.exit_code == 0 and lines[0] == str(root)
    assert [line.split()[0] for line in lines[1:]] == ["bench", "ort", "total"]
    assert lines[1].split()[1:3] == ["3.0", "MB"] and "optimized graphs" in lines[2]
    assert float(lines[3].split()[1]) > 3.0
    result = mt_models("cache", "--clear")
    assert result.exit_code == 0 and result.output.startswith(f"cleared {root} (")
    assert list(root.iterdir()) == []
    assert translates(fixture_bundle) and (root / "ort").is_dir()


def test_an_install_without_force_never_replaces_a_model_installed_meanwhile(fixture_bundle, tmp_path, server,
                                                                                models_dir):
    """Two installs of one name at once: both found the name free, and the one that finished second
    replaced the first's model without --force (three concurrent `mt-models install DIR --name m` all
    said 'installed'). Now the second says the name is taken and keeps what is there."""
    www, url = server
    make_tgz(copy_bundle(fixture_bundle, tmp_path / "web-model"), www / "web-model.tar.gz")
    theirs = copy_bundle(fixture_bundle, tmp_path / "theirs")
    (theirs / "notes.txt").write_text("the other install's")

    def install_theirs_meanwhile(total):      # the other process installs while this one downloads
        install.install(str(theirs), "m")
        return lambda n: None

    with pytest.raises(install.InstallError, match=r"^m: already installed in .*; nothing was installed"):
        install.install(f"{url}/web-model.tar.gz", "m", show_progress=install_theirs_meanwhile)
    assert leftovers(models_dir) == ["m"] and (models_dir / "m" / "notes.txt").is_file()


def test_a_models_directory_that_cannot_be_written_is_one_line_naming_it(fixture_bundle, tmp_path, monkeypatch):
    """A read-only or misplaced models directory was Python's OSError as it stands, naming the hidden
    temporary directory: 'mt-models: error: [Errno 30] Read-only file system: '/srv/models/.install-m-x1y2''.
    Here the directory cannot be made since a file is in its way (a read-only mount fails the same way),
    or is that file: this said '(File exists)', mkdir's reason for a regular file on its path."""
    (tmp_path / "a-file").write_text("")
    for models in (tmp_path / "a-file" / "models", tmp_path / "a-file"):
        monkeypatch.setenv("MT_MODELS_DIR", str(models))
        result = mt_models("install", fixture_bundle, "--name", "m")
        assert result.exit_code == 1 and result.stderr == (
            f"mt-models: error: {models}: cannot write to the models directory (Not a directory); "
            "set MT_MODELS_DIR to a writable one\n")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes to a read-only folder")
def test_remove_from_a_read_only_models_directory_is_one_line(fixture_bundle, models_dir):
    assert mt_models("install", fixture_bundle, "--name", "m").exit_code == 0
    models_dir.chmod(0o500)
    try:
        result = mt_models("remove", "m")
    finally:
        models_dir.chmod(0o700)
    assert result.exit_code == 1 and result.stderr == (
        f"mt-models: error: m: cannot remove {models_dir / 'm'} (Permission denied)\n")
    assert translates("m")


def test_an_install_killed_midway_leaves_nothing_that_the_next_install_keeps(fixture_bundle, models_dir):
    """kill -9 (the OOM killer, a reboot) during an install left its hidden copy of the bundle in the
    models directory for ever, unlisted (54 MB for the shipped model, each time). The next install or
    removal deletes such copies once nothing has written into them for an hour; one at work stays."""
    command = [str(Path(sys.executable).parent / "mt-models"), "install", str(fixture_bundle), "--name", "m"]
    for _ in range(10):                 # the copy takes milliseconds: on a busy machine it may end first
        killed = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not any(models_dir.glob(".install-m-*/*")) and time.monotonic() < deadline and killed.poll() is None:
            time.sleep(0.001)
        killed.kill()
        killed.wait()
        if left := [p for p in models_dir.iterdir() if p.name.startswith(".install-m-")]:
            break
        shutil.rmtree(models_dir / "m", ignore_errors=True)        # installed whole: again
    assert left, "the install finished before it could be killed, ten times"
    hours_ago = time.time() - 2 * 3600                 # as if it was killed two hours ago
    for path in [*left, *(p for d in left for p in d.rglob("*"))]:
        os.utime(path, (hours_ago, hours_ago), follow_symlinks=False)
    at_work = models_dir / ".install-other-x1y2z3"     # another install, still copying
    (at_work / "bundle").mkdir(parents=True)
    assert mt_models("install", fixture_bundle, "--name", "n").exit_code == 0
    assert leftovers(models_dir) == [at_work.name, "n"]


def test_install_of_a_checkpoint_says_to_export_it(fixture_checkpoint, models_dir):
    """A .pt is a zip file: install unpacked it and said 'no config.json inside; is this a model bundle
    written by mt-export?', where mt-translate -m says what to do."""
    result = mt_models("install", fixture_checkpoint)
    assert result.exit_code == 1 and result.stderr == (
        f"mt-models: error: {fixture_checkpoint}: a training checkpoint, not a bundle; export it with "
        "mt-export first (mt-eval can score a checkpoint directly)\n")
    assert leftovers(models_dir) == []


def test_a_file_inside_a_bundle_given_as_the_model_names_the_bundle(fixture_bundle, tmp_path, models_dir):
    """-m BUNDLE/config.json (or an .onnx of it, as other toolkits take a model file) said only 'not a
    bundle directory nor a .tar.gz / .zip archive', and install 'cannot unpack'; now each names the
    directory to give."""
    for name in ("config.json", "encoder.int8.onnx"):
        given = fixture_bundle / name
        expected = f"{given}: a file of the bundle {fixture_bundle}; give the bundle's directory"
        with pytest.raises(ModelLoadError, match=f"^{re.escape(expected)}$"):
            Translator(given)
        for command in ("verify", "install"):
            result = mt_models(command, given)
            assert (result.exit_code, result.stderr) == (1, f"mt-models: error: {expected}\n")
    assert leftovers(models_dir) == []


def test_install_dot_takes_the_name_of_the_directory(fixture_bundle, tmp_path, monkeypatch, models_dir):
    """cd de-en-v2 && mt-models install . said "'' is not a valid model name; pass --name"."""
    monkeypatch.chdir(copy_bundle(fixture_bundle, tmp_path / "de-en-v2"))
    empty = mt_models("install", "")        # an unset variable ("$MODEL"), not the current directory
    assert (empty.exit_code, empty.stderr) == (1, "mt-models: error: no model to install: give a bundle "
                                                  "directory, a .tar.gz / .zip archive or an http(s) URL\n")
    result = mt_models("install", ".")
    assert result.exit_code == 0, result.output
    assert leftovers(models_dir) == ["de-en-v2"]


def test_an_installed_model_is_on_disk_before_it_is_put_in_place(fixture_bundle, models_dir, monkeypatch):
    """Renamed into place still in the page cache, a model could come back from a power cut whole in name
    and size but zero-filled (loading checks sizes, not contents). Each file is fsynced before the move."""
    synced = []             # (the file, by its inode, which the move keeps; whether the model was in place yet)
    real_fsync = os.fsync

    def fsync(fd):
        synced.append((os.fstat(fd).st_ino, (models_dir / "m").exists()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert mt_models("install", fixture_bundle, "--name", "m").exit_code == 0
    assert sorted(synced) == sorted((p.stat().st_ino, False) for p in (models_dir / "m").iterdir())
