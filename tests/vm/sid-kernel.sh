#!/bin/bash
# sid-kernel.sh: puts sid's newest kernel into the VM's bookworm base tree
# ROOT (a mmdebstrap customize hook of mkbase.sh; host, root).  Its package
# pre-depends on a linux-base newer than bookworm's, so it is not installed:
# its image, modules and base files are unpacked, the image and config go
# to /boot where the package would have put them, and bookworm's
# mkinitramfs makes the initrd.  Prints the kernel release on stderr.
# usage: sid-kernel.sh ROOT
set -euo pipefail
root=$1

# linux-image-amd64 in sid names the versioned kernel package it depends on
image=$(chroot "$root" apt-cache show linux-image-amd64/sid |
	sed -n 's/^Depends:.*\(linux-image-[0-9][^ ,]*\).*/\1/p' | head -n1)
release=${image#linux-image-}
[ -n "$release" ] || { echo "sid-kernel: no linux-image-amd64 in sid" >&2; exit 1; }
debs=$root/tmp/sid-kernel
mkdir -p "$debs"
(cd "$debs" && chroot "$root" sh -c "cd /tmp/sid-kernel && apt-get download -q \
	linux-base-$release/sid linux-binary-$release/sid linux-modules-$release/sid") >&2
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$root"; done
rm -rf "$debs"

# Older layouts put them in /boot already; newer ones in the modules folder.
for f in vmlinuz config System.map; do
	from=$root/usr/lib/modules/$release/$f
	[ -e "$root/boot/$f-$release" ] || [ ! -e "$from" ] || cp "$from" "$root/boot/$f-$release"
done
ls "$root/boot/vmlinuz-$release" >/dev/null
chroot "$root" depmod "$release"
chroot "$root" mkinitramfs -o "/boot/initrd.img-$release" "$release"
echo "sid-kernel: $release unpacked" >&2
