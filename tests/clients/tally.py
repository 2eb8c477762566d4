"""What the Python load scripts share: the stop signal from stdin and the tally of a load.

A load writes `key(i)` = `value(i)` and reads earlier keys back; `Tally` counts writes, reads,
errors, lost (a read of an acknowledged write that found nothing) and wrong values, and
prints the `result ...` line the Rust tests parse.
"""

import sys
import threading

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
