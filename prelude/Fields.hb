-- Fields
--
-- The classical model of an insurance fund's surplus (Lundberg 1903, Cramér 1930): the fund
-- starts with a reserve u, earns premium at the constant rate c, and pays claims that arrive as a
-- Poisson process of rate λ, their sizes independent and exponentially distributed with mean m.
-- Ruin is the surplus ever falling below 0; ψ(u) is its probability over an unending horizon.
--
--   safety loading   θ = c / (λ m) − 1, how far the premium exceeds the expected claims
--   adjustment       R = 1/m − λ/c, the positive root of λ (E[e^(R X)] − 1) = c R, which for
--                    exponential sizes E[e^(R X)] = 1 / (1 − R m) solves in closed form; the same R
--                    solves E[e^(R (S − c))] = 1 for S the claims of one unit of time
--   Lundberg         ψ(u) ≤ e^(−R u), for any claim sizes with an adjustment coefficient
--   exact, for exponential sizes   ψ(u) = e^(−R u) / (1 + θ)
--
-- So the smallest reserve with ψ(u) ≤ ε by Lundberg's bound is ln(1/ε) / R.
--
-- Conventions. Rates are per unit of time (a year, say) and amounts in one currency. Every
-- argument is a scalar or a tensor, entrywise, of one shape with the others. A premium at or
-- below the expected claims (θ ≤ 0) makes ruin certain: adjustment is then 0, lundberg and
-- ruinChance answer 1, and a reserve ln(1/ε) / R is infinite, a number that means "no reserve
-- is enough", so check safetyLoading first.

open Prelude.Arithmetic


-- The fund

-- safetyLoading(c, lam, m) · c premium rate · lam claim rate · m mean claim size → scalar
-- θ = c / (λ m) − 1: positive when the premium beats the expected claims λ m, 0 when it only matches them.
def safetyLoading(c, lam, m) ≔ c / (lam · m) − 1

-- adjustment(c, lam, m) · arguments as safetyLoading → scalar ≥ 0
-- The adjustment (Lundberg) coefficient for exponential claims, R = max(1/m − λ/c, 0): 0 when θ ≤ 0.
def adjustment(c, lam, m) ≔ max(1 / m − lam / c, 0)

-- lundberg(u, c, lam, m) · u reserve ≥ 0 · others as safetyLoading → scalar in (0, 1]
-- Lundberg's bound on the chance of ever being ruined, e^(−R u); 1 when θ ≤ 0.
def lundberg(u, c, lam, m) ≔ exp(0 − adjustment(c, lam, m) · u)

-- ruinChance(u, c, lam, m) · arguments as lundberg → scalar in (0, 1]
-- The exact chance of ever being ruined with exponential claims, e^(−R u) / (1 + θ) when θ > 0, and 1 when θ ≤ 0.
def ruinChance(u, c, lam, m) ≔ lundberg(u, c, lam, m) / (1 + relu(safetyLoading(c, lam, m)))

-- surplusAfter(u, c, t, s) · u reserve at the start · c premium rate · t time elapsed · s claims paid in that time → scalar
-- The surplus after time t, u + c t − s.
def surplusAfter(u, c, t, s) ≔ u + c · t − s
