"""docker-compose.yml: valid against the Compose Specification's schema (no Docker engine needed),
has the services the architecture names, everything it mounts or builds exists in the repo, and it
is locked down: ports on 127.0.0.1, no unauthenticated Kafka listener outside the compose network,
pinned images, and no service starting before check-secrets accepted the secrets."""

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
    "check-secrets", "kafka", "postgres", "minio", "minio-init", "spark-master", "spark-worker",
    "spark-connect", "airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
    "airflow-triggerer",
}
AIRFLOW_SERVICES = sorted(s for s in SERVICES if s.startswith("airflow-"))
PROJECT_MOUNT = "/opt/cdclake"
CONNECT_PORT = 15002
CHECK_SECRETS = "check-secrets"
CHECK_SECRETS_SCRIPT = "include/compose/check-secrets.sh"
# The variables check-secrets.sh refuses when empty, placeholder or (the Fernet key) malformed
SECRET_VARIABLES = ("POSTGRES_PASSWORD", "AIRFLOW_DB_PASSWORD", "ICEBERG_DB_PASSWORD", "S3_SECRET_KEY",
                    "AIRFLOW_JWT_SECRET", "AIRFLOW_FERNET_KEY", "SPARK_AUTH_SECRET")
BIND_ADDRESS = "CDCLAKE_BIND_ADDRESS"
PASSWORDS_FILE = f"{PROJECT_MOUNT}/state/airflow/passwords.json"

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


def load_compose(env: dict[str, str]) -> dict[str, Any]:
    raw = yaml.safe_load(COMPOSE_FILE.read_text())  # resolves the x-* anchors and << merges
    return interpolate(raw, env)


@pytest.fixture(scope="module")
def compose(env) -> dict[str, Any]:
    return load_compose(env)


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
    assert images["minio"].startswith("quay.io/minio/minio:")
    assert images["minio-init"].startswith("quay.io/minio/mc:")
    assert compose["services"]["spark-worker"]["command"][2] == "spark://spark-master:7077"
    assert images["spark-connect"] == images["spark-master"] == images["spark-worker"]
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
    assert "spark_connect_default" in init and "kafka_default" in init
    assert "--conn-type spark " not in init  # spark-submit's connection is gone
    assert "airflow pools set lakehouse_writes 1" in init


def test_the_pool_the_dags_use_is_the_pool_compose_creates():
    from cdclake.dag_defaults import LAKEHOUSE_WRITES_POOL, LAKEHOUSE_WRITES_POOL_SLOTS

    init = (ROOT / "include/compose/airflow/init.sh").read_text()
    assert f"airflow pools set {LAKEHOUSE_WRITES_POOL} {LAKEHOUSE_WRITES_POOL_SLOTS} " in init


def test_airflow_environment_gives_a_distributed_pipeline_config(compose):
    """The CDCLAKE_* variables compose sets are the ones load_config reads, with real services."""
    from cdclake.config import load_config
    from cdclake.spark_conf import jdbc_url

    env = {k: str(v) for k, v in compose["services"]["airflow-scheduler"]["environment"].items()}
    config = load_config(env=env)
    assert config.bootstrap_servers == "kafka:9092"
    assert config.catalog_uri.startswith("postgresql+psycopg2://iceberg:")
    assert jdbc_url(config.catalog_uri) == "jdbc:postgresql://postgres:5432/iceberg"
    assert config.warehouse == "s3a://cdclake/warehouse"
    assert config.spark_remote == f"sc://spark-connect:{CONNECT_PORT}"
    # The server's master and Spark settings are the spark-connect service's, not the tasks'.
    assert not {"CDCLAKE_SPARK_MASTER", "CDCLAKE_SPARK_CONF"} & set(env)


def _spark_submit_args(command: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """spark-submit's options (``--master``, ``--jars``, ...) and its ``--conf`` settings."""
    options: dict[str, str] = {}
    conf: dict[str, str] = {}
    # flags without a value
    if "--load-spark-defaults" in command:
        options["--load-spark-defaults"] = ""
        command = [c for c in command if c != "--load-spark-defaults"]
    for flag, value in zip(command[1::2], command[2::2], strict=True):
        if flag == "--conf":
            key, _, setting = value.partition("=")
            assert key not in conf, f"--conf {key} given twice"
            conf[key] = setting
        else:
            assert flag.startswith("--") and flag not in options, flag
            options[flag] = value
    return options, conf


def test_spark_connect_runs_the_server_with_the_projects_jars_and_extensions(compose, monkeypatch):
    """The spark-connect service: Spark's SparkConnectServer on the standalone cluster, with the
    project's jars, both session extensions, the JVM fast path's function catalog, the s3a
    settings and the session defaults of cdclake.spark_conf; never the catalog (sessions set it)."""
    from cdclake import spark_conf, spark_server

    service = compose["services"]["spark-connect"]
    command = service["command"]
    assert command[0] == "/opt/spark/bin/spark-submit"
    options, conf = _spark_submit_args(command)
    assert options["--class"] == spark_server.SERVER_CLASS
    assert options["--class"] == "org.apache.spark.sql.connect.service.SparkConnectServer"
    assert options["--master"] == "spark://spark-master:7077"
    # The image's jars (Spark expands the glob), cdclake-jvm.jar among them.
    assert options["--jars"] == "/opt/cdclake/jars/spark/*.jar"
    spark_image = (ROOT / "include/compose/spark/Dockerfile").read_text()
    assert "COPY --from=jars /jars/ /opt/cdclake/jars/" in spark_image
    assert "-f jvm/pom.xml package" in spark_image
    assert "cp jvm/target/cdclake-jvm.jar /jars/spark/" in spark_image

    assert conf["spark.sql.extensions"] == (
        "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,cdclake.jvm.Extensions")
    assert conf["spark.sql.extensions"] == f"{spark_conf.ICEBERG_EXTENSIONS},{spark_conf.JAR_EXTENSIONS}"
    assert conf[f"spark.sql.catalog.{spark_conf.FUNCTIONS_CATALOG}"] == spark_conf.FUNCTIONS_CLASS
    assert conf["spark.sql.catalog.cdclake_jvm"] == "cdclake.jvm.Functions"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.connect.grpc.binding.address"] == "0.0.0.0"
    assert conf["spark.connect.grpc.binding.port"] == str(CONNECT_PORT)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio:9000"
    # Client mode: the driver is this container, and executors connect back to it by name.
    assert conf["spark.driver.host"] == service["hostname"] == "spark-connect"
    assert "--deploy-mode" not in options or options["--deploy-mode"] == "client"
    # Every session brings its own Iceberg catalog (spark_jobs.session.connect).
    assert [k for k in conf if k.startswith("spark.sql.catalog.")] == ["spark.sql.catalog.cdclake_jvm"]
    assert "spark.sql.defaultCatalog" not in conf

    # The same session defaults as `cdclake spark start` on one machine.
    monkeypatch.delenv(spark_conf.EXTRA_JAVA_OPTIONS_ENV, raising=False)
    settings = spark_conf.SparkSettings(catalog_name="lakehouse", catalog_uri="sqlite:///catalog.db",
                                        warehouse="file:///warehouse", jars=())
    catalog = spark_conf.catalog_conf(settings.catalog_name, settings.catalog_uri, settings.warehouse)
    defaults = {k: v for k, v in spark_conf.session_conf(settings).items() if k not in catalog}
    assert defaults and {k: conf.get(k) for k in defaults} == defaults
    assert conf["spark.driver.extraJavaOptions"] == spark_conf.JAVA_OPTIONS

    # s3a: spark-defaults.conf (mounted, under SPARK_CONF_DIR) and the workers' credentials.
    env = service["environment"]
    conf_dir = env["SPARK_CONF_DIR"]
    assert conf_dir.startswith(f"{PROJECT_MOUNT}/include/")
    assert ("./include", f"{PROJECT_MOUNT}/include") in _bind_mounts(service)
    spark_defaults = (ROOT / conf_dir.removeprefix(f"{PROJECT_MOUNT}/") / "spark-defaults.conf").read_text()
    for setting in ("spark.pyspark.python", "spark.hadoop.fs.s3a.path.style.access",
                    "spark.hadoop.fs.s3a.aws.credentials.provider"):
        assert setting in spark_defaults
    worker_env = compose["services"]["spark-worker"]["environment"]
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        assert env[key] == worker_env[key] != "", key

    assert str(CONNECT_PORT) in " ".join(service["healthcheck"]["test"])
    assert service["depends_on"]["spark-master"]["condition"] == "service_healthy"
    assert service["depends_on"]["minio-init"]["condition"] == "service_completed_successfully"


def test_airflow_tasks_run_on_the_connect_server(compose):
    """The connection init.sh creates, CDCLAKE_SPARK_REMOTE and the server's address agree; the
    scheduler (where tasks run) waits for the server and runs no Spark driver of its own."""
    init = re.sub(r"\s*\\\n\s*", " ", (ROOT / "include/compose/airflow/init.sh").read_text())
    conn = re.search(r"airflow connections add spark_connect_default --conn-type spark_connect "
                     r"--conn-host sc://(\S+) --conn-port (\d+)\s", init)
    assert conn, "init.sh creates no spark_connect_default connection"
    host, port = conn[1], int(conn[2])
    assert (host, port) == ("spark-connect", CONNECT_PORT)
    assert host in compose["services"]
    _, conf = _spark_submit_args(compose["services"][host]["command"])
    assert conf["spark.connect.grpc.binding.port"] == str(port)
    for name in AIRFLOW_SERVICES:
        assert compose["services"][name]["environment"]["CDCLAKE_SPARK_REMOTE"] == f"sc://{host}:{port}"

    scheduler = compose["services"]["airflow-scheduler"]
    assert scheduler["depends_on"]["spark-connect"]["condition"] == "service_healthy"
    assert "spark-master" not in scheduler["depends_on"]
    assert "hostname" not in scheduler
    airflow = (ROOT / "include/compose/airflow/Dockerfile").read_text()
    assert "FROM maven" not in airflow and "jre" not in airflow and "JAVA_HOME" not in airflow
    assert "CDCLAKE_JARS" not in airflow and "SPARK_CONF_DIR" not in airflow


def _published(port: str | int | dict[str, Any]) -> tuple[str, str]:
    """(host address, container port or range) of one ``ports`` entry; "" is every address."""
    if isinstance(port, dict):
        return str(port.get("host_ip", "")), str(port["target"])
    text = str(port).rsplit("/", 1)[0]
    host_ip = ""
    if text.startswith("["):  # [IPv6]:host:container
        host_ip, _, text = text[1:].partition("]:")
    parts = text.split(":")
    if len(parts) == 3:
        host_ip = parts[0]
    return host_ip, parts[-1]


def _covers(target: str, port: int) -> bool:
    low, _, high = target.partition("-")
    return int(low) <= port <= int(high or low)


def test_published_ports_parse_as_compose_reads_them():
    assert _published("15002") == ("", "15002")  # a random host port on every address
    assert _published("15002:15002") == ("", "15002")
    assert _published("127.0.0.1:15002:15002/tcp") == ("127.0.0.1", "15002")
    assert _published("[::1]:15002:15002") == ("::1", "15002")
    long_syntax = {"target": 15002, "published": "15002", "host_ip": "127.0.0.1"}
    assert _published(long_syntax) == ("127.0.0.1", "15002")
    assert _covers("15000-15010", CONNECT_PORT) and not _covers("8080", CONNECT_PORT)


def test_the_connect_server_is_not_published_beyond_this_host(compose):
    """Spark Connect has no authentication: 15002 stays inside the compose network by default, and
    anything published for it (or by the server's container) is bound to 127.0.0.1."""
    connect = compose["services"]["spark-connect"]
    assert "ports" not in connect
    assert "network_mode" not in connect
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            host_ip, target = _published(port)
            if name == "spark-connect" or _covers(target, CONNECT_PORT):
                assert host_ip == "127.0.0.1", f"{name} publishes {port} beyond 127.0.0.1"


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


def _host_addresses(compose: dict[str, Any]) -> dict[str, str]:
    """Every published port (``service port``) and the host address it binds."""
    return {f"{name} {port}": _published(port)[0]
            for name, service in compose["services"].items() for port in service.get("ports", [])}


def test_published_ports_bind_this_host_unless_cdclake_bind_address_opens_them(env):
    raw = COMPOSE_FILE.read_text()
    assert f"${{{BIND_ADDRESS}:-127.0.0.1}}" in raw
    assert env[BIND_ADDRESS] == "127.0.0.1"
    unset = {k: v for k, v in env.items() if k != BIND_ADDRESS}
    for variables in (env, unset):
        published = _host_addresses(load_compose(variables))
        assert len(published) >= 3  # Airflow UI, MinIO console, Spark master UI
        assert set(published.values()) == {"127.0.0.1"}, published
    opened = _host_addresses(load_compose({**env, BIND_ADDRESS: "0.0.0.0"}))
    assert set(opened.values()) == {"0.0.0.0"}, opened


def _image_tag(image: str) -> str:
    """The tag of an image reference, "" when it has none (a digest alone is not a tag)."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.partition(":")[2]


def _dockerfile_images(dockerfile: Path) -> list[str]:
    """The images the ``FROM`` lines pull (earlier build stages are not images)."""
    images: list[str] = []
    stages: set[str] = set()
    for line in dockerfile.read_text().splitlines():
        words = [w for w in line.split() if not w.startswith("--")]
        if words and words[0].upper() == "FROM":
            if words[1] not in stages and words[1] != "scratch":
                images.append(words[1])
            if len(words) >= 4 and words[2].upper() == "AS":
                stages.add(words[3])
    return images


def test_image_tag_parsing():
    assert _image_tag("postgres:16.11") == "16.11"
    assert _image_tag("quay.io/minio/mc:RELEASE.2025-04-16T18-13-26Z") == "RELEASE.2025-04-16T18-13-26Z"
    assert _image_tag("localhost:5000/minio") == ""
    assert _image_tag("minio/minio@sha256:abc") == ""


def test_every_image_is_pinned_to_a_version(compose):
    images = {name: service["image"] for name, service in compose["services"].items()}
    for dockerfile in sorted((ROOT / "include/compose").glob("*/Dockerfile")):
        images.update({f"{dockerfile.parent.name}/Dockerfile {image}": image
                       for image in _dockerfile_images(dockerfile)})
    assert len(images) >= len(SERVICES) + 3
    for where, image in images.items():
        tag = _image_tag(image)
        assert tag and tag != "latest" and re.search(r"\d", tag), f"{where}: {image} is not pinned"


def test_kafka_is_reachable_only_inside_the_compose_network(compose, env):
    """The broker's PLAINTEXT listener has no authentication: no port is published and the only
    advertised listener is the compose network's kafka:9092."""
    kafka = compose["services"]["kafka"]
    assert "ports" not in kafka and "network_mode" not in kafka
    settings = kafka["environment"]
    listeners = {lst.split("://")[0] for lst in settings["KAFKA_LISTENERS"].split(",")}
    assert listeners == {"PLAINTEXT", "CONTROLLER"}
    assert settings["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://kafka:9092"
    assert settings["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
    protocols = dict(item.split(":") for item in settings["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(protocols) == listeners
    assert "EXTERNAL" not in COMPOSE_FILE.read_text() and "KAFKA_EXTERNAL_PORT" not in env
    assert compose["services"]["airflow-scheduler"]["environment"]["CDCLAKE_KAFKA_BOOTSTRAP"] == "kafka:9092"


def test_check_secrets_runs_before_every_other_service(compose, env):
    service = compose["services"][CHECK_SECRETS]
    script = f"/opt/{Path(CHECK_SECRETS_SCRIPT).name}"
    assert f"./{CHECK_SECRETS_SCRIPT}:{script}:ro" in service["volumes"]
    assert (ROOT / CHECK_SECRETS_SCRIPT).is_file()
    assert service["entrypoint"] == ["/bin/sh", script]
    assert service["environment"] == {name: env[name] for name in SECRET_VARIABLES}
    assert service["restart"] == "no" and service["network_mode"] == "none"
    assert "depends_on" not in service
    for name, other in compose["services"].items():
        if name != CHECK_SECRETS:
            condition = other.get("depends_on", {}).get(CHECK_SECRETS, {}).get("condition")
            assert condition == "service_completed_successfully", name


def test_airflow_needs_a_fernet_key_and_keeps_generated_passwords_in_the_state_volume(compose, env):
    without_key = {k: v for k, v in env.items() if k != "AIRFLOW_FERNET_KEY"}
    with pytest.raises(MissingVariable, match="AIRFLOW_FERNET_KEY"):
        load_compose(without_key)
    for name in AIRFLOW_SERVICES:
        service = compose["services"][name]
        assert service["environment"]["AIRFLOW__CORE__FERNET_KEY"] == env["AIRFLOW_FERNET_KEY"]
        assert service["environment"]["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == PASSWORDS_FILE
        assert f"cdclake-state:{PROJECT_MOUNT}/state" in service["volumes"]
    airflow_image = (ROOT / "include/compose/airflow/Dockerfile").read_text()
    assert f"mkdir -p {Path(PASSWORDS_FILE).parent} " in airflow_image
    assert PASSWORDS_FILE in ENV_EXAMPLE.read_text()
    # Every signed-in user an admin: never in the compose stack.
    assert "ALL_ADMINS" not in COMPOSE_FILE.read_text().upper()
    assert not any("ALL_ADMINS" in key.upper() for key in env)


def test_every_spark_daemon_authenticates_with_the_shared_secret(compose):
    """spark.authenticate on the master, the workers and the Connect server: each writes the secret
    of .env into a private properties file (include/compose/spark/auth.sh, which `cdclake cluster`
    runs too) and reads it; the secret is on no command line."""
    for name in ("spark-master", "spark-worker", "spark-connect"):
        service = compose["services"][name]
        assert "include/compose/spark/auth.sh /tmp/spark-auth.properties" in " ".join(service["entrypoint"])
        command = service["command"]
        assert command[command.index("--properties-file") + 1] == "/tmp/spark-auth.properties", name
        assert "SPARK_AUTH_SECRET" in service["environment"], name
        assert not any("authenticate.secret" in part for part in command), name
