"""pyiceberg's view of the ``lakehouse`` catalog: the same SQL catalog Spark writes, no JVM."""

from __future__ import annotations

import os

from pyiceberg.catalog.sql import SqlCatalog

from cdclake.config import PipelineConfig


def s3_properties(env: dict[str, str] | None = None) -> dict[str, str]:
    """pyiceberg's S3 settings from the AWS environment (compose, ``cdclake cluster``): an S3 API
    on another endpoint (MinIO, moto) answers no region lookup, so the region is given too."""
    env = dict(os.environ if env is None else env)
    out = {}
    if env.get("AWS_ENDPOINT_URL"):
        out["s3.endpoint"] = env["AWS_ENDPOINT_URL"]
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        out["s3.region"] = region
    return out


def open_catalog(config: PipelineConfig) -> SqlCatalog:
    """The Iceberg SQL catalog shared with Spark (``spark_jobs.session``)."""
    extra = s3_properties() if config.warehouse.startswith(("s3://", "s3a://", "s3n://")) else {}
    return SqlCatalog(config.catalog_name, uri=config.catalog_uri, warehouse=config.warehouse, **extra)
