#!/usr/bin/env bash
# Fuzzes the Media layer (probe → decode → convert → encode over bytes in memory) with libFuzzer and AddressSanitizer.
# usage: scripts/fuzz.sh SECONDS [extra libFuzzer flags]
# The corpus grows in .build-fuzz/corpus (seeded from Fixtures/); crashes land in .build-fuzz/findings/. Runs under
# nice -n 19 with one worker, so it can share a machine (hence the generous -timeout: a niced run on a busy machine
# is slow). A finding becomes a file in Fixtures/fuzz/ (see
# docs/reliability.md); FuzzRegressionTests replays them.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz.sh SECONDS}
shift
scratch=$PWD/.build-fuzz
(cd Fuzz && nice -n 19 swift build -c debug --scratch-path "$scratch" --product VideoFeedFuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld)
bin=$(cd Fuzz && swift build -c debug --scratch-path "$scratch" --show-bin-path)/VideoFeedFuzz
mkdir -p "$scratch/corpus" "$scratch/findings"
seeds=(Fixtures/media Fixtures/bad Fixtures/hostile)
[ -d Fixtures/fuzz ] && seeds+=(Fixtures/fuzz)
# The Swift runtime's backtracer is off: libFuzzer and ASan report crashes themselves (and ASan misreads the
# backtracer's stack reads as a stack-buffer-underflow).
export SWIFT_BACKTRACE=${SWIFT_BACKTRACE:-enable=no}
# Leaks are reported by ASan at exit of each crashing run; -detect_leaks=1 makes libFuzzer look after each input too.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
exec nice -n 19 "$bin" "$scratch/corpus" "${seeds[@]}" \
    -max_total_time="$seconds" -max_len=1048576 -rss_limit_mb=2048 -timeout=120 -print_final_stats=1 \
    -artifact_prefix="$scratch/findings/" "$@"
