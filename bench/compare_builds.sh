#!/usr/bin/env bash
# Cold `make splits` commands (download, build, card, agreement) of two checkouts on one corpus,
# one after the other, each in a fresh build folder: the cost of a change measured in one run.
#   bench/compare_builds.sh CORPUS_ZIP OLD_CHECKOUT NEW_CHECKOUT OUT_DIR
set -euo pipefail
zip=$(realpath "$1"); old=$(realpath "$2"); new=$(realpath "$3"); out=$(realpath -m "$4")
python=${PYTHON:-$PWD/.venv/bin/python}
mkdir -p "$out"
for side in old new; do
    checkout=${!side}; build="$out/$side"
    rm -rf "$build"
    start=$(date +%s.%N)
    for step in "download $zip --build $build --lock $build/source.lock.json" \
                "build --build $build --no-fail-on-rejected" "card --build $build" \
                "agreement --build $build"; do
        (cd "$checkout" && /usr/bin/time -f "$side ${step%% *}: %e s wall, %U s user, %M KiB peak" \
            "$python" -c "from curation.cli.app import app; app()" $step > "$out/$side-${step%% *}.log" 2>&1) \
            || { echo "$side ${step%% *} failed: $out/$side-${step%% *}.log"; exit 1; }
        tail -n 1 "$out/$side-${step%% *}.log"
    done
    echo "$side total: $(echo "$(date +%s.%N) - $start" | bc) s"
done
