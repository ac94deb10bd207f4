"""The capture and fuzz-campaign pipeline (DESIGN.md "Data pipeline on Spark"): plain Python
per-flow analysis (``flows``) that Spark jobs (``spark_job``) run in parallel."""
