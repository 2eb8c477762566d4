"""What the Python load scripts share: the stop signal from stdin and the tally of a load.

A load writes `key(i)` = `value(i)` and reads earlier keys back; `Tally` counts writes, reads,
errors, lost (a read of an acknowledged write that found nothing) and wrong values, and
prints the `result ...` line the Rust tests parse.
"""

import sys
import threading
import time

# A safety bound only: the tests stop a load through stdin long before.
LOAD_MAX = 600.0
stop = threading.Event()


def watch_stdin():
    """Sets `stop` when a line (or EOF) arrives on stdin, in a daemon thread."""

    def watch():
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=watch, daemon=True).start()


class Tally:
    def __init__(self, key, value):
        self.key, self.value = key, value
        self.writes = self.reads = self.errors = self.lost = self.wrong = 0
        # Writes that raised: not acknowledged, so not read back.
        self.unacked = set()
        self.last_error = None
        self.phase = "load"

    def error(self, e):
        self.errors += 1
        self.last_error = repr(e)
        print(f"error in {self.phase} at write {self.writes}: {e!r}", flush=True)

    def check(self, i, got):
        self.reads += 1
        if got is None:
            self.lost += 1
            print(f"lost in {self.phase}: {self.key(i)} (write {self.writes})", flush=True)
        elif got != self.value(i):
            self.wrong += 1
            print(f"wrong in {self.phase}: {self.key(i)} = {got!r}", flush=True)

    def acked(self):
        """The acknowledged writes, in order."""
        return [j for j in range(self.writes) if j not in self.unacked]

    def report(self):
        print(
            f"result writes={self.writes} reads={self.reads} errors={self.errors} "
            f"lost={self.lost} wrong={self.wrong} last_error={self.last_error}",
            flush=True,
        )
        return self.errors == 0 and self.lost == 0 and self.wrong == 0


def load(t, write, read, every_64=None):
    """The write and read-back loop of a synchronous client, until `stop` (or LOAD_MAX):
    writes key(i), reads key(i // 2) back every fourth write, calls `every_64(i)` every 64th
    (a client's own extra check), prints `progress` every 500 writes. Any exception is an
    application-visible error: counted, never retried."""
    deadline = time.monotonic() + LOAD_MAX
    i = 0
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            t.unacked.add(i)
            write(t.key(i), t.value(i))
            t.unacked.discard(i)
            t.writes = i + 1
            if i % 4 == 3 and i // 2 not in t.unacked:
                j = i // 2
                t.check(j, read(t.key(j)))
            if every_64 is not None and i % 64 == 63:
                every_64(i)
        except Exception as e:
            t.error(e)
        i += 1
        if i % 500 == 0:
            print(f"progress {t.writes}", flush=True)
    t.phase = "final"
