-- Credit: default risk by proportional hazards, on loans described by a few numbers.
--
-- Each loan is a row of covariates, [loan-to-value, interest rate, 1]; declared coefficients b
-- (not fitted here) turn a row into a hazard ratio exp(x · b) (Prelude.Sequences.hazardOf,
-- clamped so it is always finite), the chance of at least one default over a period whose
-- hazard is h is 1 − e^(−h), and a default costs what the loan exceeds of the recovery.

open Prelude.Sequences

-- defaultHazard(x, b) · x loans n×p, one row of covariates each · b coefficients vector p → vector n
fn defaultHazard(x, b) ↦ hazardOf(x, b)

-- defaultChance(h) · h hazards, any shape → same shape: 1 − e^(−h), the chance of at least one event
fn defaultChance(h) ↦ 1 − exp(0 − h)

-- lossGivenDefault(price, ltv, recovery) · price · ltv loan-to-value · recovery share of the price recovered → the loss, max(ltv − recovery, 0) · price
fn lossGivenDefault(price, ltv, recovery) ↦ price · max(ltv − recovery, 0)

-- expectedLoss(x, b, price, recovery) · x loans n×p whose first column is the loan-to-value · b vector p · price vector n · recovery scalar → vector n
-- The chance of default times the loss it brings, loan by loan.
fn expectedLoss(x, b, price, recovery) ↦ defaultChance(hazardOf(x, b)) · lossGivenDefault(price, einsum("np,p->n", x, positions(b, 0) = 0), recovery)
