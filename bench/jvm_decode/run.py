"""Benchmark: the JVM fast path's decoders alone, on one thread, without Spark.

    .venv/bin/python bench/jvm_decode/run.py [--messages 1000000] [--rounds 6]

Writes ``bench/normalize``'s eight templates (the same padded values) to a scratch file, compiles
``DecodeBench.java`` against the set-up's jar (``.jars/spark/cdclake-jvm.jar``) and Spark's jars,
and runs it: ``FastDecode.invoke`` over each template in turn, several rounds (the first ones warm
the JIT up). Prints each round's messages/s and each format's nanoseconds per message. Spark's
scheduling, reading and writing are left out, so two jars' decoders compare within a few
percent where the normalize bench's ±20 % noise hides them. Not a test: figures go in
bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="messages per round")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--jar", type=Path, default=ROOT / ".jars" / "spark" / "cdclake-jvm.jar",
                        help="the fast path's jar (another build to compare)")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT)]
    import pyspark

    from bench.normalize.run import TEMPLATES, padded_template

    spark_jars = Path(pyspark.__file__).parent / "jars"
    with tempfile.TemporaryDirectory(prefix="cdclake-jvm-bench-") as scratch:
        templates = Path(scratch) / "templates.tsv"
        templates.write_text("".join(f"{fmt}\t{padded_template(fixture, index)}\n"
                                     for _topic, fmt, fixture, index in TEMPLATES), encoding="utf-8")
        classpath = os.pathsep.join([str(args.jar), f"{spark_jars}/*", scratch])
        source = Path(__file__).parent / "DecodeBench.java"
        subprocess.run(["javac", "-d", scratch, "-cp", classpath, str(source)], check=True)
        print(f"cores: {os.cpu_count()} (one thread used), jar: {args.jar}")
        subprocess.run(["java", "-cp", classpath, "DecodeBench", str(templates), str(args.messages),
                        str(args.rounds)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
