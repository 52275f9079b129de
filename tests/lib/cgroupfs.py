"""cgroupfs.py: where this host mounts its cgroup hierarchies, for the tests
that make cgroups of their own (real ones, as runtimes leave them)."""


def cgroup_mounts():
    """{'v2': cgroup2's mount, CONTROLLER: its v1 hierarchy's mount, ...}, in
    the order of /proc/self/mountinfo; only mounts of a hierarchy's root."""
    found = {}
    with open('/proc/self/mountinfo') as f:
        for line in f:
            pre, post = line.split(' - ')
            fields, post = pre.split(), post.split()
            if fields[3] != '/':
                continue
            if post[0] == 'cgroup2':
                found.setdefault('v2', fields[4])
            elif post[0] == 'cgroup':
                for opt in post[2].split(','):
                    if opt not in ('rw', 'ro') and '=' not in opt:
                        found.setdefault(opt, fields[4])
    return found
