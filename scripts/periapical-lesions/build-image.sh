#!/usr/bin/env bash
# Build the periapical-lesions sandbox image with the tag the eval config runs, and record
# the built image's id.
#
#   scripts/periapical-lesions/build-image.sh [extra docker build options]
#
# Needs docker and network access at build time (Docker Hub for the base images, Debian,
# PyPI and npm); a rollout in the finished image needs none. Refuses a Dockerfile whose base
# images are not pinned by digest. After the build, sandbox-image.txt (next to this script)
# records the tag, the image id docker built and the pinned bases; check an image against
# it with: docker image inspect --format '{{.Id}}' <tag>
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
config="$here/../../configs/periapical-lesions/eval.toml"
record="$here/sandbox-image.txt"
image="$(sed -n 's/^image = "\(.*\)"$/\1/p' "$config")"
if [ -z "$image" ]; then
    echo "build-image.sh: $config has no 'image = \"...\"' line to tag the build with." >&2
    exit 1
fi
pinned_base='^FROM [^ ]+@sha256:[0-9a-f]{64}( |$)'
while IFS= read -r line; do
    if [[ "$line" == "FROM "* ]] && ! [[ "$line" =~ $pinned_base ]]; then
        echo "build-image.sh: $here/Dockerfile has a base image not pinned by digest ($line); pin it as image@sha256:<digest>." >&2
        exit 1
    fi
done < "$here/Dockerfile"
if ! command -v docker >/dev/null 2>&1; then
    echo "build-image.sh: docker is not installed, so $image cannot be built here." >&2
    exit 1
fi
iidfile="$(mktemp)"
trap 'rm -f "$iidfile" "$record.tmp"' EXIT
docker build -t "$image" --iidfile "$iidfile" "$@" "$here"
id="$(cat "$iidfile")"
if ! [[ "$id" =~ ^sha256:[0-9a-f]{64}$ ]]; then
    echo "build-image.sh: docker build gave no image id, so nothing was recorded." >&2
    exit 1
fi
{
    echo "# Written by build-image.sh after a successful build. Check an image with:"
    echo "#   docker image inspect --format '{{.Id}}' $image"
    echo "image $image"
    echo "id $id"
    node_version="$(sed -n 's/^ARG NODE_VERSION=//p' "$here/Dockerfile")"
    sed -n 's/^FROM \([^ ]*\).*$/base \1/p' "$here/Dockerfile" | sed "s/\${NODE_VERSION}/$node_version/"
} > "$record.tmp"
mv "$record.tmp" "$record"
echo "build-image.sh: built $image, image id $id (recorded in $record)"
