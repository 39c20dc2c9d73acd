#!/usr/bin/env python3
"""poisson_rdp_ref.py -- independent high-precision values of the Poisson-subsampled RDP
bound of docs/MATH.md 18.1 for the discrete Gaussian's curve eps(l) = l / (2 sigma^2):

  A = sum_{l=0}^{a} C(a,l) (1-q)^(a-l) q^l m_l,   m_0 = m_1 = 1, m_l = exp((l-1) eps(l))
  B = 1 + C(a,2) q^2 (1-q)^-1 (exp(eps(2)) - 1)
        + sum_{l=3}^{a} C(a,l) q^l (1-q)^(1-l) (m_l + 1)
  C = (1-q) + q m_a                        (joint convexity, both directions)
  eps'(a) = log(max(A, min(B, C))) / (a - 1)

and the discrete Gaussian's own bound (MATH.md 18.1 (d)): B with E|rho - 1|^l bounded by
the smallest of m_l + 1, E(rho-1)^2 + E[(rho-1)^2 rho^(l-2)], and (l <= 32) the central
moment G_l(x) = sum_j C(l,j) (-1)^j exp(j(j-1)x/2) (even l) or sqrt(G_(l-1) G_(l+1)) (odd
l), x = 1/sigma^2;

in mpmath at 60 digits (exact binomials, no log-space tricks), printed as C initialisers
for tests/accounting/test_acct_sdgauss.c ({q, sigma, alpha, generic bound, the discrete
Gaussian's}). Run: python3 tests/tools/poisson_rdp_ref.py
"""
import mpmath as mp

mp.mp.dps = 60

CASES = [(q, s, a)
         for q in ("0.001", "0.0042", "0.05", "0.3", "0.9")
         for s in ("0.6", "1.1", "4")
         for a in (2, 3, 7, 32, 256)]


def G(k, x):
    return mp.fsum(mp.binomial(k, j) * (-1) ** j * mp.exp(j * (j - 1) * x / 2)
                   for j in range(k + 1))


def abs_moment(l, x):
    """the smallest bound on E|rho - 1|^l of MATH.md 18.1 (b) and (d)"""
    m = mp.exp((l - 1) * l * x / 2)
    if l == 2:
        return mp.expm1(x)
    second = mp.exp(l * (l - 1) * x / 2) - 2 * mp.exp((l - 1) * (l - 2) * x / 2) \
        + mp.exp((l - 2) * (l - 3) * x / 2)
    c = min(m + 1, mp.expm1(x) + second)
    if l <= 32:
        c = min(c, G(l, x) if l % 2 == 0 else mp.sqrt(G(l - 1, x) * G(l + 1, x)))
    return c


def bound(q, s, a, own=False):
    q, s = mp.mpf(q), mp.mpf(s)
    eps = lambda l: mp.mpf(l) / (2 * s * s)
    m = lambda l: mp.mpf(1) if l < 2 else mp.exp((l - 1) * eps(l))
    A = mp.fsum(mp.binomial(a, l) * (1 - q) ** (a - l) * q ** l * m(l) for l in range(a + 1))
    B = 1 + mp.binomial(a, 2) * q ** 2 / (1 - q) * mp.expm1(eps(2))
    B += mp.fsum(mp.binomial(a, l) * q ** l * (1 - q) ** (1 - l) * (m(l) + 1)
                 for l in range(3, a + 1))
    if own:
        B = 1 + mp.fsum(mp.binomial(a, l) * q ** l * (1 - q) ** (1 - l) * abs_moment(l, 1 / s ** 2)
                        for l in range(2, a + 1))
    C = (1 - q) + q * m(a)
    return mp.log(max(A, min(B, C))) / (a - 1)


if __name__ == "__main__":
    for q, s, a in CASES:
        g, o = (mp.nstr(bound(q, s, a, own), 20, min_fixed=-3, max_fixed=3) for own in (0, 1))
        print("    {%s, %s, %d, %s, %s}," % (q, s, a, g, o))
