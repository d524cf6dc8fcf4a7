#!/usr/bin/env bash
# Makes (once) a virtual environment with PyTorch from pip, outside the checkout, and prints the
# path of its python on stdout (the only line on stdout; progress goes to stderr).
#
#   python=$(bash scripts/setup-pip-torch.sh) || exit $?    # 77: skipped (no PyPI), 1: failed
#   python=$(bash scripts/setup-pip-torch.sh --cached-only)  # never installs: 77 when not set up
#
# Which torch: RINGSIDE_TORCH_VERSION (e.g. 2.7.1); unset, the newest 2.x that pip offers for
# this python. The plain `pip install torch` of a Linux x86_64 wheel pulls its CUDA libraries
# (nvidia-* wheels, several GB): only PyPI is reachable here, and that is what people install.
# torch imports and runs Gloo on a machine without a GPU with them.
#
# Where: RINGSIDE_PIP_ENV (the environment's folder), else
#   ${RINGSIDE_PIP_ROOT:-$HOME/.cache/ringside}/pip-torch-py<X.Y>-<torch version>
# The environment is complete when its stamp file (.ringside-stamp) exists; a second run with a
# stamp costs well under a second and needs no network: without RINGSIDE_TORCH_VERSION it reuses
# the newest complete environment (RINGSIDE_PIP_REFRESH=1 asks PyPI again for a newer torch).
# Python: RINGSIDE_PIP_PYTHON (default: python3 on PATH).
#
# Exit status: 0 ready (python path on stdout); 77 skipped: PyPI cannot be reached, or no
# python3 with venv (one line on stderr says which); 1 the install failed.
set -euo pipefail

log() { echo "setup-pip-torch: $*" >&2; }
skip() { log "skipped: $*"; exit 77; }

cached_only=0
case ${1:-} in
  --cached-only) cached_only=1 ;;
  "") ;;
  *) log "usage: $0 [--cached-only]"; exit 2 ;;
esac

py=${RINGSIDE_PIP_PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || skip "no $py on PATH"
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || skip "$py does not run"
"$py" -c 'import venv, ensurepip' 2>/dev/null || skip "$py has no venv/ensurepip module"

root=${RINGSIDE_PIP_ROOT:-$HOME/.cache/ringside}
want=${RINGSIDE_TORCH_VERSION:-}
stamp_name=.ringside-stamp

ready() {  # ready ENV: the environment is complete
  [[ -f $1/$stamp_name && -x $1/bin/python ]] &&
    compgen -G "$1/lib/python*/site-packages/torch/lib/libtorch_cpu.so" >/dev/null
}

env_dir() {  # env_dir VERSION
  if [[ -n ${RINGSIDE_PIP_ENV:-} ]]; then echo "$RINGSIDE_PIP_ENV"; else echo "$root/pip-torch-py$pyver-$1"; fi
}

# Cached: a named environment, or the newest complete one for this python.
if [[ -n ${RINGSIDE_PIP_ENV:-} ]] && ready "$RINGSIDE_PIP_ENV" &&
   { [[ -z $want ]] || grep -qx "torch=$want" "$RINGSIDE_PIP_ENV/$stamp_name"; }; then
  echo "$RINGSIDE_PIP_ENV/bin/python"; exit 0
fi
if [[ -n $want ]] && ready "$(env_dir "$want")"; then
  echo "$(env_dir "$want")/bin/python"; exit 0
fi
if [[ -z $want && -z ${RINGSIDE_PIP_ENV:-} && ${RINGSIDE_PIP_REFRESH:-0} != 1 ]]; then
  newest=$(for d in "$root"/pip-torch-py"$pyver"-2.*; do if ready "$d"; then echo "${d##*-}"; fi; done 2>/dev/null |
           sort -V | tail -n1)
  if [[ -n $newest ]]; then echo "$(env_dir "$newest")/bin/python"; exit 0; fi
fi

((cached_only == 0)) || skip "no pip torch environment${want:+ with torch $want} under ${RINGSIDE_PIP_ENV:-$root} (run scripts/setup-pip-torch.sh)"

# Not cached: ask PyPI (this is also the reachability check).
versions=$("$py" -m pip index versions torch --timeout 20 --retries 1 2>/dev/null |
           sed -n 's/^Available versions: //p' | tr -d ' ' | tr ',' '\n') ||
  true
[[ -n $versions ]] || skip "PyPI cannot be reached ('$py -m pip index versions torch' failed); pip torch is not set up"
if [[ -z $want ]]; then
  want=$(grep -E '^2\.[0-9]+(\.[0-9]+)?$' <<<"$versions" | sort -V | tail -n1)
  [[ -n $want ]] || { log "PyPI offers no torch 2.x for python $pyver"; exit 1; }
elif ! grep -qx "$want" <<<"$versions"; then
  log "PyPI offers no torch $want for python $pyver (it offers: $(tr '\n' ' ' <<<"$versions"))"
  exit 1
fi
dir=$(env_dir "$want")
if ready "$dir"; then echo "$dir/bin/python"; exit 0; fi

mkdir -p "$(dirname "$dir")"
free_kb=$(df -Pk "$(dirname "$dir")" | awk 'NR==2 {print $4}')
if ((free_kb < 12 * 1024 * 1024)); then
  log "needs about 12 GB free under $(dirname "$dir") (has $((free_kb / 1024 / 1024)) GB)"; exit 1
fi

# One installer at a time per environment (test.sh and demo.sh may run together).
exec 9>"$dir.lock"
flock 9
if ready "$dir"; then echo "$dir/bin/python"; exit 0; fi
log "installing torch $want for python $pyver into $dir (a few GB; minutes)"
start=$SECONDS
rm -rf "$dir"
"$py" -m venv "$dir"
if ! "$dir/bin/python" -m pip install --no-cache-dir --progress-bar off -q "torch==$want" >&2; then
  log "pip install torch==$want failed"; rm -rf "$dir"; exit 1
fi
if ! got=$("$dir/bin/python" -c 'import torch, torch.distributed as d; assert d.is_gloo_available(); print(torch.__version__)' 2>&1 | tail -n1); then
  log "torch $want installed but does not import with Gloo: $got"; rm -rf "$dir"; exit 1
fi
{ echo "torch=$want"; echo "torch_version=$got"; echo "python=$pyver"; date -u +installed=%FT%TZ; } >"$dir/$stamp_name"
log "torch $got ready in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1))"
echo "$dir/bin/python"
