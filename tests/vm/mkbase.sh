#!/bin/bash
# mkbase.sh: the Debian 12 base tree of the VM image, built once by
# mmdebstrap from tests/vm/packages and cached under CACHE_DIR, keyed by the
# package list, the apt sources, this script and sid-kernel.sh; a rerun
# with the same key only prints the tree's path.  Bookworm is the default
# release: only bullseye's 5.10 kernel (a name in the list) and sid's
# newest (unpacked by sid-kernel.sh) come from elsewhere.  Host, root.
# usage: mkbase.sh CACHE_DIR      prints the tree's directory on stdout
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$1

# The image takes the apt sources this host uses (Debian's, never a third
# party's); without a deb822 debian.sources, Debian's own mirror.
sources=/etc/apt/sources.list.d/debian.sources
sources_ext=sources
if [ -r "$sources" ]; then
	mirror_text=$(cat "$sources")
else
	sources_ext=list
	mirror_text='deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main'
fi
# the older and the newest kernel's suites, from Debian's own mirror
if [ "$sources_ext" = sources ]; then
	extra_text='Types: deb
URIs: http://deb.debian.org/debian
Suites: bullseye sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg'
else
	extra_text='deb http://deb.debian.org/debian bullseye main
deb http://deb.debian.org/debian sid main'
fi
mirror_text+=$'\n\n'"$extra_text"
packages=$(sed 's/#.*//' "$here/packages" | tr -s ' \t\n' '\n' | sed '/^$/d' | sort -u)

# The hooks run on the finished tree: a fixed hostname, no getty on the
# consoles (the serial ports are the checks'), a machine id made at each
# boot (no fstab: the root file system is on the kernel command line), and
# initrds holding only what finds a virtio ext4 root (MODULES=most's
# 30 MB take seconds to unpack under TCG).
hooks=(
	'echo croft-vm >"$1/etc/hostname"'
	'ln -sf /dev/null "$1/etc/systemd/system/serial-getty@ttyS0.service"'
	'ln -sf /dev/null "$1/etc/systemd/system/getty@tty1.service"'
	'rm -f "$1/etc/machine-id"; : >"$1/etc/machine-id"'
	'echo MODULES=list >"$1/etc/initramfs-tools/conf.d/croft-vm"'
	'printf "virtio_pci\nvirtio_blk\next4\n" >>"$1/etc/initramfs-tools/modules"'
	'"$CROFT_VM_SCRIPTS/sid-kernel.sh" "$1"'
	'chroot "$1" update-initramfs -u -k all'
)
# Documentation and translations are left out (the checks read none).
dpkg_opts=(
	--dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-exclude=/usr/share/man/*'
	--dpkgopt='path-exclude=/usr/share/locale/*'
)
key=$(printf '%s\n' "$packages" "$mirror_text" "${hooks[@]}" "${dpkg_opts[@]}" \
	"$(cat "$here/sid-kernel.sh")" |
	sha256sum | cut -c1-16)
tree=$cache/base-$key
if [ -f "$tree/.croft-base-complete" ]; then
	touch "$tree/.croft-base-complete"
	echo "$tree"
	exit 0
fi

# A tree no run has used for a day (another package list) goes: clones
# sharing one cache with different lists keep theirs.  vm.sh holds the
# cache's lock while it builds or copies a tree, so none is in use.
for old in "$cache"/base-*/; do
	old=${old%/}
	[ -d "$old" ] && [ "$old" != "$tree" ] &&
		[ -z "$(find "$old/.croft-base-complete" -mmin -1440 2>/dev/null)" ] && rm -rf "$old"
done
mkdir -p "$cache"
rm -rf "$tree"
src_file=$cache/base-$key.$sources_ext
printf '%s\n' "$mirror_text" >"$src_file"
echo "mkbase: building $tree (mmdebstrap, $(echo "$packages" | wc -l) packages)" >&2

# A dated snapshot mirror has Release files past their Valid-Until: accept
# them as the host's apt does.
export CROFT_VM_SCRIPTS=$here
hook_args=()
for h in "${hooks[@]}"; do hook_args+=(--customize-hook="$h"); done
nice mmdebstrap --variant=minbase --mode=root \
	--include="$(echo "$packages" | paste -sd,)" \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--aptopt='Acquire::Check-Date "false"' \
	--aptopt='APT::Default-Release "bookworm"' \
	"${dpkg_opts[@]}" \
	"${hook_args[@]}" \
	bookworm "$tree" "$src_file" >&2
rm -f "$src_file"
ls "$tree"/boot/vmlinuz-* "$tree"/boot/initrd.img-* >/dev/null
touch "$tree/.croft-base-complete"
echo "$tree"
