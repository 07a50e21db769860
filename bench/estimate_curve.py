#!/usr/bin/python3
"""The estimated conv2d time of a model over the course of a tuning run,
from the records' timestamps: the sum over tasks of occurrences x the best
median so far, once every task has a measurement. Prints the wall-clock
seconds (from the run's first record) at which the estimate came within 10,
5 and 2 % of REFERENCE_MS, and the estimate at the end.

usage: bench/estimate_curve.py DB MODEL REFERENCE_MS   (TEMPER=build/temper)
"""
import os
import sqlite3
import subprocess
import sys
from datetime import datetime


def main():
    db, model, ref_ms = sys.argv[1], sys.argv[2], float(sys.argv[3])
    temper = os.environ.get("TEMPER", "build/temper")
    counts = {}
    for line in subprocess.run([temper, "space", model], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[1].startswith("conv2d_"):
            counts[parts[1]] = int(parts[3])
    # records of the last tune run, in time order; imported records (no run) count as known from the start
    con = sqlite3.connect(db)
    run = con.execute("SELECT max(run_id) FROM records").fetchone()[0]
    rows = con.execute(
        "SELECT w.key, r.median_s, r.measured_at, r.run_id IS NOT ? FROM records r JOIN workloads w ON w.id = r.workload_id"
        " WHERE r.status = 'ok' AND r.remeasure = 0 AND (r.run_id = ? OR r.run_id IS NULL)"
        " ORDER BY r.run_id IS NOT NULL, r.measured_at", (run, run)).fetchall()
    best, t0 = {}, None
    reached = {0.10: None, 0.05: None, 0.02: None}
    est = None
    for key, med, at, prior in rows:
        t = datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ" if "." in at else "%Y-%m-%dT%H:%M:%SZ")
        if key not in counts:
            continue
        if not prior:
            t0 = t0 or t
        else:
            t = None
        best[key] = min(best.get(key, med), med)
        if len(best) == len(counts):
            est = sum(counts[k] * best[k] for k in counts) * 1e3
            for tol in reached:
                if reached[tol] is None and est <= (1 + tol) * ref_ms:
                    reached[tol] = (t - t0).total_seconds() if t is not None else 0.0
    print("records %d, tasks %d/%d, estimate at the end %s ms; within 10 / 5 / 2 %% of %.2f ms after %s s" % (
        len(rows), len(best), len(counts), "%.2f" % est if est else "-", ref_ms,
        " / ".join("%.0f" % reached[t] if reached[t] is not None else "never" for t in (0.10, 0.05, 0.02))))


if __name__ == "__main__":
    main()
