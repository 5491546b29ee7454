# Shared by prepare_test_models.sh and prepare_zoo_models.sh (sourced, not run): the two steps
# both need before they export or compare anything. Expects $python and $scripts to be set.

# The pinned Python packages of $scripts/requirements.txt in $python: compares installed versions
# with the `name==version` pins; pip runs only on a mismatch.
ensure_pinned_python_packages() {
    if ! "$python" - "$scripts/requirements.txt" <<'PY'
import sys
from importlib import metadata
ok = True
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if "==" not in line:
        continue
    name, version = (part.strip() for part in line.split("==", 1))
    try:
        ok = ok and metadata.version(name) == version
    except metadata.PackageNotFoundError:
        ok = False
sys.exit(0 if ok else 1)
PY
    then
        echo "== installing $scripts/requirements.txt into $python"
        "$python" -m pip install -q --disable-pip-version-check -r "$scripts/requirements.txt"
    fi
}

# Debian's python3-torch and python3-torchvision (visible to /usr/bin/python3 only), installed
# only when missing.
ensure_debian_torch() {
    if ! dpkg -s python3-torch python3-torchvision >/dev/null 2>&1; then
        echo "== installing python3-torch python3-torchvision (about 600 MB)"
        local sudo_cmd=()
        [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
        "${sudo_cmd[@]}" apt-get install -y python3-torch python3-torchvision
    fi
}
