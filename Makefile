# The few commands a newcomer types; meson and ninja do the work.
#   make deps     install the missing Debian 12 packages (.ci/debian-packages)
#   make          build into ./build (warnings are errors)
#   make run      build and run croft on this host, writing to ./croft-data
#   make test     build and run every test
#   make bench    run bench/bench-*.sh
#   make soak     long reliability run;  make fuzz  fuzz the parsers
#   make install  meson install (DESTDIR honoured);  make clean

BUILD ?= build
MESON_OPTS ?= -Dwerror=true -Dsysconfdir=/etc
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build deps run test bench soak fuzz install clean

all: build

deps:
	@# A line is "PACKAGE [COMMAND]": with COMMAND on the PATH the package counts as present.
	@missing=$$(sed 's/#.*//' .ci/debian-packages | while read -r p c; do \
		[ -n "$$p" ] || continue; \
		if [ -n "$$c" ] && command -v "$$c" >/dev/null 2>&1; then continue; fi; \
		dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -q '^install ok installed$$' || \
			printf ' %s' "$$p"; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@# DuckDB for the croft stats cross-check (tests/cli), pinned by its lock file
	@if [ ! -d tests/cli/node_modules/@duckdb/node-api ]; then \
		npm ci --prefix tests/cli --no-audit --no-fund; \
	fi

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: deps build
	@if [ -x $(BUILD)/cli/croft ]; then \
		exec $(BUILD)/cli/croft run --data-dir ./croft-data; \
	else \
		echo "make run: $(BUILD)/cli/croft is not built yet (the croft command has not landed)"; \
		exit 1; \
	fi

test: deps build
	meson test -C $(BUILD) --print-errorlogs

bench: build
	@set -e; for b in bench/bench-*.sh; do \
		[ -x "$$b" ] || continue; \
		echo "== $$b"; BUILD=$(BUILD) "$$b"; \
	done

soak: build
	@if [ -x tests/reliability/soak.sh ]; then BUILD=$(BUILD) tests/reliability/soak.sh; \
	else echo "make soak: tests/reliability/soak.sh does not exist yet"; fi

fuzz:
	@if [ -x tests/fuzz/run.sh ]; then tests/fuzz/run.sh --long; \
	else echo "make fuzz: tests/fuzz/run.sh does not exist yet"; fi

install: build
	meson install -C $(BUILD) $(if $(DESTDIR),--destdir "$(abspath $(DESTDIR))")

clean:
	rm -rf $(BUILD)
