#!/usr/bin/python3
"""fit_erf.py: the coefficients of the epilogue's erf (schedules/epilogue.c).

erf(x) = x * P(x^2) / Q(x^2) on |x| <= 4, P and Q of degree 5 (Q(0) = 1),
fitted for relative error by linearised least squares, reweighted by 1/Q
each round (Sanathanan-Koerner). Prints the coefficients and the error of
the float32 evaluation (Horner, x clamped to +-4) against math.erf in double.

usage: /usr/bin/python3 scripts/fit_erf.py   (numpy: Debian's python3-numpy)
"""
import math
import numpy as np

DEG_P, DEG_Q, CLAMP = 5, 5, 4.0


def fit(deg_p, deg_q, rounds=60, n=4000):
    x = CLAMP * (1 - np.cos(np.linspace(0, np.pi / 2, n)))   # dense near 0 and near the clamp
    x = x[x > 1e-6]
    t = x * x
    f = np.array([math.erf(v) / v for v in x])
    w = np.ones_like(t)
    for _ in range(rounds):
        a = np.zeros((len(t), deg_p + 1 + deg_q))
        for k in range(deg_p + 1):
            a[:, k] = t ** k
        for k in range(1, deg_q + 1):
            a[:, deg_p + k] = -f * t ** k
        rel = w / f
        sol = np.linalg.lstsq(a * rel[:, None], f * rel, rcond=None)[0]
        p, q = sol[:deg_p + 1], np.concatenate([[1.0], sol[deg_p + 1:]])
        w = 1.0 / np.abs(np.polyval(q[::-1], t))
    err = np.max(np.abs(np.polyval(p[::-1], t) / np.polyval(q[::-1], t) - f) / f)
    return p, q, err


def eval_f32(p, q, x):
    x = np.clip(np.float32(x), np.float32(-CLAMP), np.float32(CLAMP))
    t = (x * x).astype(np.float32)
    pp, qq = np.float32(p[-1]), np.float32(q[-1])
    for c in p[-2::-1]:
        pp = (pp * t + np.float32(c)).astype(np.float32)
    for c in q[-2::-1]:
        qq = (qq * t + np.float32(c)).astype(np.float32)
    return (x * pp / qq).astype(np.float32)


p, q, err = fit(DEG_P, DEG_Q)
xs = np.float32(np.concatenate([np.linspace(-6, 6, 400001), np.logspace(-30, 0.8, 40000), -np.logspace(-30, 0.8, 4000)]))
ref = np.array([math.erf(float(v)) for v in xs])
got = eval_f32(p, q, xs).astype(np.float64)
rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-38)
i = int(np.argmax(rel))
print("fit: relative error %.2e in exact arithmetic" % err)
print("float32: worst relative error %.2e at x = %.6g (%.1f ulps of 1)" % (rel[i], xs[i], rel[i] / 2 ** -23))
print("P", ", ".join("%.17g" % c for c in p))
print("Q", ", ".join("%.17g" % c for c in q))
