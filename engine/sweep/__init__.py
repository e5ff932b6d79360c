"""The job pipeline: items x budgets x models -> decode once per video -> request -> generate -> score -> commit.

    preflight.py  what the spec alone cannot show (families, paths, decoders, keys, the out dir), before any work
    survey.py     what `framesweep inspect` shows: each dataset's items, media found / missing, jobs implied
    prepare.py    a run's start after the lock: items, committed keys (one pass), the resume check, the plan
    fingerprint.py  answer fingerprints: everything that shapes an answer, per (model, dataset, budget)
    resume.py     a rerun refuses committed keys answered another way (AnswerMismatchError, exit 2)
    record.py     what a run records in the manifest (expected jobs, fingerprints, its history entry)
    policy.py     JobPolicy and GridPolicy (every budget at once); adaptive policies live in engine.adaptive
    jobs.py       planning of pending jobs (resume, context ceilings) and of each job's frames (Job is in engine.items)
    engines.py    start the backends a spec names (vLLM actors, replica pools, HTTP clients)
    rows.py       the score step (Scoring: each dataset adapter's rule plugged in): a ResultRow or an error row
    decoding.py   the decode step: plans and one pass per video round, on decode actors or in the driver
    requests.py   the request step: job contexts and engine requests (frames by reference or as pixels)
    retry.py      the retries within a run: a round's jobs whose frames were lost, a batch whose engine died
    scheduler.py  Sweep: the pipeline itself; adaptive policies choose its jobs (engine.adaptive)
"""

from engine.sweep.engines import start_backends
from engine.sweep.jobs import plan_item, plan_jobs
from engine.sweep.scheduler import Sweep, SweepSummary

__all__ = ["Sweep", "SweepSummary", "plan_item", "plan_jobs", "start_backends"]
