"""rowfile.py: rows of a JSON-lines file read as it grows, a whole line at a
time (every line must be JSON): the fake writer's output, or the live
dataset file of a real writer, which rotation replaces (another inode: read
from its start)."""
import json
import os


class Rows:
    def __init__(self, path):
        self.path, self.offset, self.rows, self.ino = path, 0, [], None

    def refresh(self):
        """Every row so far, the lines written since the last call added."""
        if os.path.exists(self.path):
            with open(self.path, 'rb') as f:
                ino = os.fstat(f.fileno()).st_ino
                if ino != self.ino:  # rotated (on the UTC hour): the new live file from its start
                    self.ino, self.offset = ino, 0
                f.seek(self.offset)
                data = f.read()
            end = data.rfind(b'\n') + 1
            self.offset += end
            self.rows += [json.loads(x) for x in data[:end].split(b'\n')[:-1]]
        return self.rows

    def of(self, pid):
        return [r for r in self.refresh() if r['tgid'] == pid]
