"""Land and normalize one hour of a crash scenario, killing this process (SIGKILL) while its
k-th commit runs on the Spark Connect server:

    python -m tests.faults.killed_hour TOPIC HOUR K

The kill comes from a timer started as the commit is sent, so it lands in the middle of the
server's work (or just after a short commit), as a killed worker's would.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import sys
import threading
import time

from tests.faults.crash import commit_points

# How long after sending the k-th commit the process is killed.
KILL_AFTER_SECONDS = 0.3


def main(argv: list[str]) -> int:
    from cdclake.config import load_config
    from spark_jobs.session import connect
    from tests.faults.test_land_normalize_crashes import run_hour

    topic, hour, k = argv[0], dt.datetime.fromisoformat(argv[1]), int(argv[2])
    config = load_config()
    spark = connect(config, "cdclake-killed-hour")

    def kill() -> None:
        time.sleep(KILL_AFTER_SECONDS)
        os.kill(os.getpid(), signal.SIGKILL)

    def kill_soon(n: int, what: str) -> None:
        if n == k:
            threading.Thread(target=kill, daemon=True).start()

    with commit_points(kill_soon):
        run_hour(spark, config, topic, hour, "killed")
    time.sleep(10 * KILL_AFTER_SECONDS)  # the last commit was short: the kill still comes
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
