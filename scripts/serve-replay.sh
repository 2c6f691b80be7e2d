#!/bin/sh
# Replays a viewer trace against a fresh `videofeed serve` on FOLDER with a cold cache (scripts/serve-replay.py
# --serve: starts the server, waits until it listens, replays, stops it; the viewer model is in that script's
# docstring). Make a trace with scripts/serve-trace.py.
#
#   scripts/serve-replay.sh FOLDER TRACE.csv [OUT.json]
#   VIDEOFEED=/path/to/videofeed scripts/serve-replay.sh ...    # default: $(swift build --show-bin-path)/videofeed
#
# Exit status: serve-replay.py's (0: no errors; 1: errors; 2: the server or the trace could not be used).
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 FOLDER TRACE.csv [OUT.json]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${VIDEOFEED:-}" ]; then
    VIDEOFEED="$(cd "$here/.." && swift build --show-bin-path)/videofeed"
fi
export VIDEOFEED
if [ $# -eq 3 ]; then
    exec python3 "$here/serve-replay.py" "$2" --serve "$1" --json "$3"
fi
exec python3 "$here/serve-replay.py" "$2" --serve "$1"
