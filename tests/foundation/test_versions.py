"""The pinned stack installs together: pyspark == pyspark-client, and Spark's jars match them."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pyspark

from cdclake.paths import PROJECT_ROOT, jars_dir


def test_pyspark_and_pyspark_client_versions_are_equal() -> None:
    assert version("pyspark") == version("pyspark-client") == pyspark.__version__


def test_spark_jars_match_the_pyspark_version() -> None:
    core = sorted((Path(pyspark.__file__).parent / "jars").glob("spark-core_2.13-*.jar"))
    assert [p.name for p in core] == [f"spark-core_2.13-{pyspark.__version__}.jar"]
    extra = sorted(p.name for p in (jars_dir() / "spark").glob("*.jar"))
    assert f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}.jar" in extra
    assert f"spark-avro_2.13-{pyspark.__version__}.jar" in extra
    minor = ".".join(pyspark.__version__.split(".")[:2])
    assert any(re.fullmatch(rf"iceberg-spark-runtime-{minor}_2\.13-[\d.]+\.jar", n) for n in extra)
    assert any(n.startswith("sqlite-jdbc-") for n in extra)


def test_pom_pins_spark_to_the_installed_pyspark() -> None:
    pom = (PROJECT_ROOT / "maven" / "spark" / "pom.xml").read_text()
    assert f"<spark.version>{pyspark.__version__}</spark.version>" in pom


def test_the_jvm_fast_path_builds_against_pysparks_own_jars() -> None:
    pom = (PROJECT_ROOT / "jvm" / "pom.xml").read_text()
    shipped = {p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    assert f"<spark.version>{pyspark.__version__}</spark.version>" in pom
    for name, tag in (("scala-library", "scala.version"), ("scala-reflect", "scala.version"),
                      ("jackson-core", "jackson.version"), ("jackson-databind", "jackson.version"),
                      ("kryo-shaded", "kryo.version")):
        version = re.search(rf"<{tag}>([^<]+)</{tag}>", pom)
        assert version and f"{name}-{version[1]}.jar" in shipped
    assert (jars_dir() / "spark" / "cdclake-jvm.jar").is_file()


def test_requirements_pin_pyspark_and_client_together() -> None:
    text = (PROJECT_ROOT / "requirements.txt").read_text()
    assert f"pyspark=={pyspark.__version__}" in text
    assert f"pyspark-client=={pyspark.__version__}" in text
