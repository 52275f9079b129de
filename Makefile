# The few commands a newcomer types; meson and ninja do the work.
#   make deps     install the missing Debian 12 packages (.ci/debian-packages)
#   make          build into ./build (warnings are errors)
#   make run      build and run croft on this host, writing to ./croft-data
#                 (RUN_ARGS='...' adds croft run flags)
#   make test     build and run every test (npm ci fetches DuckDB for one of them;
#                 and test-vm when CI=true)
#   make test-vm  the VM suite: Debian 12 under qemu on 5.10, 6.1, 6.12, sid and 6.1 cgroup v1 (tests/vm/)
#   make bench    run bench/bench-*.sh
#   make soak     long reliability run;  make fuzz  fuzz the parsers
#   make deb      the Debian package, in ./build/deb (DEB_VERSION=... for another version)
#   make install  meson install (DESTDIR honoured; an existing croft.conf is kept);  make clean

BUILD ?= build
MESON_OPTS ?= -Dwerror=true -Dsysconfdir=/etc
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build deps run test test-vm bench soak fuzz deb install clean

all: build

deps:
	@# A line is "PACKAGE [COMMAND]": with COMMAND on the PATH the package counts as present.
	@if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then \
		echo "make deps: no apt-get here (not Debian or Ubuntu): install what .ci/debian-packages names with this system's packages; going on"; \
		exit 0; \
	fi; \
	missing=$$(sed 's/#.*//' .ci/debian-packages | while read -r p c; do \
		[ -n "$$p" ] || continue; \
		if [ -n "$$c" ] && command -v "$$c" >/dev/null 2>&1; then continue; fi; \
		dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -Eq '^install ok (installed|triggers-awaited|triggers-pending)$$' || \
			printf ' %s' "$$p"; \
	done); \
	[ -n "$$missing" ] || exit 0; \
	if [ -n "$(SUDO)" ] && ! command -v sudo >/dev/null 2>&1; then \
		echo "make deps: missing$$missing, and sudo is not installed: run 'apt-get install$$missing' as root, then make again"; \
		exit 1; \
	fi; \
	echo "make deps: installing$$missing"; \
	{ $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q -o DPkg::Lock::Timeout=300 && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 --no-install-recommends $$missing; } || { \
		echo "make deps: apt-get could not install$$missing (see above): fix that (network, apt sources, sudo rights), then make again"; \
		exit 1; \
	}

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	@src=$$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' $(BUILD)/meson-info/meson-info.json 2>/dev/null); \
	if [ -n "$$src" ] && [ "$$(cd "$$src" 2>/dev/null && pwd -P)" != "$$(pwd -P)" ]; then \
		echo "make: $(BUILD) was set up for $$src, not this checkout: remove it (make clean), then make again"; \
		exit 1; \
	fi
	ninja -C $(BUILD)

# RUN_ARGS: more croft run flags, e.g. RUN_ARGS='--runtime-dir /tmp/croft-2'
run: deps build
	@exec $(BUILD)/cli/croft run --data-dir ./croft-data $(RUN_ARGS)

test: deps build
	@# DuckDB for the croft stats cross-check (tests/cli), pinned by its lock file
	@if [ ! -d tests/cli/node_modules/@duckdb/node-api ]; then \
		npm ci --prefix tests/cli --no-audit --no-fund || { \
			echo "make test: npm ci in tests/cli failed (it fetches DuckDB from the npm registry): fix that, then make test again"; \
			exit 1; \
		}; \
	fi
	meson test -C $(BUILD) --print-errorlogs
	@if [ "$${CI:-}" = true ]; then $(MAKE) --no-print-directory test-vm; fi

test-vm: deps build
	nice tests/vm/run.sh $(BUILD)

bench: build
	@set -e; for b in bench/bench-*.sh; do \
		[ -x "$$b" ] || continue; \
		echo "== $$b"; BUILD=$(BUILD) "$$b"; \
	done

soak: build
	BUILD=$(BUILD) tests/reliability/soak.sh

fuzz:
	tests/fuzz/run.sh --long

# DEB_VERSION: another version (e.g. 0.1.0+vmtest1), written into a scratch copy's changelog
deb: deps
	debian/build-deb.sh $(abspath $(BUILD))/deb $(DEB_VERSION)

install: build
	@rm -f $(BUILD)/install-conf.note
	meson install -C $(BUILD) $(if $(DESTDIR),--destdir "$(abspath $(DESTDIR))")
	@cat $(BUILD)/install-conf.note 2>/dev/null || true

clean:
	rm -rf $(BUILD)
