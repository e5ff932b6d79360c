"""tools/device_kit.py without network: chunking, collecting over several transfers, reassembly,
naming a missing or corrupt chunk, the wheel checks (torch pin, CUDA runtime linked), the closure of
requirements for the device's Python, and a whole install of a locally made wheel."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("device_kit", Path(__file__).resolve().parents[2] / "tools" / "device_kit.py")
kit = importlib.util.module_from_spec(_spec)
sys.modules["device_kit"] = kit
_spec.loader.exec_module(kit)

CHUNK = 1000


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    rng = __import__("random").Random(7)
    out = []
    for i, size in enumerate([0, 1, 999, 1000, 1001, 3500, 17]):
        p = tmp_path / "src" / f"f{i}.whl"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(bytes(rng.getrandbits(8) for _ in range(size)))
        out.append(p)
    return out


def _carry(kit_dir: Path, carry: Path, chunk: str) -> None:
    """One transfer: the manifest and one chunk, nothing else (the earlier ones are gone)."""
    shutil.rmtree(carry, ignore_errors=True)
    carry.mkdir()
    shutil.copy(kit_dir / kit.MANIFEST, carry)
    shutil.copy(kit_dir / chunk, carry)


def test_chunks_carried_one_by_one_reassemble_to_identical_bytes(tmp_path: Path, files: list[Path]) -> None:
    m = kit.pack(files, tmp_path / "kit", chunk_bytes=CHUNK, meta={"vllm": "test"})
    sizes = [c["size"] for c in m["chunks"]]
    assert max(sizes) <= CHUNK and sum(sizes) == sum(f.stat().st_size for f in files)
    assert len(m["chunks"]) == -(-sum(sizes) // CHUNK) and m["vllm"] == "test"
    target = tmp_path / "target"
    missing = None
    for c in m["chunks"]:
        _carry(tmp_path / "kit", tmp_path / "carry", c["name"])
        have, missing = kit.receive(tmp_path / "carry", target)
        assert c["name"] in have
    assert missing == []
    out = kit.unpack(target, tmp_path / "out")
    assert [p.name for p in out] == [f.name for f in files]
    assert all(p.read_bytes() == f.read_bytes() for p, f in zip(out, files))


def test_a_missing_chunk_is_named(tmp_path: Path, files: list[Path]) -> None:
    m = kit.pack(files, tmp_path / "kit", chunk_bytes=CHUNK)
    names = [c["name"] for c in m["chunks"]]
    for name in names[:2] + names[3:]:
        _carry(tmp_path / "kit", tmp_path / "carry", name)
        kit.receive(tmp_path / "carry", tmp_path / "target")
    with pytest.raises(kit.KitError, match=rf"1 of {len(names)} chunks missing .*: {names[2]}$"):
        kit.unpack(tmp_path / "target", tmp_path / "out")


def test_a_corrupt_chunk_is_named_on_arrival_and_at_reassembly(tmp_path: Path, files: list[Path]) -> None:
    kit.pack(files, tmp_path / "kit", chunk_bytes=CHUNK)
    _carry(tmp_path / "kit", tmp_path / "carry", "chunk-0001")
    bad = tmp_path / "carry" / "chunk-0001"
    data = bytearray(bad.read_bytes())
    data[10] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(kit.KitError, match="chunk chunk-0001 is corrupt: sha256"):
        kit.receive(tmp_path / "carry", tmp_path / "target")
    assert not (tmp_path / "target" / "chunk-0001").exists()  # nothing corrupt is kept
    shutil.copytree(tmp_path / "kit", tmp_path / "held")
    (tmp_path / "held" / "chunk-0003").write_bytes(b"short")  # damaged where it was kept
    with pytest.raises(kit.KitError, match="chunk chunk-0003 is corrupt: 5 bytes"):
        kit.unpack(tmp_path / "held", tmp_path / "out")


def test_a_new_kit_replaces_the_chunks_of_an_old_one(tmp_path: Path, files: list[Path]) -> None:
    kit.pack(files[:3], tmp_path / "old", chunk_bytes=CHUNK)
    _carry(tmp_path / "old", tmp_path / "carry", "chunk-0000")
    kit.receive(tmp_path / "carry", tmp_path / "target")
    m = kit.pack(files[3:], tmp_path / "new", chunk_bytes=CHUNK)
    _carry(tmp_path / "new", tmp_path / "carry", "chunk-0001")
    have, missing = kit.receive(tmp_path / "carry", tmp_path / "target")
    assert have == ["chunk-0001"] and len(missing) == len(m["chunks"]) - 1


def _elf(needed: list[str]) -> bytes:
    """A minimal 64-bit ELF file whose dynamic section links `needed`."""
    dynstr = b"\0" + b"".join(n.encode() + b"\0" for n in needed)
    offsets, pos = [], 1
    for n in needed:
        offsets.append(pos)
        pos += len(n) + 1
    dynamic = b"".join(struct.pack("<qQ", 1, o) for o in offsets) + struct.pack("<qQ", 0, 0)
    str_off = 64
    dyn_off = str_off + len(dynstr)
    sh_off = dyn_off + len(dynamic)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, sh_off, 0,
                                                                      64, 0, 0, 64, 3, 0)
    sections = (bytes(64) + struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, str_off, len(dynstr), 0, 0, 1, 0)
                + struct.pack("<IIQQQQIIQQ", 0, 6, 0, 0, dyn_off, len(dynamic), 1, 0, 8, 16))
    return header + dynstr + dynamic + sections


def _wheel(path: Path, requires: list[str], so: dict[str, bytes] | None = None, name: str = "vllm") -> Path:
    with zipfile.ZipFile(path, "w") as z:
        reqs = "".join(f"Requires-Dist: {r}\n" for r in requires)
        z.writestr(f"{name}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n{reqs}")
        for member, data in (so or {}).items():
            z.writestr(member, data)
    return path


@pytest.mark.engine
def test_elf_reader_agrees_with_readelf_on_a_real_library() -> None:
    import numpy

    lib = next(Path(numpy.__file__).parent.rglob("_multiarray_umath*.so"))
    needed = kit.elf_needed(lib.read_bytes())
    assert needed
    if shutil.which("readelf"):
        out = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=False).stdout
        assert needed == [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def test_vllm_wheel_must_pin_the_device_torch_and_link_its_cuda(tmp_path: Path) -> None:
    cu13 = {"vllm/_C.abi3.so": _elf(["libtorch.so", "libcudart.so.13", "libc.so.6"])}
    good = _wheel(tmp_path / "good.whl", ["torch==2.11.0", "numpy"], cu13)
    assert kit.torch_pin(good) == "2.11.0" and kit.cuda_runtimes_linked(good) == {"13"}
    kit.check_vllm_wheel(good, "2.11.0+cu130", "13")
    other_torch = _wheel(tmp_path / "t.whl", ["torch==2.13.0"], cu13)
    with pytest.raises(kit.KitError, match="pins torch==2.13.0, the device has torch 2.11.0"):
        kit.check_vllm_wheel(other_torch, "2.11.0", "13")
    cu12 = _wheel(tmp_path / "c.whl", ["torch==2.11.0"], {"vllm/_C.abi3.so": _elf(["libcudart.so.12"])})
    with pytest.raises(kit.KitError, match=r"links libcudart.so.12, the device's torch is built for CUDA 13"):
        kit.check_vllm_wheel(cu12, "2.11.0", "13")


def _item(name: str, version: str, requires: list[str]) -> dict:
    return {"metadata": {"name": name, "version": version, "requires_dist": requires}}


def test_closure_follows_the_device_python_extras_and_skips(tmp_path: Path) -> None:
    report = [
        _item("vllm", "0.26.0", ["six>=1; python_version > '3.11'", "old; python_version < '3.9'",
                                 "fastapi[standard]", "tilelang==0.1", "torch==2.11.0"]),
        _item("six", "1.17.0", []), _item("old", "1", []), _item("fastapi", "1", ["uvicorn; extra == 'standard'"]),
        _item("uvicorn", "1", []), _item("tilelang", "0.1", ["z3-solver"]), _item("z3-solver", "4", []),
    ]
    reached, absent = kit._closure(report, ["vllm==0.26.0"], {"tilelang"}, "3.12")
    assert reached == {"vllm", "six", "fastapi", "uvicorn"} and absent == {"torch"}
    image = kit.Image({"torch": "2.11.0", "six": None, "numpy": "2.5.2"})
    assert image.provides("torch", "2.11.0") and image.provides("six", "1.17.0")
    assert not image.provides("numpy", "2.3.5") and not image.provides("ray", "2.60.0")


def test_image_list_reads_versions_and_python() -> None:
    image = kit.Image.read()
    assert image.python == "3.12" and image.packages["torch"] == "2.11.0"
    assert "ray" not in image.packages and "polars" not in image.packages and "av" not in image.packages


@pytest.mark.engine
def test_install_rehearsal_on_cpu(tmp_path: Path) -> None:
    """The device half end to end, offline: a kit of a locally made wheel, carried in two transfers,
    installed with --no-index --no-deps into its own folder and import-checked."""
    whl = tmp_path / "wheels" / "fskit_probe-1.0-py3-none-any.whl"
    whl.parent.mkdir()
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("fskit_probe/__init__.py", "__version__ = '1.0'\n")
        z.writestr("fskit_probe-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fskit-probe\nVersion: 1.0\n")
        z.writestr("fskit_probe-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                   "Tag: py3-none-any\n")
        z.writestr("fskit_probe-1.0.dist-info/RECORD", "")
    m = kit.pack([whl], tmp_path / "kit", chunk_bytes=whl.stat().st_size // 2 + 1)
    assert len(m["chunks"]) == 2
    target, site = tmp_path / "target", tmp_path / "site"
    _carry(tmp_path / "kit", tmp_path / "carry", "chunk-0000")
    assert kit.main(["receive", "--from", str(tmp_path / "carry"), "--target", str(target)]) == 0
    _carry(tmp_path / "kit", tmp_path / "carry", "chunk-0001")
    facts = kit.install(tmp_path / "carry", target, site, imports=("fskit_probe",))
    assert facts["imports"] == {"fskit_probe": "1.0"} and facts["wheels"] == 1
    assert (site / "fskit_probe" / "__init__.py").exists()
    os.remove(target / "chunk-0000")
    assert kit.main(["install", "--from", str(tmp_path / "carry"), "--target", str(target), "--site",
                     str(site)]) == 2  # the CLI's answer when a chunk is missing


def test_build_manifest_of_the_shipped_kit_shape(tmp_path: Path, files: list[Path]) -> None:
    m = kit.pack(files, tmp_path / "kit", chunk_bytes=CHUNK, meta={"from_image": {"torch": "2.11.0"}})
    on_disk = json.loads((tmp_path / "kit" / kit.MANIFEST).read_text())
    assert on_disk == m and on_disk["format"] == kit.FORMAT and on_disk["from_image"] == {"torch": "2.11.0"}


@pytest.mark.engine
def test_gpu_run_scripts_parse_and_name_their_steps() -> None:
    root = Path(__file__).resolve().parents[2]
    for script in ("tools/gpu_run.sh", "tools/gpu_check.sh"):
        assert subprocess.run(["bash", "-n", str(root / script)], check=False).returncode == 0, script
    r = subprocess.run(["bash", str(root / "tools/gpu_run.sh"), "nope"], capture_output=True, text=True, check=False,
                       env={**os.environ, "OUT": str(root / "runs" / "gpu-run-usage")})
    assert r.returncode == 2 and "receive|install|run|rehearse" in r.stderr
