"""docker-compose.yml: valid against the Compose Specification's schema (no Docker engine needed),
has the services the architecture names, and everything it mounts or builds exists in the repo."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
SCHEMA = Path(__file__).with_name("compose-spec.json")

SERVICES = {
    "kafka", "postgres", "minio", "minio-init", "spark-master", "spark-worker",
    "airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer",
}
AIRFLOW_SERVICES = sorted(s for s in SERVICES if s.startswith("airflow-"))
PROJECT_MOUNT = "/opt/cdclake"

# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, ${VAR:+alt}, $VAR, and $$
_VARIABLE = re.compile(r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)"
                       r"(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")


class MissingVariable(KeyError):
    """A ${VAR:?...} (required) variable has no value."""


def read_env_file(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    return env


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's variable interpolation, applied to every string of the parsed file."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["plain"]
        op, arg, current = match["op"], match["arg"] or "", env.get(name)
        unset_or_empty = not current
        if op in (":-", "-"):
            return arg if (unset_or_empty if op == ":-" else current is None) else current or ""
        if op in (":?", "?"):
            if unset_or_empty if op == ":?" else current is None:
                raise MissingVariable(f"{name}: {arg}")
            return current or ""
        if op in (":+", "+"):
            return arg if (not unset_or_empty if op == ":+" else current is not None) else ""
        return current or ""

    return _VARIABLE.sub(substitute, value)


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    return read_env_file(ENV_EXAMPLE)


@pytest.fixture(scope="module")
def compose(env) -> dict[str, Any]:
    raw = yaml.safe_load(COMPOSE_FILE.read_text())  # resolves the x-* anchors and << merges
    return interpolate(raw, env)


def test_valid_against_the_compose_specification(compose):
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_schema_rejects_what_compose_rejects(compose):
    """The schema is a real validator: a misspelt key or a bad depends_on condition fails."""
    schema = json.loads(SCHEMA.read_text())
    broken = json.loads(json.dumps(compose))
    broken["services"]["kafka"]["imagee"] = "typo"
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))
    broken = json.loads(json.dumps(compose))
    broken["services"]["airflow-scheduler"]["depends_on"]["postgres"]["condition"] = "service_ready"
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))


def test_every_required_variable_is_in_env_example():
    raw = yaml.safe_load(COMPOSE_FILE.read_text())
    with pytest.raises(MissingVariable):
        interpolate(raw, {})  # required secrets fail loudly without .env ...
    interpolate(raw, read_env_file(ENV_EXAMPLE))  # ... and .env.example names them all


def test_env_example_holds_placeholders_not_secrets(env):
    secrets = {k: v for k, v in env.items() if re.search(r"PASSWORD|SECRET|FERNET", k)}
    assert secrets
    assert all(v == "" or "change-me" in v for v in secrets.values()), secrets
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_the_architecture_services_exist(compose):
    assert set(compose["services"]) == SERVICES
    images = {name: svc.get("image", "") for name, svc in compose["services"].items()}
    assert images["kafka"].startswith("apache/kafka:")
    assert images["postgres"].startswith("postgres:")
    assert images["minio"].startswith("minio/minio")
    assert compose["services"]["spark-worker"]["command"][-1] == "spark://spark-master:7077"
    commands = {s: compose["services"][s].get("command") for s in AIRFLOW_SERVICES}
    assert commands == {"airflow-init": None, "airflow-apiserver": "api-server",
                        "airflow-scheduler": "scheduler", "airflow-dag-processor": "dag-processor",
                        "airflow-triggerer": "triggerer"}


def _bind_mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    mounts = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                mounts.append((volume["source"], volume["target"]))
            continue
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            mounts.append((source, target))
    return mounts


def test_every_bind_mount_and_build_file_exists(compose):
    checked = 0
    for name, service in compose["services"].items():
        for source, _ in _bind_mounts(service):
            assert (ROOT / source).resolve().exists(), f"{name} mounts {source}, missing in the repository"
            assert (ROOT / source).resolve().is_relative_to(ROOT), f"{name} mounts {source} outside the repo"
            checked += 1
        build = service.get("build")
        if build:
            context = ROOT / build["context"]
            dockerfile = context / build["dockerfile"]
            assert dockerfile.is_file(), f"{name}: no Dockerfile {dockerfile}"
            for source in _copy_sources(dockerfile):
                assert (context / source).exists(), f"{dockerfile.name} of {name} copies missing {source}"
            checked += 1
    assert checked >= 20


def _copy_sources(dockerfile: Path) -> list[str]:
    """Sources of ``COPY``/``ADD`` lines that read the build context (not ``--from=`` stages)."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    sources: list[str] = []
    for line in text.splitlines():
        words = line.split()
        if words and words[0] in ("COPY", "ADD") and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def test_airflow_mounts_the_project_and_runs_its_init_script(compose):
    for name in AIRFLOW_SERVICES:
        targets = {target: source for source, target in _bind_mounts(compose["services"][name])}
        for folder in ("dags", "include", "spark_jobs", "plugins", "expectations"):
            assert targets.get(f"{PROJECT_MOUNT}/{folder}") == f"./{folder}", (name, folder)
    entrypoint = compose["services"]["airflow-init"]["entrypoint"]
    script = entrypoint[-1]
    assert script.startswith(f"{PROJECT_MOUNT}/include/")
    init = (ROOT / script.removeprefix(f"{PROJECT_MOUNT}/")).read_text()
    assert "airflow db migrate" in init
    assert "spark_default" in init and "kafka_default" in init
    assert "airflow pools set lakehouse_writes 1" in init


def test_the_pool_the_dags_use_is_the_pool_compose_creates():
    from cdclake.dag_defaults import LAKEHOUSE_WRITES_POOL, LAKEHOUSE_WRITES_POOL_SLOTS

    init = (ROOT / "include/compose/airflow/init.sh").read_text()
    assert f"airflow pools set {LAKEHOUSE_WRITES_POOL} {LAKEHOUSE_WRITES_POOL_SLOTS} " in init


def test_airflow_environment_gives_a_distributed_pipeline_config(compose):
    """The CDCLAKE_* variables compose sets are the ones load_config reads, with real services."""
    from cdclake.config import load_config
    from spark_jobs.session import jdbc_url

    env = {k: str(v) for k, v in compose["services"]["airflow-scheduler"]["environment"].items()}
    config = load_config(env=env)
    assert config.bootstrap_servers == "kafka:9092"
    assert config.catalog_uri.startswith("postgresql+psycopg2://iceberg:")
    assert jdbc_url(config.catalog_uri) == "jdbc:postgresql://postgres:5432/iceberg"
    assert config.warehouse == "s3a://cdclake/warehouse"
    assert config.spark_master == "spark://spark-master:7077"
    assert config.spark_conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio:9000"
    # spark-submit's defaults (driver/executor Python, s3a) come from the mounted SPARK_CONF_DIR
    conf_dir = re.search(r"SPARK_CONF_DIR=(\S+)", (ROOT / "include/compose/airflow/Dockerfile").read_text())
    assert conf_dir and conf_dir[1].startswith(f"{PROJECT_MOUNT}/include/")
    defaults = ROOT / conf_dir[1].removeprefix(f"{PROJECT_MOUNT}/") / "spark-defaults.conf"
    assert "spark.pyspark.python" in defaults.read_text()


def test_spark_image_matches_pyspark_and_the_jars_pom():
    dockerfile = (ROOT / "include/compose/spark/Dockerfile").read_text()
    pinned = re.search(r"^pyspark==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert pinned and f"apache/spark:{pinned[1]}-" in dockerfile
    assert "maven/spark/pom.xml" in dockerfile and "include/compose/spark/pom.xml" in dockerfile
    extras = (ROOT / "include/compose/spark/pom.xml").read_text()
    import pyspark

    pyspark_jars = Path(pyspark.__file__).parent / "jars"
    hadoop = re.search(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar",
                       " ".join(p.name for p in pyspark_jars.glob("hadoop-client-api-*.jar")))
    assert hadoop and f"<hadoop.version>{hadoop[1]}</hadoop.version>" in extras
    assert "<artifactId>postgresql</artifactId>" in extras
    airflow = (ROOT / "include/compose/airflow/Dockerfile").read_text()
    assert "requirements.txt" in airflow and "constraints.txt" in airflow
    version = re.search(r"^apache-airflow==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert version and f"apache/airflow:{version[1]}-python3.11" in airflow
