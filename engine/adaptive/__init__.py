"""Adaptive inference as job policies run by the sweep pipeline.

    cascade.py         the online confidence cascade (stages escalate while confidence < tau)
    cascade_report.py  its report: online vs offline simulation vs fixed budget
    predictor.py       the hybrid-frame predictor: a model picks each item's frame count
    predictions.py     predictions store, answer parsing and the frame-count manifest
"""
