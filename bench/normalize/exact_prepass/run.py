"""Experiment: what an exact JVM JSON pre-pass costs, for the JVM decoder issue 6 needs.

    .venv/bin/python bench/normalize/exact_prepass/run.py [--messages 200000]

Spark's ``from_json`` reads a JSON number into a string field through a double (``1.10`` ->
``"1.1"``), so a Spark-native decoder cannot use it on the raw values as they are. This compiles
``ExactJson.java`` (a Spark Java UDF on Jackson, both from pyspark's own jars; needs ``javac`` and
``jar`` from the JDK that set-up installs), checks on one message that numbers come out exact, and
times, on the same in-memory messages as ``bench/normalize/run.py`` (its eight templates, not
padded), best of three:
  1. bare ``from_json(value, map<string,string>)`` + count (the benchmark's baseline);
  2. the pre-pass alone (``exact_json(value)`` + count);
  3. the pre-pass + ``from_json`` to ``map<string,string>`` + count;
  4. the pre-pass + ``from_json`` to a Canal-shaped struct, ``data`` rows exploded + count.
Not a test and not part of the pipeline: figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
MAP = "map<string,string>"
CANAL = ("struct<data:array<map<string,string>>,old:array<map<string,string>>,"
         "mysqlType:map<string,string>,sqlType:map<string,string>,pkNames:array<string>,"
         "type:string,database:string,table:string,es:string,ts:string>")
EXACT_SAMPLE = '{"a":1.10,"b":-0.0,"c":1e400,"d":18446744073709551616,"e":"x","f":' + "9" * 300 + ".5}"
EXACT_EXPECTED = {"a": "1.10", "b": "-0.0", "c": "1e400", "d": "18446744073709551616", "e": "x",
                  "f": "9" * 300 + ".5"}


def build_jar(workdir: Path) -> Path:
    """Compile the UDF against pyspark's jars (Spark's API and its Jackson) into a jar."""
    import pyspark

    classpath = str(Path(pyspark.__file__).parent / "jars" / "*")
    classes = workdir / "classes"
    subprocess.run(["javac", "-d", str(classes), "-cp", classpath, str(HERE / "ExactJson.java")],
                   check=True)
    jar = workdir / "exact-json.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "include")]
    from pyspark.sql import DataFrame, Row, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from bench.normalize.run import TEMPLATES, template

    workdir = Path(tempfile.mkdtemp(prefix="cdclake-exact-json-"))
    try:
        jar = build_jar(workdir)
        spark = (SparkSession.builder.master("local[2]").appName("cdclake-bench-exact-prepass")
                 .config("spark.driver.memory", "4g").config("spark.jars", str(jar))
                 .config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        spark.udf.registerJavaFunction("exact_json", "cdclake.bench.ExactJson", StringType())

        sample = spark.createDataFrame([(EXACT_SAMPLE.encode(),)], "value binary")
        got = cast(Row, sample.select(F.from_json(F.expr("exact_json(value)"), MAP)).first())[0]
        bare = cast(Row, sample.select(F.from_json(F.col("value").cast("string"), MAP)).first())[0]
        print(f"exact: {got == EXACT_EXPECTED} (bare from_json gives a={bare['a']!r}, "
              f"d={bare['d']!r}, f={bare['f'][:12]!r}...)")
        if got != EXACT_EXPECTED:
            print(f"pre-pass gave {got}", file=sys.stderr)
            return 1

        templates = spark.createDataFrame(
            [(i, template(fixture, index)) for i, (_t, _f, fixture, index) in enumerate(TEMPLATES)],
            "t int, text string")
        messages = (spark.range(args.messages)
                    .withColumn("t", (F.col("id") % len(TEMPLATES)).cast("int"))
                    .join(F.broadcast(templates), "t")
                    .select(F.encode("text", "UTF-8").alias("value"))
                    .repartition(2).cache())
        messages.count()
        print(f"cores: {os.cpu_count()}, messages: {args.messages} (in memory, cached)")

        def timed(label: str, frame: DataFrame) -> None:
            seconds = []
            for _ in range(3):
                start = time.perf_counter()
                frame.count()
                seconds.append(time.perf_counter() - start)
            best = min(seconds)
            print(f"{label}: {best:.2f}s = {args.messages / best:,.0f} messages/s")

        prepass = F.expr("exact_json(value)")
        timed("bare from_json to map + count", messages.select(
            F.from_json(F.col("value").cast("string"), MAP).alias("m")).where("m is not null"))
        timed("pre-pass alone + count", messages.select(prepass.alias("j")).where("j is not null"))
        timed("pre-pass + from_json to map + count", messages.select(
            F.from_json(prepass, MAP).alias("m")).where("m is not null"))
        timed("pre-pass + Canal-shaped struct, data exploded + count", messages.select(
            F.from_json(prepass, CANAL).alias("c")).select(F.explode_outer("c.data").alias("row")))
        spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
