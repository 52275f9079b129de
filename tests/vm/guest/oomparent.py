#!/usr/bin/python3
"""oomparent.py GO_FILE RC_FILE: the parent of checks.sh's OOM unit (inside
the VM, in a MemoryMax= cgroup).  Once GO_FILE exists it runs a child that
touches 256 MiB, writes the child's return code (-9: killed by the OOM
killer) to RC_FILE, and lives on, using a little CPU every 200 ms so each
poll gives it a row (an idle process's row comes only every idle_every polls)."""
import os
import subprocess
import sys
import time

CHILD = "b = bytearray(256 << 20)"  # zero-filled: every page touched


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main(go_file, rc_file):
    while not os.path.exists(go_file):
        spin(0.02)
        time.sleep(0.2)
    rc = subprocess.run([sys.executable, "-c", CHILD]).returncode
    with open(rc_file, "w") as f:
        f.write(f"{rc}\n")
    while True:
        spin(0.02)
        time.sleep(0.2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
