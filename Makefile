# SPDX-License-Identifier: GPL-2.0
#
# nvmet-mdev: build a Linux 7.3 kernel with the driver, boot it under QEMU
# and test it.  "make help" lists the targets.

# The exact kernel source package; override on the command line.
KPKG		?= linux-source-7.3
KPKG_VERSION	?= 7.3.4-1~bpo13+1
KPKG_SUITE	?= trixie-backports

TOP		:= $(CURDIR)
BUILD		:= $(TOP)/build
SRC		:= $(BUILD)/src
OBJ		:= $(BUILD)/obj
GOBJ		:= $(BUILD)/obj-guest
POBJ		:= $(BUILD)/obj-perf
HARNESS		:= $(TOP)/tools/testing/nvmet-mdev
JOBS		?= $(shell echo $$(( $$(nproc) + 1 )))

# Reproducible, cache-friendly kernel builds.
export CCACHE_DIR	?= $(HOME)/.cache/ccache
export CCACHE_BASEDIR	:= $(TOP)
export CCACHE_MAXSIZE	?= 10G
export CCACHE_SLOPPINESS := time_macros,include_file_mtime,include_file_ctime
# Depend mode: a cache miss runs the compiler alone, not the preprocessor
# first to hash its output; kbuild's -Wp,-MMD gives ccache the headers.
# The preprocessor pass is 10-25% of a kernel file's compile time (KASAN
# host config, measured), all of it wasted in a cold build.
export CCACHE_DEPEND	:= 1
export KBUILD_BUILD_TIMESTAMP := 2026-01-01
export KBUILD_BUILD_USER := nvmet-mdev
export KBUILD_BUILD_HOST := build

KMAKE		= $(MAKE) -C $(SRC) O=$(OBJ) CC="ccache gcc" -j$(JOBS) \
		  KCFLAGS="$(KCFLAGS)"

.PHONY: all help deps kernel guest-kernel source config client fio check demo \
	lint patches shell test bench perf-kernel clean distclean

all: kernel

help:
	@echo "make deps      install the Debian packages the build and tests need"
	@echo "make kernel    fetch, patch, configure and build: build/bzImage, build/modules/"
	@echo "make guest-kernel  the nested guests' kernel alone: build/guest-bzImage"
	@echo "make fio       the test VMs' fio (Debian's, static and lean): build/fio/fio"
	@echo "make check     build, boot the test VM and run every test (TAP)"
	@echo "make test T=name   run one test (tools/testing/nvmet-mdev/tests/name.sh)"
	@echo "make patches   the whole work as a format-patch series in build/patches/"
	@echo "make demo      boot, create an mdev, run a guest on it, show what it sees"
	@echo "make bench     fio on an mdev and its peers at their best, side by side (build/bench/)"
	@echo "make perf-kernel  the production build make bench boots: build/perf-bzImage"
	@echo "make shell     interactive shell in the host VM"
	@echo "make clean     drop the build objects (keeps the fetched source)"

deps:
	$(HARNESS)/install-deps.sh

source:
	$(HARNESS)/fetch-kernel.sh $(BUILD) $(SRC) $(KPKG) $(KPKG_VERSION) $(KPKG_SUITE)
	$(HARNESS)/prepare-tree.sh $(TOP) $(SRC)

# The configuration is regenerated only when the fragment or the Kconfig
# files it depends on change; kbuild's own olddefconfig does the rest.
$(OBJ)/.config: $(HARNESS)/config $(TOP)/patches/series \
		$(TOP)/drivers/nvme/target/mdev/Kconfig | source
	mkdir -p $(OBJ)
	$(MAKE) -C $(SRC) O=$(OBJ) allnoconfig >/dev/null
	cd $(OBJ) && $(SRC)/scripts/kconfig/merge_config.sh -m -O $(OBJ) \
		$(OBJ)/.config $(HARNESS)/config >/dev/null
	$(MAKE) -C $(SRC) O=$(OBJ) olddefconfig >/dev/null
	$(HARNESS)/check-config.sh $(HARNESS)/config $(OBJ)/.config

# The nested guests' kernel: the same fragment with config.guest on top.
$(GOBJ)/.config: $(HARNESS)/config $(HARNESS)/config.guest $(TOP)/patches/series \
		$(TOP)/drivers/nvme/target/mdev/Kconfig | source
	mkdir -p $(GOBJ)
	$(MAKE) -C $(SRC) O=$(GOBJ) allnoconfig >/dev/null
	cd $(GOBJ) && $(SRC)/scripts/kconfig/merge_config.sh -m -O $(GOBJ) \
		$(GOBJ)/.config $(HARNESS)/config $(HARNESS)/config.guest >/dev/null
	$(MAKE) -C $(SRC) O=$(GOBJ) olddefconfig >/dev/null
	$(HARNESS)/check-config.sh $(HARNESS)/config.guest $(GOBJ)/.config

# The benchmark's host VM kernel: the same fragment with config.perf on top.
$(POBJ)/.config: $(HARNESS)/config $(HARNESS)/config.perf $(TOP)/patches/series \
		$(TOP)/drivers/nvme/target/mdev/Kconfig | source
	mkdir -p $(POBJ)
	$(MAKE) -C $(SRC) O=$(POBJ) allnoconfig >/dev/null
	cd $(POBJ) && $(SRC)/scripts/kconfig/merge_config.sh -m -O $(POBJ) \
		$(POBJ)/.config $(HARNESS)/config $(HARNESS)/config.perf >/dev/null
	$(MAKE) -C $(SRC) O=$(POBJ) olddefconfig >/dev/null
	$(HARNESS)/check-config.sh $(HARNESS)/config.perf $(POBJ)/.config

config: source $(OBJ)/.config $(GOBJ)/.config

kernel: source $(OBJ)/.config guest-kernel
	flock $(BUILD)/.build.lock $(KMAKE) bzImage modules
	cp $(OBJ)/arch/x86/boot/bzImage $(BUILD)/bzImage.tmp
	mv $(BUILD)/bzImage.tmp $(BUILD)/bzImage
	flock $(BUILD)/.build.lock $(MAKE) -C $(SRC) O=$(OBJ) -s \
		INSTALL_MOD_PATH=$(BUILD)/modules.tmp modules_install
	rm -rf $(BUILD)/modules && mv $(BUILD)/modules.tmp $(BUILD)/modules

# The nested guests' kernel alone: build/guest-bzImage (make kernel builds
# it too; make bench needs it without the debug host kernel).
guest-kernel: source $(GOBJ)/.config
	flock $(BUILD)/.build.lock $(MAKE) -C $(SRC) O=$(GOBJ) CC="ccache gcc" \
		-j$(JOBS) bzImage
	cp $(GOBJ)/arch/x86/boot/bzImage $(BUILD)/guest-bzImage.tmp
	mv $(BUILD)/guest-bzImage.tmp $(BUILD)/guest-bzImage

# The production build of the same tree for make bench: build/perf-bzImage
# and build/perf-modules/ (the VMs' init picks the modules of the kernel
# that runs).
perf-kernel: source $(POBJ)/.config
	flock $(BUILD)/.build.lock $(MAKE) -C $(SRC) O=$(POBJ) CC="ccache gcc" \
		-j$(JOBS) bzImage modules
	cp $(POBJ)/arch/x86/boot/bzImage $(BUILD)/perf-bzImage.tmp
	mv $(BUILD)/perf-bzImage.tmp $(BUILD)/perf-bzImage
	flock $(BUILD)/.build.lock $(MAKE) -C $(SRC) O=$(POBJ) -s \
		INSTALL_MOD_PATH=$(BUILD)/perf-modules.tmp modules_install
	rm -rf $(BUILD)/perf-modules && \
		mv $(BUILD)/perf-modules.tmp $(BUILD)/perf-modules

# Static checks on the driver, the nvmet core's PCI helpers and their
# other user, nvmet-pci-epf: sparse, W=1 and checkpatch --strict.
lint: kernel
	$(KMAKE) C=2 W=1 CHECK="sparse -D__typeof_unqual__=__typeof__" \
		drivers/nvme/target/mdev/ drivers/nvme/target/pci-common.o \
		drivers/nvme/target/pci-epf.o \
		drivers/nvme/target/tests/pci_common_kunit.o
	cd $(SRC) && ./scripts/checkpatch.pl --strict --no-tree -q \
		-f $(TOP)/drivers/nvme/target/mdev/*.[ch] \
		$(TOP)/drivers/nvme/target/pci-common.[ch] \
		$(TOP)/drivers/nvme/target/tests/*.c

# The userspace VFIO NVMe client; built here since the VMs' root is
# read-only.  It takes the uapi headers from the source tree.
client: source
	$(MAKE) -C $(HARNESS)/client

# The test VMs' fio (see build-fio.sh): the installed fio's source, built
# static and without the engines that pull in 64 shared libraries, which a
# nested guest takes tens of seconds to load at every start.
fio: deps
	$(HARNESS)/build-fio.sh $(BUILD)

# The whole work as a git format-patch series against the pristine source.
patches: source
	$(HARNESS)/make-patches.sh $(TOP) $(SRC) $(BUILD)/patches

check: deps kernel client fio patches
	$(HARNESS)/run-tests.sh

test: kernel client fio
	$(HARNESS)/run-tests.sh $(T)

demo: deps kernel fio
	$(HARNESS)/demo.sh

shell: kernel
	$(HARNESS)/vm.sh --interactive

bench: deps guest-kernel perf-kernel client fio
	$(HARNESS)/bench.sh

clean:
	rm -rf $(OBJ) $(GOBJ) $(POBJ) $(BUILD)/bzImage $(BUILD)/guest-bzImage \
		$(BUILD)/modules $(BUILD)/perf-bzImage $(BUILD)/perf-modules

distclean:
	rm -rf $(BUILD)
