#!/usr/bin/env bash
# A Colab-like virtual environment: what Colab preinstalls that this companion relies on, and nothing of ours.
#
#   tools/colab_venv.sh [DIR]        (default build/colab-venv; DIR is deleted and made again)
#
# It holds torch ($TORCH_SPEC, default torch==2.13.0: the CPU build), numpy, matplotlib, tqdm, ipywidgets 7.7.1
# (the version Colab ships: $IPYWIDGETS_SPEC), the kernel (ipykernel), the test runners (pytest, nbval, hypothesis),
# and a stub package `google.colab`: the module by which the notebooks' setup cell recognises Colab. The companion
# itself is NOT installed: in `make colab-test` only the notebooks' own setup cell installs it.
#
# The widget tests under ipywidgets 7.7.1 (the package taken from the checkout, not installed):
#   tools/colab_venv.sh && PYTHONPATH=$PWD build/colab-venv/bin/python -m pytest -p no:cacheprovider tests/test_widget*.py
set -euo pipefail

DIR=${1:-build/colab-venv}
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
IPYWIDGETS_SPEC=${IPYWIDGETS_SPEC:-ipywidgets==7.7.1}

pip_install() {  # quiet, without the warnings about absent local index folders
    "$DIR/bin/python" -m pip install -q --progress-bar off "$@" 2>&1 |
        { grep -v "is ignored: it is neither a file nor a directory" || true; }
}

rm -rf "$DIR"
"$PYTHON" -m venv "$DIR"
pip_install "$TORCH_SPEC"   # first, so that nothing later pulls another torch build
pip_install numpy matplotlib tqdm "$IPYWIDGETS_SPEC" ipykernel pytest nbval hypothesis

site=$("$DIR/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$site/google/colab"   # no google/__init__.py: `google` stays a namespace package, as in Colab
cat > "$site/google/colab/__init__.py" <<'EOF'
"""A stub, not Google's package: marks this venv as Colab-like for transformer-nb (tools/colab_venv.sh)."""
EOF

if "$DIR/bin/python" -I -c 'import transformer_nb' 2>/dev/null; then  # -I: not from the cwd or PYTHONPATH
    echo "colab_venv: transformer_nb is importable in $DIR, but only the setup cell may install it" >&2
    exit 1
fi
"$DIR/bin/python" - <<'EOF'
import sys
from importlib.metadata import version

names = ("torch", "numpy", "matplotlib", "tqdm", "ipywidgets", "ipykernel", "ipython", "nbval")
print(f"Colab-like venv {sys.prefix}: python {sys.version.split()[0]}, " + ", ".join(f"{n} {version(n)}" for n in names))
EOF
