"""What the engines load, built from the checkpoint into the work dir or reused: the ONNX bundle
(`mtkit.export.export_bundle`, with an int8 variant) and the CTranslate2 fp32 and int8 models
(`ct2_convert.py`), reused while newer than the checkpoint (the bundle also only while exported by
this same export code); and the size of each engine's weights."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from .engines import EngineSpec

if TYPE_CHECKING:
    from .bench import BenchConfig


class ArtifactError(Exception):
    """A given artifact (--ct2-dir) is not what it should be; the message says what to fix."""


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


def prepare(cfg: BenchConfig, engines: list[EngineSpec], work: Path, log) -> tuple[dict, dict[str, str]]:
    """Build or reuse the bundle and CT2 models that `engines` need. Returns the artifact paths and,
    for engines that cannot run, why."""
    artifacts: dict = {"checkpoint": str(cfg.checkpoint)}
    skip: dict[str, str] = {}
    kinds = {e.kind for e in engines}

    if "ort" in kinds:
        want_fp16 = any(e.kind == "ort" and e.precision == "fp16" for e in engines)
        try:
            artifacts["bundle"] = str(_bundle(cfg, work / "bundle", want_fp16, log))
        except Exception as e:  # export is another package: any failure skips the ORT engines, with why
            for spec in engines:
                if spec.kind == "ort":
                    skip[spec.name] = f"no bundle: {type(e).__name__}: {e}"
        else:
            from mtkit.runtime.bundle_format import BundleConfig

            variants = BundleConfig.load(Path(artifacts["bundle"])).variants
            for spec in engines:
                if spec.kind == "ort" and spec.precision not in variants:
                    skip[spec.name] = f"the bundle has no {spec.precision} variant"

    if "ct2" in kinds:
        from .ct2_convert import convert_checkpoint

        root = Path(cfg.ct2_dir) if cfg.ct2_dir else work / "ct2"
        for key, quantization in (("ct2_fp32", "float32"), ("ct2_int8", "int8")):
            path = root / quantization
            if cfg.ct2_dir:
                if not (path / "model.bin").is_file():
                    raise ArtifactError(f"{path}: no CTranslate2 model (--ct2-dir wants float32/ and int8/ "
                                     "as written by mt-bench or python -m mtkit.benchmarks.ct2_convert)")
            elif cfg.rebuild or not _fresh(path / "model.bin", cfg.checkpoint):
                log(f"converting to CTranslate2 {quantization}")
                convert_checkpoint(cfg.checkpoint, path, quantization)
            artifacts[key] = str(path)
    return artifacts, skip


def _bundle(cfg: BenchConfig, path: Path, want_fp16: bool, log) -> Path:
    from mtkit.runtime.bundle_format import BundleConfig

    if cfg.bundle:
        BundleConfig.load(Path(cfg.bundle))     # a clear BundleError if it is not one
        return Path(cfg.bundle)
    marker = path.with_name(path.name + ".exporter")          # beside the bundle, not in it
    fingerprint = exporter_fingerprint()
    if not cfg.rebuild and _fresh(path / "config.json", cfg.checkpoint) and marker.is_file() \
            and marker.read_text() == fingerprint:
        variants = BundleConfig.load(path).variants
        if "int8" in variants and ("fp16" in variants or not want_fp16):
            return path
    from mtkit.export.api import export_bundle

    log("exporting the ONNX bundle (fp32 + int8" + (" + fp16)" if want_fp16 else ")"))
    export_bundle(cfg.checkpoint, path, quantize="int8", fp16=want_fp16, force=True)
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
    path = Path(artifacts["ct2_int8" if spec.precision == "int8" else "ct2_fp32"]) / "model.bin"
    return path.stat().st_size, f"{path.parent.name}/model.bin"
