"""The capture pipeline, local and on Spark, whole and on broken inputs."""
