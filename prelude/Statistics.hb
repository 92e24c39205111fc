-- Statistics
--
-- Sums, means and spreads of vectors, and of the rows and columns of matrices, each one a
-- contraction with einsum followed by a division.
--
-- Conventions. A sample is a vector x of n readings. A data matrix has one row per sample and
-- one column per variable. variance and std are the sample versions, dividing by n − 1, so
-- they need at least two readings; rowVar in Networks is the population version used by
-- layer normalisation. Means are plain averages: nothing here weighs or skips entries.


-- One sample

-- total(x) · x vector n → scalar
-- The sum of the entries, Σ_i x_i.
def total(x) ≔ einsum("i->", x)

-- count(x) · x vector n → scalar
-- The number of entries, n.
def count(x) ≔ rows(x)

-- mean(x) · x vector n → scalar
-- The average of the entries, (1/n) Σ_i x_i.
def mean(x) ≔ total(x) / count(x)

-- deviations(x) · x vector n → vector n
-- Each entry minus the mean, x_i − mean(x).
def deviations(x) ≔ x − mean(x)

-- variance(x) · x vector n, n ≥ 2 → scalar
-- The sample variance, Σ_i (x_i − mean(x))² / (n − 1).
def variance(x) ≔ total(deviations(x)²) / (count(x) − 1)

-- std(x) · x vector n, n ≥ 2 → scalar
-- The sample standard deviation, the square root of variance(x).
def std(x) ≔ sqrt(variance(x))

-- standardised(x) · x vector n, n ≥ 2 → vector n
-- Each entry's distance from the mean in sample standard deviations, (x_i − mean(x)) / std(x).
def standardised(x) ≔ deviations(x) / std(x)

-- covariance(x, y) · x vector n · y vector n, n ≥ 2 → scalar
-- The sample covariance, Σ_i (x_i − mean(x))(y_i − mean(y)) / (n − 1).
def covariance(x, y) ≔ einsum("i,i->", deviations(x), deviations(y)) / (count(x) − 1)

-- correlation(x, y) · x vector n · y vector n, n ≥ 2 → scalar in [−1, 1]
-- Pearson's correlation, covariance(x, y) / (std(x) · std(y)).
def correlation(x, y) ≔ covariance(x, y) / (std(x) · std(y))


-- Rows and columns of a matrix

-- grandTotal(a) · a matrix n×p → scalar
-- The sum of every entry, Σ_ij a_ij.
def grandTotal(a) ≔ einsum("ij->", a)

-- rowTotal(a) · a matrix n×p → vector n
-- The sum of each row, Σ_j a_ij.
def rowTotal(a) ≔ einsum("ij->i", a)

-- rowMean(a) · a matrix n×p → vector n
-- The mean of each row, (1/p) Σ_j a_ij.
def rowMean(a) ≔ rowTotal(a) / columns(a)

-- columnTotal(a) · a matrix n×p → vector p
-- The sum of each column, Σ_i a_ij.
def columnTotal(a) ≔ einsum("ij->j", a)

-- columnMean(a) · a matrix n×p → vector p
-- The mean of each column, (1/n) Σ_i a_ij: the mean sample.
def columnMean(a) ≔ columnTotal(a) / rows(a)

-- columnCentred(a) · a data n×p → n×p
-- Each column minus its own mean, so every variable has mean zero.
def columnCentred(a) ≔ a − einsum("ij,j->ij", a ^ 0, columnMean(a))

-- columnVariance(a) · a data n×p, n ≥ 2 → vector p
-- The sample variance of each column, Σ_i (a_ij − columnMean(a)_j)² / (n − 1).
def columnVariance(a) ≔ columnTotal(columnCentred(a)²) / (rows(a) − 1)

-- covarianceMatrix(a) · a data n×p, n ≥ 2 → p×p
-- The sample covariance of every pair of columns, Cᵀ C / (n − 1) with C = columnCentred(a).
def covarianceMatrix(a) ≔ einsum("ij,ik->jk", columnCentred(a), columnCentred(a)) / (rows(a) − 1)
