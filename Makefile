# VideoFeedEngine — the two quick-start commands are `make demo` and `make test`.
# Every target installs what it needs (FFmpeg dev packages through apt) when it is missing.

SWIFT        ?= swift
DEMO_OUT     ?= demo-out
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := libavformat-dev libavfilter-dev libavcodec-dev libswresample-dev libswscale-dev libavutil-dev \
                libheif-dev pkg-config ffmpeg
# Native HLS players the tests play served items with (gst-launch-1.0 playbin; ffmpeg's HLS demuxer comes with deps).
PLAYER_PACKAGES := gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
                gstreamer1.0-libav
BENCH_TOOLS  := hyperfine ffmpegthumbnailer

.PHONY: all deps bench-deps browser-deps build release demo serve bench-serve bench-arrival test test-sanitizers fuzz fuzz-serve soak fixtures conformance bench bench-decode bench-transcode policylab clean help

all: build

help:
	@echo "make demo            build and run the main job on the bundled feed (Fixtures/feed.json) into $(DEMO_OUT)/,"
	@echo "                     thumbnails and cards into $(DEMO_OUT)/thumbs/, renditions into $(DEMO_OUT)/renditions/"
	@echo "make test            install what is missing, run the whole test suite (swift test) and play the"
	@echo "                     transcoder's outputs in headless Chromium (scripts/browser-test.sh)"
	@echo "make serve           release build, then videofeed serve on Fixtures/serve/feed.json at http://127.0.0.1:8080/"
	@echo "                     (PORT=..., SOURCE=... to change; the page, API and design in docs/serve.md)"
	@echo "make test-sanitizers ASan: Media, Transcode, Thumbnails and CLI suites, the leak and soak suites; TSan: EngineSupport, Feed, Prefetch,"
	@echo "                     FeedPlayer, Batch, Thumbnails, Transcode (batch, pipeline, lanes), cancellation, FeedServer, serve memory"
	@echo "make fuzz            libFuzzer + ASan over the Media layer for FUZZ_SECONDS (default 600), under nice,"
	@echo "                     then make fuzz-serve"
	@echo "make fuzz-serve      videofeed serve (release) under random requests, protocol junk and WebSocket messages"
	@echo "                     for FUZZ_SECONDS (scripts/serve-fuzz.py; FUZZ_SEED, SOURCE to change), under nice"
	@echo "make soak            10,000 random swipes over Fixtures/soak-feed.json, JSON report into soak.json"
	@echo "make build|release   debug or release build of the package"
	@echo "make fixtures        regenerate Fixtures/ with the ffmpeg CLI (and the golden framemd5 files)"
	@echo "make conformance     compare our framemd5 and probe with ffmpeg/ffprobe over ../shared/media (DIR=... to change)"
	@echo "make bench           decode benchmarks (ordo-one/benchmark, hyperfine), the thumbnail batch comparison and"
	@echo "                     PolicyLab's simulation speed"
	@echo "make bench-decode    videofeed dump --format framemd5 vs ffmpeg -f framemd5, seven alternating pairs per clip:"
	@echo "                     median wall and CPU ratios (Benchmarks/decode-vs-ffmpeg.sh; CLIPS=..., PAIRS=...)"
	@echo "make bench-transcode videofeed transcode vs the ffmpeg CLI: single clip, ladder, batch, on-demand segment, first second,"
	@echo "                     memory, SSIM, HDR, and the AV1 rung against the H.264 one"
	@echo "                     (Benchmarks/compare-transcode.sh; BENCH_RUNS, BATCH_COUNT, MEDIA, PARTS to change)"
	@echo "make bench-serve     videofeed serve: swipe to first frame in Chromium, cold jumps, 20-viewer load (docs/benchmarks.md)"
	@echo "make bench-arrival   videofeed serve on a live folder: seconds from a file complete to its listing (MEDIA=...)"
	@echo "make policylab       PolicyLab's pictures (docs/policylab-*.svg) and its trust experiment against videofeed play"
	@echo "make browser-deps    Debian's chromium (apt) and Playwright (pip) for scripts/browser-check.py, which plays"
	@echo "                     MP4s and fMP4 HLS playlists in headless Chromium: python3 scripts/browser-check.py ITEM..."

# Installs the FFmpeg development packages and the ffmpeg CLI when any is missing.
deps:
	@if ! pkg-config --exists libavformat libavfilter libavcodec libswresample libswscale libavutil libheif 2>/dev/null || ! command -v ffmpeg >/dev/null; then \
		echo "installing $(APT_PACKAGES) through apt"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PACKAGES); \
	fi

bench-deps: deps
	@if ! command -v hyperfine >/dev/null || ! command -v ffmpegthumbnailer >/dev/null; then \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(BENCH_TOOLS); \
	fi

# scripts/browser-check.py drives Debian's /usr/bin/chromium through Playwright (no Playwright browser download);
# ffprobe (from deps) derives the codec strings.
browser-deps: deps
	@if [ ! -x /usr/bin/chromium ] || { ! python3 -c 'import playwright' 2>/dev/null && ! python3 -m pip --version >/dev/null 2>&1; }; then \
		echo "installing chromium python3-pip through apt"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium python3-pip; \
	fi
	@if ! python3 -c 'import playwright' 2>/dev/null; then \
		echo "installing playwright through pip"; \
		python3 -m pip install --break-system-packages playwright; \
	fi
	@if ! command -v gst-launch-1.0 >/dev/null || ! gst-inspect-1.0 hlsdemux >/dev/null 2>&1 || ! gst-inspect-1.0 avdec_h264 >/dev/null 2>&1; then \
		echo "installing $(PLAYER_PACKAGES) through apt"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(PLAYER_PACKAGES); \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# The web feed for a person to scroll: open http://127.0.0.1:$(PORT)/ (Ctrl-C stops it).
PORT   ?= 8080
SOURCE ?= Fixtures/serve/feed.json
serve: release
	$$($(SWIFT) build -c release --show-bin-path)/videofeed serve $(SOURCE) --port $(PORT) --cache serve-cache

demo: release
	$$($(SWIFT) build -c release --show-bin-path)/videofeed demo --out $(DEMO_OUT)
	$$($(SWIFT) build -c release --show-bin-path)/videofeed thumbs --out $(DEMO_OUT)/thumbs
	$$($(SWIFT) build -c release --show-bin-path)/videofeed transcode --out $(DEMO_OUT)/renditions
	$$($(SWIFT) build -c release --show-bin-path)/videofeed play --swipes n,n,n,p,n,j10,n,n,p,n --dwell-ms 400 \
		--size 360x640 --dump $(DEMO_OUT)/play

# The whole suite in parallel, then the memory suites each alone in a quiet process.
test: deps browser-deps
	$(SWIFT) test
	bash scripts/browser-test.sh
	bash scripts/serve-check.sh
	VIDEOFEED_ISOLATED=1 $(SWIFT) test --skip-build --filter LeakTests
	VIDEOFEED_ISOLATED=1 $(SWIFT) test --skip-build --filter SoakTests
	VIDEOFEED_ISOLATED=1 $(SWIFT) test --skip-build --filter ServeMemoryTests

# C-interop suites under AddressSanitizer (Media, Thumbnails, and the CLI that drives them; then the leak and soak
# suites alone, LeakSanitizer checking at exit), the concurrent suites (Feed, Prefetch, FeedPlayer, the thumbnail and
# transcode batches, the transcoder's encoder lanes, cancellation and remote faults, the server; then the server's
# memory suite alone) under ThreadSanitizer. .ci/lsan.supp lists the toolchain
# libraries' own leaks, .ci/tsan.supp a known false positive of the Swift runtime with NIO's continuations (in
# Hummingbird's connection task); nothing of ours is suppressed.
test-sanitizers: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp:print_suppressions=0 \
		$(SWIFT) test --sanitize=address --scratch-path .build-asan --filter 'MediaTests|TranscodingTests|videofeedTests|ThumbnailsTests'
	VIDEOFEED_ISOLATED=1 VIDEOFEED_SANITIZER=address LSAN_OPTIONS=suppressions=$(CURDIR)/.ci/lsan.supp:print_suppressions=0 \
		$(SWIFT) test --skip-build --sanitize=address --scratch-path .build-asan --filter 'LeakTests|SoakTests'
	TSAN_OPTIONS=suppressions=$(CURDIR)/.ci/tsan.supp \
		$(SWIFT) test --sanitize=thread --scratch-path .build-tsan \
		--filter 'EngineSupportTests|FeedTests|PrefetchTests|FeedPlayerTests|TwoDriversTests|BatchTests|ThumbnailsTests|TranscodingTests\.(TranscodeBatch|TranscodeBatchStop|SegmentCount|PhotoTranscode|Transcode|EncoderLane|ContinuousVideo)Tests|CancellationTests|RemoteFaultTests|FeedServerTests'
	VIDEOFEED_ISOLATED=1 VIDEOFEED_SANITIZER=thread TSAN_OPTIONS=suppressions=$(CURDIR)/.ci/tsan.supp \
		$(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan --filter 'ServeMemoryTests'

# Issue 12's judged figures: swipe to first frame in Chromium, cold jumps and 20 viewers' load, each on a fresh
# `serve` (Benchmarks/serve-bench.sh; MEDIA=../shared/media, SWIPES, COLD_JUMPS, VIEWERS, LOAD_SECONDS, SEED to change).
bench-serve: deps browser-deps release
	SKIP_BUILD=1 bash Benchmarks/serve-bench.sh

# Issue 38: how soon `serve` lists a file after it is complete (copied, renamed in, trickled), over ../shared/media
# and Fixtures/media (MEDIA=... to change).
MEDIA ?= ../shared/media
bench-arrival: deps release
	python3 scripts/serve-arrival.py --videofeed $$($(SWIFT) build -c release --show-bin-path)/videofeed $(MEDIA) Fixtures/media

# Fuzzing and the soak are long jobs: both run under nice so they can share a machine.
FUZZ_SECONDS ?= 600
FUZZ_SEED    ?= 1
fuzz: deps
	bash scripts/fuzz.sh $(FUZZ_SECONDS)
	$(MAKE) --no-print-directory fuzz-serve

# Issue 33: a release `videofeed serve` of SOURCE on a free port and a fresh cache, and scripts/serve-fuzz.py against
# it for FUZZ_SECONDS (no 5xx but 503, no connection left hanging, alive and under 1 GiB resident); the server's log
# ends the output when it fails.
fuzz-serve: release
	@bin=$$($(SWIFT) build -c release --show-bin-path)/videofeed; work=$$(mktemp -d /tmp/vfe-fuzz-serve.XXXXXX); \
	nice -n 19 $$bin serve $(SOURCE) --port 0 --cache $$work/cache --log-level warning >$$work/out 2>$$work/err & \
	pid=$$!; trap 'kill -TERM $$pid 2>/dev/null; wait $$pid 2>/dev/null; rm -rf $$work' EXIT; \
	for i in $$(seq 1 300); do grep -q "listening on" $$work/out && break; \
		kill -0 $$pid 2>/dev/null || { cat $$work/err; echo "fuzz-serve: the server did not start"; exit 1; }; sleep 0.1; done; \
	url=$$(sed -n 's/^listening on \(http:[^ ]*\)$$/\1/p' $$work/out | head -1); \
	nice -n 19 python3 scripts/serve-fuzz.py $$url --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED) --pid $$pid || \
		{ echo "fuzz-serve: failed; the server's log:"; tail -n 60 $$work/err; exit 1; }

soak: build
	nice -n 19 $$($(SWIFT) build --show-bin-path)/videofeed play Fixtures/soak-feed.json --random 10000 --seed 1 \
		--wrap --dwell-ms 1-5 --size 90x160 --json > soak.json; test $$? -le 1  # 1: the feed's bad items failed, as meant
	python3 -c 'import json; d = json.load(open("soak.json")); m = d["metrics"]; print(m["swipes"], "swipes,", m["hits"], "hits,", m["misses"], "misses,", m["failures"], "failed items;", d["memory"])'

fixtures: deps
	bash Fixtures/generate.sh

conformance: release
	bash scripts/conformance.sh $(or $(DIR),../shared/media)

bench: bench-deps release
	bash Fixtures/generate.sh --bench
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target MediaDecode
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target PolicyLabSimulate
	bash Benchmarks/compare-decode.sh
	bash Benchmarks/compare-thumbs.sh

# Issue 15's decoding comparison: framemd5 of the whole stream, ours against the ffmpeg CLI's, alternating runs.
# CLIPS empty: a synthetic H.264 1080x1920 10 s clip made once in /tmp/videofeed-bench.
CLIPS ?=
bench-decode: deps release
	bash Benchmarks/decode-vs-ffmpeg.sh $(CLIPS)

# The transcode comparison needs GNU time for peak memory; the synthetic 1080x1920 clip comes from --bench-thumbs.
bench-transcode: bench-deps release
	@command -v /usr/bin/time >/dev/null || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq time; }
	@[ -f Fixtures/bench/thumbs/clip_000.mp4 ] || bash Fixtures/generate.sh --bench-thumbs
	bash Benchmarks/compare-transcode.sh

# PolicyLab: the policy comparison pictures in docs/, then the simulator against the live engine (docs/policylab.md).
policylab: release
	python3 scripts/policylab-plot.py --bin $$($(SWIFT) build -c release --show-bin-path)/videofeed
	bash scripts/policylab-trust.sh

clean:
	rm -rf .build .build-* $(DEMO_OUT)
