"""Schedules over a node-weighted DAG: critical path, serial time, work/span parallelism."""

from dfx.schedule.dag import CriticalPath, Parallelism, critical_path, parallelism, serial_time

__all__ = ["CriticalPath", "Parallelism", "critical_path", "parallelism", "serial_time"]
