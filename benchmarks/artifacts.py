"""What the engines load, built from the checkpoint into the work dir or reused: the ONNX bundle
(`mtkit.export.export_bundle`, with an int8 variant) and the CTranslate2 fp32 and int8 models
(`ct2_convert.py`), reused while newer than the checkpoint (the bundle also only while exported by
this same export code); and the size of each engine's weights."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from .engines import EngineSpec

if TYPE_CHECKING:
    from .bench import BenchConfig


class ArtifactError(Exception):
    """A given artifact (--bundle, --ct2-dir) is not what it should be; the message says what to fix."""

CT2_QUANTIZATIONS = {"ct2_fp32": "float32", "ct2_int8": "int8"}     # artifact key -> subdirectory


def _fresh(path: Path, checkpoint: Path) -> bool:
    return path.exists() and path.stat().st_mtime >= checkpoint.stat().st_mtime


def exporter_fingerprint() -> str:
    """A hash of the code that shapes an exported bundle (the model, the export, the format): a cached
    bundle from other code would measure other graphs."""
    import mtkit.export
    import mtkit.runtime.bundle_format
    import mtkit.train.model

    files = sorted(Path(mtkit.export.__file__).parent.glob("*.py")) + \
        [Path(mtkit.train.model.__file__), Path(mtkit.runtime.bundle_format.__file__)]
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()


def check_given(cfg: BenchConfig, engines: list[EngineSpec], checkpoint_sha256: str) -> None:
    """ArtifactError unless --bundle and --ct2-dir, where given, can be used: a bundle exported from
    this checkpoint, with the variants of the engines asked for by name; CT2 models in float32/ and int8/."""
    from mtkit.runtime.bundle_format import BundleConfig, BundleError

    if cfg.bundle:
        try:
            config = BundleConfig.load(Path(cfg.bundle))
        except BundleError as e:
            raise ArtifactError(f"--bundle: {e}") from None
        recorded = config.provenance.get("checkpoint_sha256")
        if recorded != checkpoint_sha256:     # another model's figures would pass for this one's
            raise ArtifactError(f"--bundle {cfg.bundle}: not exported from {cfg.checkpoint} (its config.json "
                                f"records {_sha(recorded)}, the checkpoint's is {checkpoint_sha256[:12]}...); "
                                "leave --bundle out and mt-bench exports the checkpoint itself")
        missing = [e for e in engines if e.kind == "ort" and e.precision not in config.variants]
        if cfg.engines and missing:       # asked for by name; in the default set they are skipped
            raise ArtifactError(f"--bundle {cfg.bundle}: no variant for " +
                                ", ".join(f"{e.name} ({e.precision})" for e in missing) +
                                f"; it has {', '.join(config.variants)}")
    if cfg.ct2_dir:
        from .ct2_run import INFO_FILE

        for quantization in CT2_QUANTIZATIONS.values():
            path = Path(cfg.ct2_dir) / quantization
            if not (path / "model.bin").is_file():
                raise ArtifactError(f"{path}: no CTranslate2 model (--ct2-dir wants float32/ and int8/ "
                                    "as written by mt-bench or python -m mtkit.benchmarks.ct2_convert)")
            try:
                recorded = json.loads((path / INFO_FILE).read_text(encoding="utf-8")).get("checkpoint_sha256")
            except (OSError, ValueError, AttributeError):
                recorded = None
            if recorded != checkpoint_sha256:
                raise ArtifactError(f"--ct2-dir {path}: not converted from {cfg.checkpoint} (its {INFO_FILE} "
                                    f"records {_sha(recorded)}); leave --ct2-dir out and mt-bench converts the checkpoint")


def _sha(recorded: str | None) -> str:
    return f"checkpoint sha256 {recorded[:12]}..." if recorded else "no checkpoint sha256"


def prepare(cfg: BenchConfig, engines: list[EngineSpec], datasets: list[dict], work: Path,
            log) -> tuple[dict, dict[str, str], dict[str, dict]]:
    """Build or reuse the bundle and CT2 models that `engines` need (`check_given` has checked the given
    ones). Returns the artifact paths, the engines that cannot run here with why (skipped), and those
    whose artifact could not be built, as {name: {"error": why}} (failed)."""
    artifacts: dict = {"checkpoint": str(cfg.checkpoint)}
    skip: dict[str, str] = {}
    failed: dict[str, dict] = {}
    kinds = {e.kind for e in engines}

    if "ort" in kinds:
        want_fp16 = any(e.kind == "ort" and e.precision == "fp16" for e in engines)
        try:
            artifacts["bundle"] = str(_bundle(cfg, work / "bundle", want_fp16, datasets, log))
        except Exception as e:  # export is another package: any failure fails the ORT engines, with why
            for spec in engines:
                if spec.kind == "ort":
                    failed[spec.name] = {"error": f"no bundle: {type(e).__name__}: {e}"}
        else:
            from mtkit.runtime.bundle_format import BundleConfig

            variants = BundleConfig.load(Path(artifacts["bundle"])).variants
            for spec in engines:
                if spec.kind == "ort" and spec.precision not in variants:
                    skip[spec.name] = f"the bundle has no {spec.precision} variant"

    if "ct2" in kinds:
        from .ct2_convert import convert_checkpoint

        root = Path(cfg.ct2_dir) if cfg.ct2_dir else work / "ct2"
        for key, quantization in CT2_QUANTIZATIONS.items():
            path = root / quantization
            if not cfg.ct2_dir and (cfg.rebuild or not _fresh(path / "model.bin", cfg.checkpoint)):
                log(f"converting to CTranslate2 {quantization}")
                try:
                    convert_checkpoint(cfg.checkpoint, path, quantization)
                except Exception as e:  # ctranslate2's converter: any failure fails the CT2 engines, with why
                    for spec in engines:
                        if spec.kind == "ct2":
                            failed[spec.name] = {"error": f"no CTranslate2 model: {type(e).__name__}: {e}"}
                    break
            artifacts[key] = str(path)
    return artifacts, skip, failed


def parity_file(datasets: list[dict], path: Path) -> Path:
    """The test sets' pairs as the export's parity data (source<TAB>reference): the export then needs
    no dev set of the checkpoint's training run, which mt-bench has no option to point at."""
    rows = ("\t".join(text.replace("\t", " ") for text in pair)
            for d in datasets for pair in zip(d["sources"], d["refs"]))
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def _bundle(cfg: BenchConfig, path: Path, want_fp16: bool, datasets: list[dict], log) -> Path:
    from mtkit.runtime.bundle_format import BundleConfig

    if cfg.bundle:
        return Path(cfg.bundle)             # checked by `check_given`
    marker = path.with_name(path.name + ".exporter")          # beside the bundle, not in it
    fingerprint = exporter_fingerprint()
    if not cfg.rebuild and _fresh(path / "config.json", cfg.checkpoint) and marker.is_file() \
            and marker.read_text() == fingerprint:
        variants = BundleConfig.load(path).variants
        if "int8" in variants and ("fp16" in variants or not want_fp16):
            return path
    from mtkit.export.api import export_bundle

    log("exporting the ONNX bundle (fp32 + int8" + (" + fp16)" if want_fp16 else ")"))
    parity = parity_file(datasets, path.with_name(path.name + ".parity.tsv"))
    export_bundle(cfg.checkpoint, path, quantize="int8", fp16=want_fp16, force=True, parity_data=parity,
                  target_lang=cfg.tgt_lang)
    marker.write_text(fingerprint)
    return path


def model_size(spec: EngineSpec, artifacts: dict) -> tuple[int, str]:
    """Bytes of the weights each engine loads, and what was counted (tokenizer excluded everywhere)."""
    if spec.kind == "torch":
        from mtkit.train.checkpoint import load_checkpoint

        state = load_checkpoint(artifacts["checkpoint"]).model
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in state.values()}
        dtypes = "/".join(sorted({str(t.dtype).removeprefix("torch.") for t in state.values() if t.is_floating_point()}))
        return sum(storages.values()), f"{dtypes} state dict of the checkpoint (tied weights once; run in float32)"
    if spec.kind == "ort":
        from mtkit.runtime import bundle_format as bf

        directory = Path(artifacts["bundle"])
        entry = bf.BundleConfig.load(directory).variants[spec.precision]
        counted = [directory / name for name in (*bf.variant_graphs(spec.precision, entry), *bf.variant_data(entry))]
        return sum(p.stat().st_size for p in counted), " + ".join(sorted(p.name for p in counted))
    path = Path(artifacts[spec.ct2_model]) / "model.bin"
    converted = "" if spec.ct2_model == f"ct2_{spec.precision}" else f", converted to {spec.ct2_compute_type} on load"
    return path.stat().st_size, f"{path.parent.name}/model.bin{converted}"
