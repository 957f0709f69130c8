"""The parts of compaction, one seam each: key events, folding, declared column types (DDL),
case folding of column names, schema evolution and the MERGE into current tables. The hour's
compaction that puts them together, and its design, is ``spark_jobs.compact``."""
