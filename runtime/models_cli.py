"""`mt-models`: list, inspect, verify, install and remove models.

Installed models live in the user's models directory (`model_store.models_dir`); the shipped
model (the checkout's models/, or the copy inside the installed wheel) is listed with them. Every
command that takes `-m` resolves a model name against both (`bundle.resolve_model`).
Exit codes: 0 ok, 1 error (the message names the file at fault), 2 usage.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import bundle, checksums, install, model_store
from . import bundle_format as bf
from .bundle_format import BundleConfig, BundleError
from .cli_support import CommandError, Group, command

PROG = "mt-models"


def warn(message: str) -> None:
    click.echo(f"{PROG}: warning: {message}", err=True)


def megabytes(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def size_on_disk(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def directions(config: BundleConfig) -> str:
    return ", ".join(f"{src}->{tgt}" for src, tgt in config.directions) or ", ".join(config.language_tags)


def open_model(model: str) -> tuple[Path, BundleConfig]:
    try:
        directory = bundle.resolve_model(model)
        return directory, BundleConfig.load(directory)
    except BundleError as e:
        raise CommandError(str(e)) from None


def where(directory: Path) -> str:
    """installed / shipped / path: where a bundle directory comes from."""
    directory = directory.resolve()
    if directory.parent == model_store.models_dir().resolve():
        return "installed"
    return "shipped" if directory.is_relative_to(bundle.MODELS_DIR) else "path"


def default_model() -> tuple[Path | None, str]:
    """(the default model's directory, or None and why there is none)."""
    try:
        return bundle.resolve_model(None), ""
    except BundleError as e:
        return None, str(e)


@command(PROG, cls=Group)
def cli() -> None:
    """Manage translation models: the shipped one and those installed in the models directory
    ($MT_MODELS_DIR, else the platform's user data directory). mt-translate, mt-eval and mt-tui
    take any of them by name: -m NAME."""


@cli.command("list")
def list_models() -> None:
    """The shipped and the installed models; * marks the default (used without -m). A shipped model
    is (shadowed) when an installed one has its name: -m NAME gives the installed one."""
    default, why_none = default_model()
    installed = model_store.installed_models()
    # -m NAME gives an installed model before a shipped one of the same name (bundle.find_model)
    shadowed = [name for name in bundle.shipped_models() if name in installed]
    entries = [(name, path, "shipped (shadowed)" if name in shadowed else "shipped")
               for name, path in bundle.shipped_models().items()]
    entries += [(name, path, "installed") for name, path in installed.items()]
    rows, unreadable = [], []
    for name, path, source in entries:
        try:
            directory = bundle.resolve_model(path)
            config = BundleConfig.load(directory)
            about = [directions(config), ",".join(bundle.available_variants(config))]
        except BundleError as e:
            directory, about = path, ["unreadable", "-"]
            unreadable.append(f"{name}: {e}")
        star = "*" if default is not None and directory.resolve() == default.resolve() else ""
        rows.append([name + star, *about, megabytes(size_on_disk(path)), source, str(path)])
    if rows:
        header = ["NAME", "DIRECTIONS", "VARIANTS", "SIZE", "SOURCE", "PATH"]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
        for row in [header, *rows]:
            click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1])
    else:
        click.echo("no models")
    for line in unreadable:
        click.echo(line)
    for name in shadowed:
        click.echo(f"(shadowed): -m {name} gives the installed {name}, not the shipped one")
    if default is None:
        click.echo(f"* no default model: {why_none}")
    elif not any(r[0].endswith("*") for r in rows):
        click.echo(f"* default model (MT_MODEL): {default}")
    click.echo(f"models directory: {model_store.models_dir()}"
               + ("  ($MT_MODELS_DIR)" if os.environ.get("MT_MODELS_DIR") else ""))


@cli.command()
@click.argument("model")
def info(model: str) -> None:
    """What a model is: directions, variants, sizes, checksums, provenance. MODEL: a name or a path."""
    directory, config = open_model(model)
    default, _ = default_model()
    source = where(directory) + (", the default model" if default and default.resolve() == directory else "")
    variants = []
    for variant in bundle.available_variants(config):
        entry = config.variants[variant]
        names = [*bf.variant_graphs(variant, entry), *bf.variant_data(entry)]
        sizes = ", ".join(f"{n} {megabytes((directory / n).stat().st_size)}" for n in names
                          if (directory / n).is_file())
        variants.append(f"{variant} ({sizes})")
    provenance, parity = config.provenance, config.parity
    files = checksums.bundle_files(directory)
    lines = [
        ("name", directory.name),
        ("path", str(directory)),
        ("source", source),
        ("directions", directions(config)),
        ("variants", "; ".join(variants) or "none"),
        ("model", (f"{config.encoder_layers}+{config.decoder_layers} layers, d_model {config.d_model}, "
                   f"{config.n_heads} heads, vocabulary {config.vocab_size}")),
        ("size", f"{megabytes(size_on_disk(directory))} in {len(files) + 1} files"),
        ("checksums", f"{len(config.files)} files recorded (mt-models verify checks them)" if config.files
         else "none recorded (exported before mt-export wrote them)"),
        ("exported", provenance.get("exported_at", "unknown")),
        ("parity", {True: "passed", False: "failed"}.get(parity.get("passed"), "unknown")),
    ]
    if "README.md" in files:
        lines.append(("card", str(directory / "README.md")))
    for key, value in lines:
        click.echo(f"{key:<11}{value}")


@cli.command()
@click.argument("model")
def verify(model: str) -> None:
    """Check every file of a model against the sha256 and size in its config.json. MODEL: a name or a path."""
    directory, config = open_model(model)
    result = checksums.verify(directory, config)
    if not result.ok:
        raise CommandError(result.error())
    report(f"{directory}:", result)


def report(first: str, result: checksums.Verification) -> None:
    """What was verified, as `verify` and `install` say it: the files checked, and those not checked."""
    click.echo(f"{first} {len(result.checked)} files verified ({megabytes(result.checked_bytes)})")
    if result.absent_optional:
        click.echo(f"  not here, not needed to translate: {summarize(result.absent_optional)}")
    if result.unrecorded:
        click.echo(f"  not covered by the checksums: {summarize(result.unrecorded)}")


def summarize(names: list[str]) -> str:
    """File names, each folder's files counted instead of listed: "a.pt, training/ (12 files)"."""
    folders: dict[str, int] = {}
    for name in names:
        if "/" in name:
            folder = name.split("/")[0] + "/"
            folders[folder] = folders.get(folder, 0) + 1
    files = [name for name in names if "/" not in name]
    return ", ".join(files + [f"{folder} ({n} file{'s' * (n > 1)})" for folder, n in folders.items()])


@cli.command("install")
@click.argument("source")
@click.option("--name", help="install under this name (default: the directory's or archive's name)")
@click.option("--force", is_flag=True, help="replace an installed model of the same name")
@click.option("-q", "--quiet", is_flag=True, help="no progress bar")
def install_model(source: str, name: str | None, force: bool, quiet: bool) -> None:
    """Install a model from a bundle directory, a .tar.gz / .zip archive, or an http(s) URL of one.
    Every file is checked against its recorded sha256 before the model appears under its name."""
    from rich.console import Console

    console = Console(stderr=True)
    try:
        if quiet or not console.is_terminal or not install.is_url(source):
            target, result = install.install(source, name, force)
        else:
            from rich.markup import escape
            from rich.progress import DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

            columns = (*Progress.get_default_columns()[:2], DownloadColumn(), TransferSpeedColumn(),
                       TimeRemainingColumn())
            with Progress(*columns, console=console, transient=True) as progress:
                def start(total: int | None):
                    # The archive's name as written: rich's default columns read the description as markup.
                    task = progress.add_task(f"downloading {escape(install.default_name(source))}", total=total)
                    return lambda n: progress.advance(task, n)

                target, result = install.install(source, name, force, show_progress=start)
    except (BundleError, OSError) as e:   # OSError: the models directory not writable, a full disk
        raise CommandError(str(e)) from None
    if not result.recorded:
        warn(f"{target.name}: its config.json records no checksums (exported before mt-export wrote them); "
             "installed without verification")
        click.echo(f"installed {target.name} in {target}")
    else:
        report(f"installed {target.name} in {target}:", result)
    shipped = bundle.shipped_models().get(target.name)
    if shipped is not None:     # names resolve installed first (bundle.find_model); the default is a path
        default, _ = default_model()
        stays = default is not None and default.resolve() == shipped.resolve()
        warn(f"{target.name} is also the shipped model's name; -m {target.name} now gives the installed one"
             + ("; without -m the shipped one stays the default" if stays else "")
             + f" (mt-models remove {target.name} undoes this)")


@cli.command()
@click.argument("name")
def remove(name: str) -> None:
    """Remove an installed model (the shipped one stays)."""
    try:
        target = install.remove(name)
    except (BundleError, OSError) as e:
        raise CommandError(str(e)) from None
    click.echo(f"removed {name} ({target})")


CACHE_PARTS = {   # what each part of mtkit's cache is, and what deleting it costs
    "ort": "optimized graphs, weights packed for this CPU (built again at the next load)",
    "bundles": "unpacked model archives (unpacked again when next used)",
    "bench": "mt-bench's exports and CTranslate2 conversions (made again at its next run)",
    "cpuid_sites": "devtools/avx2-only's list of CPU feature checks in the libraries",
}


@cli.command()
@click.option("--clear", is_flag=True, help="Delete it all; each part is made again when next needed.")
def cache(clear: bool) -> None:
    """What mtkit's cache holds ($MT_CACHE_DIR, else $XDG_CACHE_HOME/mtkit or ~/.cache/mtkit) and
    its size, or --clear it. Nothing in it is needed: it only saves time at the next load."""
    root = bundle.cache_root()
    parts = sorted(root.iterdir()) if root.is_dir() else []
    sizes = {part: size_on_disk(part) for part in parts}
    if clear:
        import shutil

        for part in parts:
            try:
                shutil.rmtree(part) if part.is_dir() and not part.is_symlink() else part.unlink()
            except OSError as e:
                raise CommandError(f"cannot delete {part}: {e.strerror or e}") from None
        click.echo(f"cleared {root} ({megabytes(sum(sizes.values()))})")
        return
    click.echo(str(root) + ("" if parts else ": empty"))
    for part, size in sizes.items():
        click.echo(f"  {part.name:<12} {megabytes(size):>10}  {CACHE_PARTS.get(part.name, '')}".rstrip())
    if parts:
        click.echo(f"  {'total':<12} {megabytes(sum(sizes.values())):>10}  (mt-models cache --clear deletes it)")


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name=PROG)


if __name__ == "__main__":
    main(sys.argv[1:])
