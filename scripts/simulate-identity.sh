#!/usr/bin/env bash
# Runs one set of PolicyLab scenarios through two `videofeed` binaries and compares their --json output byte for
# byte: a refactoring of the scheduler or the simulator must not change a single simulated number.
#
#   scripts/simulate-identity.sh OLD_VIDEOFEED NEW_VIDEOFEED
#
# Scenarios: all five policies over the mixed, scroller and patient viewers; two networks (one a bandwidth trace);
# a budget sweep from 32 MiB to 512 MiB; background load; a short wrapping feed; one worker; the committed trace with
# its per-swipe log.
set -euo pipefail
old=${1:?old videofeed binary}
new=${2:?new videofeed binary}
here=$(cd "$(dirname "$0")/.." && pwd)
samples=$here/Tests/PolicyLabTests/Samples
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '0,8000000\n20,1000000\n45,4000000\n' > "$work/bandwidth.csv"
scenarios=(
  "--swipes 3000 --seed 7"
  "--swipes 3000 --seed 3 --model scroller"
  "--swipes 1500 --seed 5 --model patient"
  "--swipes 1500 --seed 11 --bandwidth 6Mbps --rtt 60ms"
  "--swipes 1000 --seed 12 --bandwidth $work/bandwidth.csv"
  "--swipes 1500 --seed 13 --budget 32MiB,64MiB,128MiB,512MiB"
  "--swipes 1500 --seed 14 --background-load 1.5"
  "--swipes 2000 --seed 15 --items 9 --wrap --swipe-log"
  "--swipes 1500 --seed 16 --workers 1 --cores 1"
  "--swipes 1500 --seed 17 --model scroller,back=0.3 --workers 3 --cores 2"
  "--trace $samples/session.csv --costs $samples/profile.json --swipe-log"
  "--trace $samples/session.jsonl --costs $samples/profile.json --swipe-log"
)
failed=0
for i in "${!scenarios[@]}"; do
  # shellcheck disable=SC2086 # each scenario is a list of options
  "$old" simulate run ${scenarios[$i]} --json > "$work/old-$i.json"
  # shellcheck disable=SC2086
  "$new" simulate run ${scenarios[$i]} --json > "$work/new-$i.json"
  if cmp -s "$work/old-$i.json" "$work/new-$i.json"; then
    echo "identical  ${scenarios[$i]}"
  else
    echo "DIFFERENT  ${scenarios[$i]}"
    diff <(tr ',' '\n' < "$work/old-$i.json") <(tr ',' '\n' < "$work/new-$i.json") | head -10
    failed=1
  fi
done
exit $failed
