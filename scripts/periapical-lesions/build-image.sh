#!/usr/bin/env bash
# Build the periapical-lesions sandbox image with the tag the eval config runs.
#
#   scripts/periapical-lesions/build-image.sh [extra docker build options]
#
# Needs docker and network access at build time (Docker Hub for the base images, Debian,
# PyPI and npm); a rollout in the finished image needs none.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
config="$here/../../configs/periapical-lesions/eval.toml"
image="$(sed -n 's/^image = "\(.*\)"$/\1/p' "$config")"
if [ -z "$image" ]; then
    echo "build-image.sh: $config has no 'image = \"...\"' line to tag the build with." >&2
    exit 1
fi
if ! command -v docker >/dev/null 2>&1; then
    echo "build-image.sh: docker is not installed, so $image cannot be built here." >&2
    exit 1
fi
exec docker build -t "$image" "$@" "$here"
