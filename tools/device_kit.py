#!/usr/bin/env python
"""A device kit: everything a GPU machine without network needs to run framesweep, in small chunks.

The GPU machine this is for has a Python with CUDA PyTorch but no vLLM, Ray, Polars or PyAV, no
network, and takes a limited amount of files per transfer. `build` (here, with network) resolves the
vLLM release that pins the machine's torch and links its CUDA major, downloads it and every package
the machine's image lacks, and splits the wheels into checksummed chunks; `install` (there) collects
the chunks carried over consecutive transfers, reassembles and verifies them, installs the wheels
into a folder of their own (`--no-index --no-deps`; the image itself is left alone) and
import-checks vllm, ray, polars and framesweep.

    python tools/device_kit.py build .kit                     # here; writes .kit/manifest.json + chunks
    python3 tools/device_kit.py receive --from .kit           # there, after each transfer of a chunk
    python3 tools/device_kit.py install --from .kit           # there, once every chunk has arrived
    python tools/device_kit.py pack DIR FILES...              # chunk files at hand (rehearsals, tests)
    export PYTHONPATH=/tmp/framesweep-site                    # then run as usual

`tools/device_image.txt` lists the image's packages (name==version where known): a package listed
there at the version the resolution wants, or with no known version, is not carried.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE_LIST = Path(__file__).with_name("device_image.txt")
MANIFEST = "manifest.json"
FORMAT = 1
MIB = 1 << 20
DEFAULT_TARGET = Path(tempfile.gettempdir()) / "framesweep-kit"
DEFAULT_SITE = Path(tempfile.gettempdir()) / "framesweep-site"
IMPORT_CHECK = ("vllm", "ray", "polars", "av", "pydantic", "engine")
# Optional kernel libraries vLLM imports only inside the code paths that use them (DeepSeek MLA,
# Blackwell CuTe-DSL kernels, TileLang kernels, NVDEC decoding, GPU-direct loading, FlashInfer
# backends), decord (framesweep decodes with PyAV by default), and two tools of ray[default] that a
# single-node run never starts (py-spy: the dashboard's stack traces; virtualenv: pip runtime envs).
# Together with what only they need they are ~600 MB, more than the rest of the kit (532 MiB for
# vLLM 0.26.0: 9 chunks of 60 MiB); `--full` carries them anyway.
SKIP = ("tokenspeed-mla", "tilelang", "pynvvideocodec", "humming-kernels", "fastsafetensors",
        "nvidia-cutlass-dsl", "quack-kernels", "flashinfer-python", "decord", "py-spy", "virtualenv")
PLATFORMS = ("manylinux_2_35_x86_64", "manylinux_2_34_x86_64", "manylinux_2_31_x86_64", "manylinux_2_28_x86_64",
             "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "linux_x86_64")


class KitError(RuntimeError):
    """A kit that cannot be built, or chunks that cannot be put back together."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------- chunks (no network, no pip)

def pack(files: Sequence[Path], out: Path, chunk_bytes: int = 60 * MIB, meta: dict | None = None) -> dict:
    """Write `files` (kept by base name) as one byte stream cut into `chunk_bytes` chunks under `out`,
    with `manifest.json` giving each file's offset, size and sha256 and each chunk's size and sha256."""
    if chunk_bytes <= 0:
        raise ValueError("chunk_bytes must be positive")
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        raise KitError(f"two files share a name: {sorted(n for n in names if names.count(n) > 1)}")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("chunk-*"):
        old.unlink()
    entries, chunks, offset = [], [], 0
    cur, cur_h, cur_n = None, hashlib.sha256(), 0

    def close_chunk() -> None:
        nonlocal cur, cur_h, cur_n
        if cur is not None:
            cur.close()
            chunks.append({"name": Path(cur.name).name, "size": cur_n, "sha256": cur_h.hexdigest()})
        cur, cur_h, cur_n = None, hashlib.sha256(), 0

    for f in files:
        h = hashlib.sha256()
        size = 0
        with f.open("rb") as src:
            while block := src.read(min(MIB, chunk_bytes)):
                h.update(block)
                size += len(block)
                while block:
                    if cur is None:
                        cur = (out / f"chunk-{len(chunks):04d}").open("wb")
                    take = block[: chunk_bytes - cur_n]
                    cur.write(take)
                    cur_h.update(take)
                    cur_n += len(take)
                    block = block[len(take):]
                    if cur_n == chunk_bytes:
                        close_chunk()
        entries.append({"name": f.name, "offset": offset, "size": size, "sha256": h.hexdigest()})
        offset += size
    close_chunk()
    manifest = {"format": FORMAT, "chunk_bytes": chunk_bytes, "total_bytes": offset, "files": entries,
                "chunks": chunks, **(meta or {})}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def load_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if not path.exists():
        raise KitError(f"no {MANIFEST} in {folder}: carry it with every chunk")
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise KitError(f"{path}: kit format {manifest.get('format')!r}, this tool reads {FORMAT}")
    return manifest


def receive(src: Path, target: Path) -> tuple[list[str], list[str]]:
    """Copy the chunks that arrived in `src` into `target` (each checked against the manifest first).

    Returns (chunks held now, chunks still missing). A chunk in `src` whose size or checksum is
    wrong raises `KitError` naming it; nothing corrupt is ever stored in `target`.
    """
    manifest = load_manifest(src)
    target.mkdir(parents=True, exist_ok=True)
    held = target / MANIFEST
    if held.exists() and json.loads(held.read_text()) != manifest:
        # another kit was collected here before: start over rather than mix two kits
        for old in target.glob("chunk-*"):
            old.unlink()
    shutil.copyfile(src / MANIFEST, target / MANIFEST)
    for c in manifest["chunks"]:
        arrived = src / c["name"]
        if not arrived.exists() or (target / c["name"]).exists():
            continue
        _check_chunk(arrived, c)
        tmp = target / (c["name"] + ".part")
        shutil.copyfile(arrived, tmp)
        os.replace(tmp, target / c["name"])
    have = [c["name"] for c in manifest["chunks"] if (target / c["name"]).exists()]
    missing = [c["name"] for c in manifest["chunks"] if c["name"] not in have]
    return have, missing


def _check_chunk(path: Path, c: dict) -> None:
    size = path.stat().st_size
    if size != c["size"]:
        raise KitError(f"chunk {c['name']} is corrupt: {size} bytes, the manifest says {c['size']}")
    digest = sha256_file(path)
    if digest != c["sha256"]:
        raise KitError(f"chunk {c['name']} is corrupt: sha256 {digest[:16]}..., the manifest says "
                       f"{c['sha256'][:16]}...")


def unpack(target: Path, dest: Path) -> list[Path]:
    """Reassemble the files of the kit held in `target` into `dest`; every chunk and file is verified.

    Raises `KitError` naming every missing chunk, or the first corrupt chunk or file.
    """
    manifest = load_manifest(target)
    missing = [c["name"] for c in manifest["chunks"] if not (target / c["name"]).exists()]
    if missing:
        raise KitError(f"{len(missing)} of {len(manifest['chunks'])} chunks missing in {target}: "
                       f"{', '.join(missing)}")
    for c in manifest["chunks"]:
        _check_chunk(target / c["name"], c)
    dest.mkdir(parents=True, exist_ok=True)
    stream = _Stream([target / c["name"] for c in manifest["chunks"]])
    out: list[Path] = []
    try:
        for e in manifest["files"]:
            path = dest / e["name"]
            h = hashlib.sha256()
            with path.open("wb") as f:
                left = e["size"]
                while left:
                    block = stream.read(min(left, MIB))
                    if not block:
                        raise KitError(f"the chunks end inside {e['name']}")
                    f.write(block)
                    h.update(block)
                    left -= len(block)
            if h.hexdigest() != e["sha256"]:
                raise KitError(f"{e['name']} does not match its checksum after reassembly")
            out.append(path)
    finally:
        stream.close()
    return out


class _Stream:
    """The chunks read back to back as one file."""

    def __init__(self, paths: list[Path]) -> None:
        self._paths, self._f = list(paths), None

    def read(self, n: int) -> bytes:
        while True:
            if self._f is None:
                if not self._paths:
                    return b""
                self._f = self._paths.pop(0).open("rb")
            block = self._f.read(n)
            if block:
                return block
            self._f.close()
            self._f = None

    def close(self) -> None:
        if self._f is not None:
            self._f.close()


# ---------------------------------------------------------------- checks on a wheel

def elf_needed(data: bytes) -> list[str]:
    """The DT_NEEDED entries (shared libraries linked) of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    SHT_DYNAMIC, DT_NEEDED = 6, 1
    needed: list[str] = []
    for sec in sections:
        if sec[1] != SHT_DYNAMIC:
            continue
        strtab = sections[sec[6]]  # sh_link: the string table of this dynamic section
        str_off = strtab[4]
        for pos in range(sec[4], sec[4] + sec[5], 16):
            tag, val = struct.unpack_from("<qQ", data, pos)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                end = data.index(b"\0", str_off + val)
                needed.append(data[str_off + val:end].decode())
    return needed


def wheel_requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def torch_pin(wheel: Path) -> str | None:
    """The exact torch version a wheel's metadata pins (`Requires-Dist: torch==X`), if any."""
    for req in wheel_requires(wheel):
        m = re.fullmatch(r"torch\s*==\s*([\w.+]+)", req.split(";")[0].strip())
        if m:
            return m.group(1)
    return None


def cuda_runtimes_linked(wheel: Path, pattern: str = r"[^/]+/_C[^/]*\.so") -> set[str]:
    """CUDA runtime majors (`libcudart.so.N`) that the wheel's main extension modules link."""
    majors: set[str] = set()
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if re.fullmatch(pattern, name):
                for lib in elf_needed(z.read(name)):
                    m = re.fullmatch(r"libcudart\.so\.(\d+)", lib)
                    if m:
                        majors.add(m.group(1))
    return majors


def check_vllm_wheel(wheel: Path, torch: str, cuda_major: str) -> None:
    """Fail unless the wheel pins exactly `torch` and links the CUDA runtime of major `cuda_major`."""
    pin = torch_pin(wheel)
    if pin != torch.split("+")[0]:
        raise KitError(f"{wheel.name} pins torch=={pin}, the device has torch {torch}")
    linked = cuda_runtimes_linked(wheel)
    if linked != {cuda_major}:
        raise KitError(f"{wheel.name} links libcudart.so.{'/'.join(sorted(linked)) or '?'}, the device's torch "
                       f"is built for CUDA {cuda_major}")


# ---------------------------------------------------------------- resolution (network: here only)

@dataclass
class Image:
    """The device image's Python packages: canonical name -> version (None: present, version unknown)."""

    packages: dict[str, str | None]
    python: str = "3.12"

    @classmethod
    def read(cls, path: Path = IMAGE_LIST) -> Image:
        pkgs: dict[str, str | None] = {}
        python = "3.12"
        for line in path.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, _, version = line.partition("==")
            if canonical(name) == "python":
                python = ".".join(version.split(".")[:2])
                continue
            pkgs[canonical(name)] = version.strip() or None
        return cls(pkgs, python)

    def provides(self, name: str, version: str) -> bool:
        """True when the image already has this package at a version the kit can rely on."""
        key = canonical(name)
        return key in self.packages and self.packages[key] in (None, version)


@dataclass
class Resolution:
    vllm: str
    wheels: dict[str, str] = field(default_factory=dict)  # canonical name -> version to carry
    from_image: dict[str, str] = field(default_factory=dict)  # wanted, assumed present in the image
    skipped: list[str] = field(default_factory=list)


class _Pip:
    """pip in a throwaway venv of its own (a recent pip: dry-run resolution for another platform)."""

    def __init__(self, work: Path, image: Image) -> None:
        self.work, self.image = work, image
        self.venv = work / "resolver"
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        self.python = str(self.venv / "bin" / "python")
        self.run("install", "-q", "--upgrade", "pip", "packaging")
        # the image's packages of known version, as installed stubs: the resolver keeps them and
        # does not descend into them (torch and its CUDA libraries are never downloaded)
        site = Path(subprocess.run([self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip())
        for name, version in image.packages.items():
            if version:
                info = site / f"{name.replace('-', '_')}-{version}.dist-info"
                info.mkdir(exist_ok=True)
                (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
                (info / "INSTALLER").write_text("stub\n")
                (info / "RECORD").write_text("")

    def target_args(self) -> list[str]:
        args = ["--only-binary=:all:", "--python-version", self.image.python, "--implementation", "cp"]
        for p in PLATFORMS:
            args += ["--platform", p]
        return args

    def run(self, *args: str) -> subprocess.CompletedProcess:
        r = subprocess.run([self.python, "-m", "pip", *args], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise KitError(f"pip {' '.join(args[:3])} ... failed:\n{r.stderr[-3000:]}")
        return r

    def versions(self, name: str) -> list[str]:
        out = self.run("index", "versions", name, *self.target_args()).stdout
        m = re.search(r"Available versions: (.*)", out)
        return [v.strip() for v in m.group(1).split(",")] if m else []

    def download(self, reqs: Iterable[str], dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        self.run("download", "-q", "--no-deps", "-d", str(dest), *self.target_args(), *reqs)

    def report(self, roots: Sequence[str]) -> list[dict]:
        rep = self.work / "report.json"
        self.run("install", "--dry-run", "--quiet", "--report", str(rep), *self.target_args(), *roots)
        return json.loads(rep.read_text())["install"]


def find_vllm(pip: _Pip, torch: str, cuda_major: str, wheels: Path) -> tuple[str, Path]:
    """The newest vLLM release whose wheel pins `torch` exactly and links CUDA `cuda_major`.

    Releases pin ever newer torch versions, so the search bisects the release list (each probe
    downloads one wheel, ~300 MB) and then checks the found wheel's CUDA runtime.
    """
    from packaging.version import Version

    want = Version(torch.split("+")[0])
    releases = sorted((v for v in pip.versions("vllm") if not Version(v).is_prerelease), key=Version)
    probes: dict[str, Version | None] = {}

    def pin_of(v: str) -> Version | None:
        if v not in probes:
            d = wheels / f"probe-{v}"
            pip.download([f"vllm=={v}"], d)
            pin = torch_pin(next(d.glob("vllm-*.whl")))
            probes[v] = Version(pin) if pin else None
        return probes[v]

    lo, hi = 0, len(releases) - 1  # find the last release whose pin <= want
    while lo < hi:
        mid = (lo + hi + 1) // 2
        pin = pin_of(releases[mid])
        if pin is not None and pin <= want:
            lo = mid
        else:
            hi = mid - 1
    version = releases[lo]
    if pin_of(version) != want:
        raise KitError(f"no vLLM release pins torch=={torch}: the nearest, vllm {version}, pins {pin_of(version)}")
    wheel = next((wheels / f"probe-{version}").glob("vllm-*.whl"))
    check_vllm_wheel(wheel, torch, cuda_major)
    return version, wheel


def _closure(report: list[dict], roots: Sequence[str], skip: set[str], python: str) -> tuple[set[str], set[str]]:
    """Names reachable from `roots` through the resolved packages' requirements (markers evaluated for
    the device's Python on Linux x86-64), not descending into `skip`. Returns (reached, wanted but
    absent from the resolution)."""
    from packaging.requirements import Requirement

    meta = {canonical(i["metadata"]["name"]): i["metadata"] for i in report}
    env = {"python_version": python, "python_full_version": python + ".0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    todo = [Requirement(r) for r in roots]
    seen: set[tuple[str, frozenset[str]]] = set()
    reached, absent = set(), set()
    while todo:
        req = todo.pop()
        name = canonical(req.name)
        key = (name, frozenset(req.extras))
        if key in seen or name in skip:
            continue
        seen.add(key)
        if name not in meta:
            absent.add(name)
            continue
        reached.add(name)
        for dep in meta[name].get("requires_dist") or []:
            d = Requirement(dep)
            extras = req.extras or {""}
            if d.marker is None or any(d.marker.evaluate({**env, "extra": e}) for e in extras):
                todo.append(d)
    return reached, absent


def resolve(pip: _Pip, image: Image, vllm: str, roots: Sequence[str], skip: set[str]) -> Resolution:
    """The packages to carry: the closure of vLLM and framesweep's requirements, less the image's."""
    roots = [f"vllm=={vllm}", *roots]
    report = pip.report(roots)
    reached, absent = _closure(report, roots, skip, image.python)
    extra = sorted(a for a in absent if a not in image.packages)
    if extra:  # requirements pip skipped (markers it evaluated for this interpreter, not the device's)
        report = pip.report([*roots, *extra])
        reached, absent = _closure(report, roots, skip, image.python)
    res = Resolution(vllm=vllm, skipped=sorted(skip & {canonical(i["metadata"]["name"]) for i in report}))
    for item in report:
        name, version = canonical(item["metadata"]["name"]), item["metadata"]["version"]
        if name not in reached:
            continue
        if image.provides(name, version):
            res.from_image[name] = version
        else:
            res.wheels[name] = version
    for name in absent - skip:
        if name in image.packages:
            res.from_image[name] = image.packages[name] or "image"
    return res


def project_requirements() -> list[str]:
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(data["project"]["dependencies"])


def build(out: Path, *, torch: str, cuda_major: str, vllm: str | None, chunk_mib: float,
          skip: set[str], image_path: Path, work: Path | None = None) -> dict:
    """Resolve, download and chunk the kit into `out` (network; see the module docstring)."""
    image = Image.read(image_path)
    work = work or Path(tempfile.mkdtemp(prefix="fs-kit-"))
    wheels = work / "wheels"
    t0 = time.perf_counter()
    pip = _Pip(work, image)
    if vllm is None:
        vllm, vllm_wheel = find_vllm(pip, torch, cuda_major, wheels)
    else:
        pip.download([f"vllm=={vllm}"], wheels / f"probe-{vllm}")
        vllm_wheel = next((wheels / f"probe-{vllm}").glob("vllm-*.whl"))
        check_vllm_wheel(vllm_wheel, torch, cuda_major)
    res = resolve(pip, image, vllm, project_requirements(), skip)
    carry = wheels / "carry"
    pip.download([f"{n}=={v}" for n, v in sorted(res.wheels.items()) if n != "vllm"], carry)
    shutil.copy2(vllm_wheel, carry / vllm_wheel.name)
    own = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                          "-w", str(carry), str(ROOT)], capture_output=True, text=True, check=False)
    if own.returncode != 0:
        raise KitError(f"building the framesweep wheel failed:\n{own.stderr[-2000:]}")
    files = sorted(carry.glob("*.whl"))
    meta = {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "vllm": vllm, "torch": torch,
            "cuda": cuda_major, "python": image.python, "carried": dict(sorted(res.wheels.items())),
            "from_image": dict(sorted(res.from_image.items())), "skipped": res.skipped,
            "build_s": round(time.perf_counter() - t0, 1)}
    return pack(files, out, int(chunk_mib * MIB), meta)


# ---------------------------------------------------------------- install (on the device)

def install(src: Path, target: Path, site: Path, python: str = sys.executable,
            imports: Sequence[str] = IMPORT_CHECK) -> dict:
    """Collect what arrived, reassemble, verify, pip-install into `site`, import-check. Returns facts."""
    receive(src, target)
    wheels = target / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    files = unpack(target, wheels)
    site.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    r = subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--disable-pip-version-check", "--upgrade", "--target", str(site),
                        *map(str, files)], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise KitError(f"pip install --no-index --no-deps failed:\n{r.stderr[-3000:]}")
    install_s = time.perf_counter() - t0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(":")}
    check = ("import importlib, json, sys\n"
             "out = {}\n"
             f"for m in {list(imports)!r}:\n"
             "    mod = importlib.import_module(m)\n"
             "    out[m] = getattr(mod, '__version__', 'ok')\n"
             "print(json.dumps(out))\n")
    r = subprocess.run([python, "-c", check], capture_output=True, text=True, env=env, check=False)
    if r.returncode != 0:
        raise KitError(f"import check failed:\n{r.stderr[-3000:]}")
    versions = json.loads(r.stdout.strip().splitlines()[-1])
    pip_check = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True, env=env, check=False)
    return {"wheels": len(files), "install_s": round(install_s, 1), "site": str(site), "imports": versions,
            "pip_check": pip_check.stdout.strip().splitlines()}


# ---------------------------------------------------------------- CLI

def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="resolve, download and chunk the kit (needs the package index)")
    b.add_argument("out", type=Path)
    b.add_argument("--torch", default="2.11.0", help="the device's torch version")
    b.add_argument("--cuda", default="13", help="the CUDA major the device's torch is built for")
    b.add_argument("--vllm", default=None, help="a vLLM release (default: found from the torch pin)")
    b.add_argument("--chunk-mib", type=float, default=60.0)
    b.add_argument("--image", type=Path, default=IMAGE_LIST, help="the device image's package list")
    b.add_argument("--full", action="store_true", help="also carry the optional kernel libraries (SKIP)")
    b.add_argument("--work", type=Path, default=None, help="download folder (default: a temporary one)")
    k = sub.add_parser("pack", help="chunk files already at hand (no resolution, no network)")
    k.add_argument("out", type=Path)
    k.add_argument("files", type=Path, nargs="+")
    k.add_argument("--chunk-mib", type=float, default=60.0)
    for name in ("receive", "install"):
        s = sub.add_parser(name, help="collect the chunks that arrived" if name == "receive" else
                           "collect, reassemble, verify, install and import-check")
        s.add_argument("--from", dest="src", type=Path, default=ROOT / ".kit")
        s.add_argument("--target", type=Path, default=DEFAULT_TARGET, help="where chunks are collected")
        if name == "install":
            s.add_argument("--site", type=Path, default=DEFAULT_SITE, help="where the wheels are installed")
    args = p.parse_args(argv)
    try:
        if args.cmd == "build":
            m = build(args.out, torch=args.torch, cuda_major=args.cuda, vllm=args.vllm, chunk_mib=args.chunk_mib,
                      skip=set() if args.full else {canonical(s) for s in SKIP}, image_path=args.image,
                      work=args.work)
            print(f"vllm {m['vllm']}: {len(m['files'])} wheels, {m['total_bytes'] / MIB:.0f} MiB in "
                  f"{len(m['chunks'])} chunks of <= {m['chunk_bytes'] / MIB:.0f} MiB -> {args.out}")
        elif args.cmd == "pack":
            m = pack(args.files, args.out, int(args.chunk_mib * MIB))
            print(f"{len(m['files'])} files, {len(m['chunks'])} chunks -> {args.out}")
        elif args.cmd == "receive":
            have, missing = receive(args.src, args.target)
            print(f"{len(have)}/{len(have) + len(missing)} chunks collected in {args.target}"
                  + (f"; still missing: {', '.join(missing)}" if missing else "; complete"))
        else:
            print(json.dumps(install(args.src, args.target, args.site), indent=1))
    except KitError as err:
        print(f"device_kit: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
