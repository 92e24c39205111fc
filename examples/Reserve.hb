-- Reserve: how much to hold back so a fund is unlikely ever to run dry.
--
-- A buyer puts aside a premium c a year against repairs and losses that arrive at rate λ with
-- mean size m: the classical risk model of Prelude.Fields. A simulation can only say the fund
-- has not run dry yet; Lundberg's bound answers for every year to come, and the reserve is sized
-- against it. That needs a positive safety loading: at or below the expected claims ruin is
-- certain, the adjustment coefficient is 0 and reserveFor answers infinity, which means that no
-- reserve is enough, so look at loadingOf first.

open Prelude.Fields

-- loadingOf(c, lam, m) · premium rate, claim rate, mean claim → scalar: θ = c / (λ m) − 1
fn loadingOf(c, lam, m) ↦ safetyLoading(c, lam, m)

-- adjustmentOf(c, lam, m) · as loadingOf → scalar ≥ 0: R = max(1/m − λ/c, 0)
fn adjustmentOf(c, lam, m) ↦ adjustment(c, lam, m)

-- ruinBound(u, c, lam, m) · u reserve · others as loadingOf → scalar: Lundberg's bound e^(−R u)
fn ruinBound(u, c, lam, m) ↦ lundberg(u, c, lam, m)

-- ruinExactly(u, c, lam, m) · as ruinBound → scalar: the exact chance of ruin for exponential claims
fn ruinExactly(u, c, lam, m) ↦ ruinChance(u, c, lam, m)

-- reserveFor(c, lam, m, eps) · as loadingOf · eps tolerated chance of ruin in (0, 1) → scalar
-- The smallest reserve whose Lundberg bound is at most ε, ln(1/ε) / R (infinite when θ ≤ 0).
fn reserveFor(c, lam, m, eps) ↦ ln(1 / eps) / adjustment(c, lam, m)

-- afterOneYear(u, c, s) · u reserve · c premium rate · s claims paid in the year → scalar
fn afterOneYear(u, c, s) ↦ surplusAfter(u, c, 1, s)
