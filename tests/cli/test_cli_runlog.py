"""The run log (`OUT/logs/run-<time>.log`): the driver's records and the workers' forwarded lines, redacted."""

from __future__ import annotations

import logging
from pathlib import Path

from engine.cli.runlog import run_log
from engine.runtime import cluster
from engine.runtime.secrets import register_secret


def test_the_run_log_takes_driver_records_and_worker_lines_with_secrets_redacted(tmp_path: Path) -> None:
    secret = "sk-run-log-4242-secret"
    register_secret(secret)
    with run_log(tmp_path) as path:
        assert path is not None and path.parent == tmp_path / "logs" and path.name.startswith("run-")
        logging.getLogger("engine.sweep.scheduler").info("asked with key %s", secret)
        logging.getLogger("engine.cli").debug("below INFO: not kept")
        # a batch of an engine actor's output as Ray hands it to the driver (`log_to_driver`)
        cluster._log_worker_lines({"pid": 4321, "ip": "127.0.0.1", "actor_name": "VLLMWorker",
                                   "lines": ["INFO 01-01 [llm.py:1] loading", f"token={secret}"]})
        cluster._log_worker_lines({"pid": "autoscaler", "lines": ["======== Autoscaler status ========"]})
    logging.getLogger("engine.sweep.scheduler").info("after the run: not kept")
    text = path.read_text()
    assert "asked with key" in text and "(VLLMWorker pid=4321, ip=127.0.0.1) INFO 01-01 [llm.py:1] loading" in text
    assert secret not in text and text.count("token=") == 1
    assert "below INFO" not in text and "Autoscaler status" not in text and "after the run" not in text


def test_a_run_log_that_cannot_be_made_is_said_once(tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("a file where the folder would go")
    with run_log(tmp_path) as path:
        assert path is None


def test_a_run_log_opens_once_the_run_holds_out_with_the_records_of_its_start(tmp_path: Path) -> None:
    from engine.cli.runlog import RunLog

    with RunLog(tmp_path / "refused") as refused:
        logging.getLogger("engine.sweep.prepare").info("reading the items")
    assert refused.path is None and not (tmp_path / "refused").exists()  # never held: nothing written there
    with RunLog(tmp_path / "out") as run:
        logging.getLogger("engine.demo.tiny").info("building tiny qwen2_5_vl")
        assert not (tmp_path / "out").exists()
        path = run.hold()
        assert run.hold() == path  # once
        logging.getLogger("engine.sweep.scheduler").info("answering")
    logging.getLogger("engine.sweep.scheduler").info("after the run: not kept")
    assert path is not None and path.parent == tmp_path / "out" / "logs"
    lines = path.read_text().splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == ["building tiny qwen2_5_vl", "answering"]
