"""Put uv's binary into an agent scaffold's prefix, from its wheel on PyPI, with nothing but the
machine's python3: a fresh image has no pip and no venv module, and installing either would
change the machine the agent gets. The wheel is the manylinux one for this machine's
architecture; its sha256 is checked against the one the index publishes.

    python3 uv_from_pypi.py VERSION DEST_DIR"""

import hashlib
import io
import json
import os
import platform
import sys
import urllib.request
import zipfile

INDEX = "https://pypi.org/simple/uv/"


def main() -> None:
    version, dest = sys.argv[1], sys.argv[2]
    arch = platform.machine()
    wanted = f"uv-{version}-py3-none-manylinux_2_17_{arch}.manylinux2014_{arch}"
    request = urllib.request.Request(
        INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        files = json.load(answer)["files"]
    found = [
        f for f in files if f["filename"].startswith(wanted) and f["filename"].endswith(".whl")
    ]
    if not found:
        sys.exit(f"no uv {version} wheel for {arch} on {INDEX}")
    with urllib.request.urlopen(found[0]["url"], timeout=300) as answer:
        wheel = answer.read()
    if hashlib.sha256(wheel).hexdigest() != found[0]["hashes"]["sha256"]:
        sys.exit(f"{found[0]['filename']}: sha256 differs from the index's")
    os.makedirs(dest, exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        member = f"uv-{version}.data/scripts/uv"
        target = os.path.join(dest, "uv")
        with archive.open(member) as source, open(target, "wb") as out:
            out.write(source.read())
    os.chmod(target, 0o755)


if __name__ == "__main__":
    main()
