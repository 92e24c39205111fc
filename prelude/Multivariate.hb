-- Multivariate
--
-- Ordinary least squares: the linear model y ≈ x b whose coefficients b minimise the squared
-- residuals ‖y − x b‖², found from the normal equations xᵀx b = xᵀy, and what a fit answers
-- (fitted values, residuals, the share of the variance explained).
--
-- Conventions. A design x is n×p, one row per observation and one column per variable; targets
-- y are a vector n; coefficients b are a vector p, one per column of x, in the order of the
-- columns. There is no separate intercept: the intercept is the coefficient of a column of ones
-- in the design (put it last, as in [quality, area, age, 1]), and withIntercept(x) appends one.
-- The columns must be independent (x of full column rank, n ≥ p), or the coefficients are not
-- unique and the answer is one of the many that fit equally well. apply takes the design first
-- and the coefficients second, as x b is written.
--
-- The solve. coefficients is conjugate gradient (LinearAlgebra.solve: at most 10p steps, down
-- to a relative residual of 1e-14) on the normal equations. These square the condition number of
-- x, and columns on very different scales (square feet beside a column of ones) make that large,
-- so every column of x is first scaled to unit length and the answer scaled back (Jacobi
-- preconditioning: the same b in exact arithmetic); a column of zeros keeps its scale of 1 and
-- gets the coefficient 0. What scaling cannot cure is columns that are nearly dependent: for a
-- scaled design of condition number κ expect about κ² · 1e-16 relative error (1e-8 at κ = 1e4),
-- where an orthogonal method (QR) would lose κ · 1e-16.
--
-- gram is LinearAlgebra's, re-exported under the name the samples use: a file that opens both
-- modules writes LinearAlgebra.gram or Multivariate.gram (the bare name is ambiguous, E202).

open Prelude.LinearAlgebra


-- The fit

-- coefficients(x, y) · x design n×p · y targets vector n → coefficients vector p
-- The least-squares coefficients, the solution of xᵀx b = xᵀy, solved with every column of x scaled to unit length.
def coefficients(x, y) ≔ columnScales(x) · solve(gram(scaledColumns(x)), moment(scaledColumns(x), y))

-- gram(x) · x design n×p → p×p
-- The Gram matrix xᵀx, the left-hand side of the normal equations (LinearAlgebra.gram).
def gram(x) ≔ LinearAlgebra.gram(x)

-- moment(x, y) · x design n×p · y targets vector n → vector p
-- The right-hand side of the normal equations, xᵀy: each column's inner product with the targets.
-- Instead: for targets with several columns (n×q), fit each column on its own, coefficients(x, y_j) for every j.
def moment(x, y) ≔ einsum("np,n->p", x, y)

-- withIntercept(x) · x design n×p → design n×(p+1)
-- The design with a column of ones appended last, so the last coefficient of a fit is the intercept.
def withIntercept(x) ≔ concat(x, onesColumn(x), 1)

-- Building blocks

-- columnScales(x) · x design n×p → vector p
-- One over each column's Euclidean length, 1/‖x_j‖, and 1 for a column of zeros.
def columnScales(x) ≔ 1 / sqrt(einsum("np->p", x²) + (einsum("np->p", x²) = 0))

-- scaledColumns(x) · x design n×p → n×p
-- Every column divided by its length, x_ij / ‖x_j‖, so each has length 1 (a column of zeros stays zero).
def scaledColumns(x) ≔ einsum("np,p->np", x, columnScales(x))

-- onesColumn(x) · x design n×p (only its shape is read) → n×1
-- A column of n ones.
def onesColumn(x) ≔ einsum("n,j->nj", positions(x, 0) ^ 0, positions(x, 1)[0 : 1] ^ 0)


-- What the fit answers

-- apply(x, b) · x design n×p · b coefficients vector p → predictions vector n
-- The linear model's predictions, x b: each row's inner product with the coefficients.
def apply(x, b) ≔ einsum("np,p->n", x, b)

-- fitted(x, y) · x design n×p · y targets vector n → fitted values vector n
-- The least-squares fit's predictions at its own rows, x b with b = coefficients(x, y).
def fitted(x, y) ≔ apply(x, coefficients(x, y))

-- residuals(x, y) · x design n×p · y targets vector n → residuals vector n
-- What the fit leaves over, y − x b; with an intercept column they sum to zero.
def residuals(x, y) ≔ y − fitted(x, y)

-- rSquared(x, y) · x design n×p with a column of ones · y targets vector n, not all equal → scalar
-- The share of the targets' variance the fit explains, 1 − Σ residual² / Σ (y_i − mean y)²; it needs the intercept column to lie in [0, 1].
def rSquared(x, y) ≔ 1 − einsum("n->", residuals(x, y)²) / einsum("n->", (y − einsum("n->", y) / rows(y))²)
