"""Great Expectations quality gates: validate one stage of one hour, record the results, fail loudly.

Suites are data (``expectations/<stage>.json``, GX Core 1.x ExpectationSuite JSON). A stage's data
comes in *batches* (e.g. the changelog's change rows and its per-topic reconciliation): each
expectation names its batch in ``meta.batch``, the suite's ``meta.batches`` describes them and
names their Kafka-coordinate columns. The runner splits a stage's suite into one GX suite per batch
(``changelog.changes``, ``changelog.topics``, ...), builds the batch's Spark DataFrame
(:mod:`spark_jobs.gate_frames`), and runs a GX Checkpoint on it with the gate thresholds of the
pipeline configuration as suite parameters (``{"$PARAMETER": "clock_skew_minutes"}``). The file
context under ``<state folder>/gx`` keeps the results and the Data Docs site
(``gx/uncommitted/data_docs/local_site/index.html``); ``ops.gate_results`` gets one row per
expectation (replaced when the stage and hour are validated again) for trend queries. The Data Docs
pages of a gate's results are rendered once per gate, not once per batch, and the index lists the
newest :data:`DOCS_INDEX_LIMIT` results: GX reads every result its index lists, so an unbounded
index made every gate slower by about a millisecond per result ever stored (a month of hourly
gates: tens of seconds per batch).

A failed gate raises :class:`GateFailed` naming every failed expectation, what was observed and up
to five offending rows' Kafka coordinates (computed here in Spark from the expectation's column and
condition, since GX reports values, not the rows they came from).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdclake import table_names
from cdclake.exceptions import ConfigError, GateFailed
from cdclake.paths import bundled_dir
from cdclake.zone_skew import zone_hint
from spark_jobs import gate_frames, held_tables, history
from spark_jobs.gate_history import import_gx
from spark_jobs.identifiers import (
    CURRENT_NAMESPACE,
    HISTORY_NAMESPACE,
    current_table_name,
    history_table_name,
    prefixed_database,
    source_schema,
    tombstone_table_name,
)
from spark_jobs.publish import current_tables, hour_candidates, namespace_tables, tables_with_branch
from spark_jobs.session import REUSED, local_frame
from spark_jobs.tables import CHANGELOG, GATE_RESULTS, ensure_tables, replace_small

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

log = logging.getLogger(__name__)

STAGES = ("raw", "changelog", "current")
SUITES_DIR = bundled_dir("expectations")
DATASOURCE = "cdclake_spark"
PANDAS_DATASOURCE = "cdclake_pandas"
# A batch of at most this many rows is validated in this process (GX's pandas engine) after one
# Spark query; a larger one by GX on Spark, which costs a Spark job or two per expectation.
LOCAL_ROWS_MAX = 100_000
# A gate counts unexpected rows without sampling them (each sample is a query per expectation);
# a batch that fails is validated again with samples, for its report and Data Docs page.
COUNTS_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": 0}
SAMPLES_FORMAT = {"result_format": "BASIC"}
OFFENDING_ROWS = 5
# The validation results the Data Docs index lists, newest first: two days of hourly gates (five
# results an hour). Each gate rebuilds the index, reading every result it lists.
DOCS_INDEX_LIMIT = 240


@dataclass(frozen=True)
class SuiteBatch:
    """The expectations of one batch of a stage's suite."""

    stage: str
    batch: str
    description: str
    coordinates: tuple[str, ...]
    expectations: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        return f"{self.stage}.{self.batch}"


@dataclass(frozen=True)
class ExpectationOutcome:
    suite: str
    target: str | None  # the table, for stages validating several (current)
    expectation: str
    column: str | None
    kwargs: dict[str, Any]
    success: bool
    observed: str
    offending: tuple[str, ...] = ()
    # Numeric values of the sample of unexpected rows (for a diagnosis such as a zone offset).
    sample: tuple[float, ...] = ()
    # False for a table held back by compaction: shown and recorded, the others still publish.
    blocking: bool = True

    def line(self) -> str:
        where = f"{self.suite} [{self.target}]" if self.target else self.suite
        text = f"{where}: {self.expectation}({self.column or ''}) observed {self.observed}"
        if self.offending:
            text += "; offending rows (Kafka coordinates): " + ", ".join(self.offending)
        topics = (c.split("/", 1)[0] for c in self.offending)
        hint = zone_hint(self.column, self.sample, topics) if self.sample else None
        return f"{text}; {hint}" if hint else text


@dataclass(frozen=True)
class GateReport:
    stage: str
    hour: dt.datetime
    run_id: str
    branch: str | None
    outcomes: tuple[ExpectationOutcome, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> list[ExpectationOutcome]:
        return [o for o in self.outcomes if not o.success and o.blocking]

    @property
    def held(self) -> list[ExpectationOutcome]:
        return [o for o in self.outcomes if not o.success and not o.blocking]

    @property
    def success(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        hour = self.hour.strftime("%Y-%m-%dT%H:00:00Z")
        passed = len(self.outcomes) - len(self.failed) - len(self.held)
        head = f"{self.stage} gate for hour {hour} (run {self.run_id}): {passed} of {len(self.outcomes)} " \
               "expectations passed"
        held = [f"  - {o.target}: {o.observed}" for o in self.held]
        if held:
            head += f"; {len(held)} table(s) held back (the others publish):\n" + "\n".join(held)
        if self.success:
            return head
        lines = [head + ("\nfailed:" if held else "; failed:")] + [f"  - {o.line()}" for o in self.failed]
        where = f"on branch {self.branch}" if self.branch else "in the tables"
        lines.append(f"Nothing was published: analysts' tables (main) are unchanged and the audited data "
                     f"stays {where} for inspection. Fix the data (or the threshold under gates: in the "
                     f"pipeline configuration) and re-run the hour; details in ops.gate_results and "
                     f"the Data Docs.")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------- suites

def load_suite(stage: str, folder: Path = SUITES_DIR) -> list[SuiteBatch]:
    """``expectations/<stage>.json`` split into its batches (in the order the suite lists them)."""
    if stage not in STAGES:
        raise ConfigError(f"unknown gate stage {stage!r}; choose one of {', '.join(STAGES)}")
    file = folder / f"{stage}.json"
    try:
        suite = json.loads(file.read_text())
    except FileNotFoundError:
        raise ConfigError(f"suite {file} not found; the gates need expectations/{stage}.json") from None
    batches: dict[str, dict[str, Any]] = (suite.get("meta") or {}).get("batches") or {}
    grouped: dict[str, list[dict[str, Any]]] = {name: [] for name in batches}
    for expectation in suite.get("expectations") or []:
        batch = (expectation.get("meta") or {}).get("batch")
        if batch not in grouped:
            raise ConfigError(f"{file}: expectation {expectation.get('type')} {expectation.get('kwargs')} "
                              f"needs meta.batch, one of {sorted(grouped)}")
        grouped[batch].append(expectation)
    return [SuiteBatch(stage, name, str(batches[name].get("description", "")),
                       tuple(batches[name].get("coordinates") or ()), tuple(grouped[name]))
            for name in batches if grouped[name]]


def suite_parameters(config: PipelineConfig) -> dict[str, Any]:
    """The suites' ``$PARAMETER`` values from the ``gates:`` section of the configuration."""
    gates = config.gates
    floor = dt.datetime.fromisoformat(str(gates.event_time_floor))
    return {
        "event_time_floor": floor.replace(tzinfo=None).isoformat(),
        "future_tolerance_minutes": float(gates.future_tolerance_minutes),
        "clock_skew_minutes": float(gates.clock_skew_minutes),
    }


# ---------------------------------------------------------------------------------------- context

class GateRunner:
    """A GX file context (``<project_root>/gx``) and the Spark session whose DataFrames it validates."""

    def __init__(self, spark: SparkSession, project_root: Path,
                 docs_index_limit: int = DOCS_INDEX_LIMIT, local_rows_max: int = LOCAL_ROWS_MAX) -> None:
        gx = import_gx()
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self.spark = spark
        self.gx = gx
        project_root.mkdir(parents=True, exist_ok=True)
        self.context = gx.get_context(mode="file", project_root_dir=str(project_root))
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self._limit_docs_index(docs_index_limit)
        # validate() persists each frame itself (offending rows read it again after GX).
        self.datasources = {
            "spark": self.context.data_sources.add_or_update_spark(name=DATASOURCE, persist=False),
            "pandas": self.context.data_sources.add_or_update_pandas(name=PANDAS_DATASOURCE)}
        self.local_rows_max = local_rows_max
        self._unrendered: list[Any] = []
        # Per suite batch, a checkpoint for each result format, saved once per runner: saving
        # writes the suite, validation definition and checkpoints to the GX folder.
        self._checkpoints: dict[tuple[str, str, str], dict[str, Any]] = {}

    def _limit_docs_index(self, limit: int) -> None:
        """Make every Data Docs site's index list only the newest ``limit`` validation results."""
        for name, site in self.context.list_data_docs_sites().items():
            index = dict(site.get("site_index_builder") or {"class_name": "DefaultSiteIndexBuilder"})
            if index.get("validation_results_limit") != limit:
                index["validation_results_limit"] = limit
                self.context.update_data_docs_site(name, {**site, "site_index_builder": index})

    def build_docs(self) -> None:
        """Render the Data Docs pages of the results validated since the last call, and the index."""
        if self._unrendered:
            self.context.build_data_docs(resource_identifiers=list(self._unrendered))
            self._unrendered.clear()

    def docs_index(self) -> Path:
        root = Path(self.context.root_directory)
        return root / "uncommitted" / "data_docs" / "local_site" / "index.html"

    def _checkpoint(self, suite: SuiteBatch, engine: str, result_format: Mapping[str, Any],
                    save: bool = False) -> Any:
        """The suite's checkpoint on ``engine`` for ``result_format`` (both formats validate one
        saved suite and validation definition: saving either again would make the other stale);
        saved on first use, or again with ``save``."""
        key = (suite.name, engine, json.dumps([suite.description, suite.coordinates, suite.expectations],
                                              sort_keys=True, default=str))
        if save or key not in self._checkpoints:
            definition = self._save_definition(suite, engine)
            self._checkpoints[key] = {
                json.dumps(f, sort_keys=True): self.context.checkpoints.add_or_update(self.gx.Checkpoint(
                    name=f"gate_{definition.name}{'_samples' if f == SAMPLES_FORMAT else ''}",
                    validation_definitions=[definition],
                    actions=[],  # Data Docs: build_docs(), once per gate
                    result_format=dict(f)))
                for f in (COUNTS_FORMAT, SAMPLES_FORMAT)}
        return self._checkpoints[key][json.dumps(result_format, sort_keys=True)]

    def _save_definition(self, suite: SuiteBatch, engine: str) -> Any:
        gx = self.gx
        datasource = self.datasources[engine]
        try:
            asset = datasource.get_asset(suite.name)
        except LookupError:
            asset = datasource.add_dataframe_asset(name=suite.name)
        try:
            batch_definition = asset.get_batch_definition("whole_frame")
        except (KeyError, LookupError, ValueError):
            batch_definition = asset.add_batch_definition_whole_dataframe("whole_frame")
        gx_suite = self.context.suites.add_or_update(gx.ExpectationSuite(
            name=suite.name, expectations=[dict(e) for e in suite.expectations],
            meta={"description": suite.description, "coordinates": list(suite.coordinates)}))
        name = suite.name if engine == "spark" else f"{suite.name}_{engine}"
        return self.context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=batch_definition, suite=gx_suite))

    def _local(self, suite: SuiteBatch, frame: DataFrame) -> Any:
        """The columns ``suite`` reads as a pandas frame, when ``frame`` is small; else None."""
        if self.local_rows_max <= 0:
            return None
        named = {c for e in suite.expectations for c in _columns(e.get("kwargs") or {})}
        columns = [c for c in frame.columns if c in named]
        rows = frame.select(*columns).limit(self.local_rows_max + 1).toPandas()
        return rows if len(rows) <= self.local_rows_max else None

    def validate(self, suite: SuiteBatch, frame: DataFrame, parameters: Mapping[str, Any],
                 run_name: str, target: str | None = None) -> list[ExpectationOutcome]:
        """Run ``suite`` on ``frame``; one outcome per expectation (offending rows for failures)."""
        from great_expectations.core.run_identifier import RunIdentifier
        from great_expectations.exceptions.resource_freshness import ResourceFreshnessAggregateError

        def run(engine: str, data: Any, result_format: Mapping[str, Any]) -> Any:
            def once(save: bool) -> Any:
                return self._checkpoint(suite, engine, result_format, save).run(
                    batch_parameters={"dataframe": data}, expectation_parameters=dict(parameters),
                    run_id=RunIdentifier(run_name=run_name, run_time=dt.datetime.now(dt.UTC)))
            try:
                return once(save=False)
            except ResourceFreshnessAggregateError:  # the suite was saved since, by another runner
                return once(save=True)

        frame = frame.persist(REUSED)
        try:
            local = self._local(suite, frame)
            if local is not None:
                result = run("pandas", local, SAMPLES_FORMAT)
            else:
                result = run("spark", frame, COUNTS_FORMAT)
            if not result.success and local is None:  # keep only the run with samples
                for key in result.run_results:
                    self.context.validation_results_store.remove_key(key)
                result = run("spark", frame, SAMPLES_FORMAT)
            self._unrendered.extend(result.run_results.keys())
            outcomes = []
            for validation in result.run_results.values():
                for r in validation.results:
                    outcome = _outcome(suite, target, r)
                    if not outcome.success:
                        offending = offending_rows(frame, outcome, suite.coordinates)
                        outcome = replace(outcome, offending=offending)
                    outcomes.append(outcome)
            return outcomes
        finally:
            frame.unpersist()


def _columns(kwargs: Mapping[str, Any]) -> list[str]:
    """The columns an expectation reads."""
    if kwargs.get("column"):
        return [str(kwargs["column"])]
    if kwargs.get("column_list"):
        return [str(c) for c in kwargs["column_list"]]
    if kwargs.get("column_A"):
        return [str(kwargs["column_A"]), str(kwargs["column_B"])]
    return []


def _column_of(kwargs: Mapping[str, Any]) -> str | None:
    return ",".join(_columns(kwargs)) or None


def _plain(value: Any) -> Any:
    """A GX result value as plain JSON-able Python, the same from either engine (pandas gives
    NaN or NaT for a null, numpy scalars for numbers)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ == "NaTType":
        return None
    if type(value).__name__ == "Timestamp":  # pandas: the datetime Spark would have given
        return value.to_pydatetime()
    return value


def _json(value: Any) -> str:
    return json.dumps(_plain(value), default=str)


def _outcome(suite: SuiteBatch, target: str | None, r: Any) -> ExpectationOutcome:
    config = r.expectation_config
    kwargs = {k: v for k, v in dict(config.kwargs).items() if k != "batch_id"}
    result = dict(r.result or {})
    info = r.exception_info or {}
    if info.get("raised_exception"):
        observed = f"error: {str(info.get('exception_message'))[:300]}"
    elif "observed_value" in result:
        observed = _json(result["observed_value"])
    elif "unexpected_count" in result:
        counts = _plain([result["unexpected_count"], result.get("element_count")])
        observed = (f"{counts[0]} unexpected of {counts[1]} rows "
                    f"(sample {_json((result.get('partial_unexpected_list') or [])[:5])})")
    else:
        observed = _json(result)[:300]
    sample = tuple(float(v) for v in _plain(result.get("partial_unexpected_list") or [])[:20]
                   if isinstance(v, int | float) and not isinstance(v, bool))
    return ExpectationOutcome(suite.name, target, config.type, _column_of(kwargs), kwargs,
                              bool(r.success), observed, sample=sample)


# -------------------------------------------------------------------------------- offending rows

def unexpected_rows(frame: DataFrame, expectation: str, kwargs: Mapping[str, Any]) -> DataFrame | None:
    """The rows ``expectation`` objects to (the expectation types the suites use), else None."""
    col = F.col(str(kwargs["column"])) if "column" in kwargs else None
    if expectation == "expect_column_values_to_not_be_null" and col is not None:
        return frame.where(col.isNull())
    if expectation == "expect_column_values_to_be_in_set" and col is not None:
        return frame.where(col.isNotNull() & ~col.isin(list(kwargs["value_set"])))
    if expectation == "expect_column_values_to_be_between" and col is not None:
        low, high = kwargs.get("min_value"), kwargs.get("max_value")
        outside = F.lit(False)
        if low is not None:
            outside = outside | (col < F.lit(low))
        if high is not None:
            outside = outside | (col > F.lit(high))
        return frame.where(col.isNotNull() & outside)
    if expectation in ("expect_column_values_to_be_unique", "expect_compound_columns_to_be_unique"):
        names = [str(kwargs["column"])] if col is not None else list(kwargs["column_list"])
        repeated = frame.groupBy(*names).count().where(F.col("count") > 1).drop("count")
        return frame.join(repeated, names, "left_semi")
    if expectation == "expect_column_pair_values_to_be_equal":
        a, b = F.col(str(kwargs["column_A"])), F.col(str(kwargs["column_B"]))
        return frame.where(~a.eqNullSafe(b))
    if expectation == "expect_column_pair_values_a_to_be_greater_than_b":
        a, b = F.col(str(kwargs["column_A"])), F.col(str(kwargs["column_B"]))
        return frame.where((a < b) if kwargs.get("or_equal") else (a <= b))
    return None


def offending_rows(frame: DataFrame, outcome: ExpectationOutcome, coordinates: Sequence[str],
                   limit: int = OFFENDING_ROWS) -> tuple[str, ...]:
    """Up to ``limit`` offending rows as ``topic/partition/offset`` (the batch's coordinate columns)."""
    columns = [c for c in coordinates if c in frame.columns]
    if not columns:
        return ()
    try:
        rows = unexpected_rows(frame, outcome.expectation, outcome.kwargs)
    except Exception:  # noqa: BLE001 - a missing column already failed the expectation itself
        return ()
    if rows is None:
        return ()
    picked = rows.select(*columns).orderBy(*columns).limit(limit).collect()
    return tuple("/".join("null" if v is None else str(v) for v in r) for r in picked)


# --------------------------------------------------------------------------------------- the gate

def _current_targets(spark: SparkSession, hour: dt.datetime, branch: str | None,
                     tables: Sequence[str] | None,
                     prefixes: dict[str, str] | None = None) -> list[tuple[str, str | None]]:
    """The current.* tables to validate, each with the branch to read (None: main): given ones;
    else those on the branch; else those the hour touched."""
    if tables:
        on_branch = set(tables_with_branch(spark, tables, branch)) if branch else set()
        return [(t, branch if t in on_branch else None) for t in tables]
    if branch:
        candidates = hour_candidates(spark, hour) or current_tables(spark)
        current = [t for t in candidates if t.startswith(f"{CURRENT_NAMESPACE}.")]
        return [(t, branch) for t in tables_with_branch(spark, current, branch)]
    existing = current_tables(spark)
    touched = (spark.table(CHANGELOG).where(F.col("landed_hour") == F.lit(hour).cast("timestamp"))
               .select("kafka_topic", "database", "schema_name", "table_name").distinct().collect())
    prefixes = prefixes or {}
    names = {current_table_name(prefixed_database(prefixes.get(r["kafka_topic"]), r["database"]),
                                r["table_name"], source_schema(r["database"], r["schema_name"]))
             for r in touched}
    names |= {tombstone_table_name(n) for n in names}
    return [(t, None) for t in existing if t in names]


def _frames(spark: SparkSession, config: PipelineConfig, stage: str, batch: str, hour: dt.datetime,
            branch: str | None, now: dt.datetime,
            targets: Sequence[tuple[str, str | None]]) -> list[tuple[str | None, DataFrame]]:
    if stage == "raw":
        frame = gate_frames.raw_messages(spark, hour) if batch == "messages" else \
            gate_frames.raw_partitions(spark, hour)
        return [(None, frame)]
    if stage == "changelog":
        if batch == "changes":
            return [(None, gate_frames.changelog_changes(spark, hour, branch))]
        rate_max = {t.name: t.quarantine_rate_max for t in config.topics
                    if t.quarantine_rate_max is not None}
        warning_max = {t.name: t.warning_rate_max for t in config.topics if t.warning_rate_max is not None}
        return [(None, gate_frames.changelog_topics(
            spark, hour, branch, rate_max, config.gates.quarantine_rate_max,
            warning_max, config.gates.warning_rate_max))]
    # Every table in one frame: one GX pass for the stage, whatever the number of tables.
    current = gate_frames.current_tables_rows(spark, targets, now, config.compaction_threads)
    return [] if current is None else [(None, current)]


def run_gate(spark: SparkSession, config: PipelineConfig, stage: str, hour: dt.datetime, run_id: str, *,
             branch: str | None = None, tables: Sequence[str] | None = None,
             suites_dir: Path = SUITES_DIR, runner: GateRunner | None = None) -> GateReport:
    """Validate ``stage`` of ``hour``, record results (``ops.gate_results``, Data Docs), raise on failure."""
    suites = load_suite(stage, suites_dir)
    ensure_tables(spark)
    runner = runner or gate_runner(spark, Path(config.home))
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    targets = (_current_targets(spark, hour, branch, tables, config.table_prefixes)
               if stage == "current" else [])
    if stage == "current" and not targets:
        log.warning("current gate for %s: no current.* table to validate", hour)
    parameters = suite_parameters(config)
    run_name = f"{stage} {hour.strftime('%Y-%m-%dT%H')} {run_id}"
    outcomes: list[ExpectationOutcome] = []
    try:
        for suite in suites:
            for target, frame in _frames(spark, config, stage, suite.batch, hour, branch, now, targets):
                name = f"{run_name} {target}" if target else run_name
                outcomes.extend(runner.validate(suite, frame, parameters, name, target))
    except BaseException:
        _render_after_error(runner, run_name)
        raise
    runner.build_docs()
    if stage == "current":
        outcomes.extend(history_outcomes(spark, targets))
        outcomes.extend(held_outcomes(spark, branch))
    report = GateReport(stage, hour, run_id, branch, tuple(outcomes))
    write_gate_results(spark, report, now)
    if not report.success:
        raise GateFailed(report.summary())
    log.info("%s", report.summary())
    return report


HELD_EXPECTATION = table_names.HELD_EXPECTATION
HISTORY_EXPECTATION = "history_current_versions_equal_current_table"


def history_outcomes(spark: SparkSession,
                     targets: Sequence[tuple[str, str | None]]) -> list[ExpectationOutcome]:
    """For each validated current table with an SCD2 history: its current versions equal the table."""
    histories = set(namespace_tables(spark, HISTORY_NAMESPACE))  # one listing, no table loads
    checked = [(t, b) for t, b in targets if history_table_name(t) in histories]
    branches = {b for _, b in checked if b}
    on_branch = {name for b in branches
                 for name in tables_with_branch(spark, [history_table_name(t) for t, _ in checked], b)}
    outcomes = []
    for table, branch in checked:
        name = history_table_name(table)
        current = spark.table(f"{table}.branch_{branch}" if branch else table)
        versions = spark.table(f"{name}.branch_{branch}" if name in on_branch else name)
        differing = history.current_mismatches(current, versions)
        outcomes.append(ExpectationOutcome("current.history", name, HISTORY_EXPECTATION, None, {},
                                           differing == 0, f"{differing} rows differ"))
    return outcomes


def held_outcomes(spark: SparkSession, branch: str | None) -> list[ExpectationOutcome]:
    """A failed, non-blocking outcome for each current table held back (see ``held_tables``)."""
    return [ExpectationOutcome("current.compaction", hold.table, HELD_EXPECTATION, None, {}, False,
                               hold.reason(), blocking=False)
            for hold in sorted(held_tables.read(spark, branch).values(), key=lambda h: h.table)]


def _render_after_error(runner: GateRunner, run_name: str) -> None:
    """Render what a broken gate validated; a rendering error is logged, never raised over the gate's."""
    try:
        runner.build_docs()
    except Exception:
        log.exception("gate %s: Data Docs not rendered (the gate's own error follows)", run_name)


_RUNNERS: dict[tuple[int, str], GateRunner] = {}


def gate_runner(spark: SparkSession, project_root: Path) -> GateRunner:
    """One GX context per session and state folder (building a context reads its whole folder)."""
    key = (id(spark), str(project_root))
    if key not in _RUNNERS:
        _RUNNERS[key] = GateRunner(spark, project_root)
    return _RUNNERS[key]


def write_gate_results(spark: SparkSession, report: GateReport, validated_at: dt.datetime) -> None:
    """Replace the stage's rows of the hour in ``ops.gate_results`` (one row per expectation)."""
    rows = [(report.stage, report.hour, report.run_id, o.suite, o.expectation, o.column, o.success,
             o.observed, json.dumps({"kwargs": o.kwargs, "table": o.target, "branch": report.branch,
                                     "offending_rows": list(o.offending), "held": not o.blocking},
                                    default=str, sort_keys=True),
             validated_at) for o in report.outcomes]
    frame = local_frame(spark, rows, spark.table(GATE_RESULTS).schema)
    replace_small(frame, GATE_RESULTS,
                  (F.col("landed_hour") == F.lit(report.hour).cast("timestamp"))
                  & (F.col("stage") == report.stage))

