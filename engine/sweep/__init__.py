"""The job pipeline: items x budgets x models -> decode once per video -> request -> generate -> score -> commit.

    jobs.py       Job, planning of pending jobs (resume, context ceilings) and of each job's frames
    engines.py    start the backends a spec names (vLLM actors, replica pools, HTTP clients)
    rows.py       a finished job as a ResultRow (scored by its dataset adapter) or an error row
    scheduler.py  Sweep: the pipeline itself; adaptive policies choose its jobs (engine.adaptive)
"""

from engine.sweep.engines import start_backends
from engine.sweep.jobs import plan_item, plan_jobs
from engine.sweep.scheduler import Sweep, SweepSummary

__all__ = ["Sweep", "SweepSummary", "plan_item", "plan_jobs", "start_backends"]
