-- Line: a straight line through points, fitted two ways.
--
-- Least squares answers in one call: the normal equations of Prelude.Multivariate, with the
-- intercept as the coefficient of a column of ones. The model LineLearner walks to the same
-- line by gradient descent, one ∂ per step, so a caller can watch the error fall: from a
-- standing start at rate 0.1, on positions spread over [0, 1], it agrees with the least-squares
-- line to about 1e-6 within a thousand steps.

open Prelude.Multivariate
open Prelude.Statistics

-- lineOf(x, y) · x positions vector n · y readings vector n → (slope, intercept) as a vector 2
-- The least-squares line through the points (x_i, y_i).
fn lineOf(x, y) ↦ coefficients(designOf(x), y)

-- predictedAt(x, y, z) · x positions vector n · y readings vector n · z new positions vector m → vector m
-- The fitted line read at new positions.
fn predictedAt(x, y, z) ↦ apply(designOf(z), lineOf(x, y))

-- spreadOf(x, y) · x positions vector n · y readings vector n, n ≥ 3 → scalar
-- How far the points scatter about the line: the sample standard deviation of the residuals.
fn spreadOf(x, y) ↦ std(residuals(designOf(x), y))

-- explainedBy(x, y) · x positions vector n · y readings vector n → scalar in [0, 1]
-- The share of the readings' variance the line explains, R².
fn explainedBy(x, y) ↦ rSquared(designOf(x), y)

-- designOf(x) · x positions vector n → n×2
-- The design of a line: the positions as one column and a column of ones beside them.
def designOf(x) ≔ withIntercept(einsum("n,j->nj", x, positions(x, 0)[0 : 1] ^ 0))

-- LineLearner(inputs) · inputs columns of the design (2 for a line: positions and ones)
-- A linear model whose coefficients start at 0 and learn by gradient descent on the mean squared error.
model LineLearner(inputs) : Learner {
  weight b : Tensor[inputs] from 0

  -- train(x, y, rate) · x design n×inputs · y readings vector n · rate step size scalar
  -- One gradient step on the mean squared error.
  def train(x, y, rate) {
    b ≔ b − rate · ∂ loss(x, y) / ∂ b
  }

  -- eval(x) · x design n×inputs → predictions vector n
  def eval(x) ≔ apply(x, b)

  -- loss(x, y) · x design n×inputs · y readings vector n → scalar
  -- The mean squared error, (1/n) Σ (x b − y)².
  def loss(x, y) ≔ einsum("n->", (apply(x, b) − y)²) / rows(x)
}
