"""pyiceberg's view of the ``lakehouse`` catalog: the same SQL catalog Spark writes, no JVM."""

from __future__ import annotations

from pyiceberg.catalog.sql import SqlCatalog

from cdclake.config import PipelineConfig


def open_catalog(config: PipelineConfig) -> SqlCatalog:
    """The Iceberg SQL catalog shared with Spark (``spark_jobs.session``)."""
    return SqlCatalog(config.catalog_name, uri=config.catalog_uri, warehouse=config.warehouse)
